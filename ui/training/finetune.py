"""The Training page's fine-tune set-up: a model of this server to start from, full fine-tuning or
LoRA (rank and matrices), the new text, and the steps; the trainable count before Start.

    settings, text, problems = finetune.draw_form(data_widget)

Every choice is in the URL ("t_base", "t_ft", "t_rank", "t_lora_<matrix>", "t_ft_steps",
"t_ft_lr", "t_seed"); the text widgets are the page's own (`data_widget`,
ui/training/setup/data.py's draw_data). What would make Start fail is said where it arises
(viz_model/training/finetune.py's own messages).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from serving import models
from ui import cache, state
from viz_model.bundles.checkpoint import read_config
from viz_model.bundles.files import CheckpointError
from viz_model.model.lora import DEFAULT_TARGETS, MAX_RANK, TARGET_LABELS, TARGETS
from viz_model.training.finetune import FINETUNE_TRAINING, LORA_TRAINING, trainable_count
from viz_model.training.settings import RunSettings

METHODS = {
    "lora": "LoRA: a small low-rank update",
    "full": "Full fine-tuning: every weight",
}
DEFAULT_BASE = "shakespeare-tiny"  # trains in seconds
DEFAULT_RANK = 8


@cache.per_model(keep=64)
def _counts(path: str, rank: int, targets: tuple[str, ...]) -> tuple[int, int]:
    return trainable_count(Path(path), rank, targets)


def _bases() -> dict[str, Path]:
    """The models of this server that can be fine-tuned: our bundles (with a training text)."""
    out = {}
    for name, path in models.discover().items():
        try:
            read_config(path)
        except (CheckpointError, OSError):
            continue
        out[name] = path
    return out


def trainable_text(trainable: int, total: int, rank: int, targets: tuple[str, ...]) -> str:
    """'LoRA r = 8 on qkv, out: 6,144 trainable numbers (A and B) beside the model's 118,144
    frozen weights (5.2% as many)', or full's 'every one of the 118,144 weights trains'."""
    if not rank:
        return f"Full fine-tuning: every one of the model's {total:,} weights trains."
    return (
        f"LoRA r = {rank} on {', '.join(targets)}: {trainable:,} trainable numbers (A and B) "
        f"beside the model's {total:,} frozen weights ({trainable / total:.1%} as many); "
        "they merge into those weights when the model is saved."
    )


def draw_form(data_widget) -> tuple[RunSettings | None, str | None, list[str]]:
    """(settings or None, the user's text or None, what is wrong)."""
    bases = _bases()
    if not bases:
        st.info("No model on this server can be fine-tuned yet.")
        return None, None, ["no model to fine-tune"]
    names = list(bases)
    left, right = st.columns(2)
    with left:
        st.markdown("**Start from**")
        base = state.selectbox(
            "Model to fine-tune",
            "t_base",
            names,
            DEFAULT_BASE if DEFAULT_BASE in names else names[0],
            help="A bundled model or a run of this server. Its tokenizer and shape are kept; "
            "every evaluation also measures its loss on its own old text (forgetting).",
        )
        method = state.radio("Train", "t_ft", list(METHODS), "lora", format_func=METHODS.get)
        rank, targets, lora_problem = _lora() if method == "lora" else (0, (), None)
    with right:
        source, text, data_problem = data_widget()
    train = _ft_training(method)
    problems = [p for p in (lora_problem, data_problem) if p]
    settings = None
    if not problems:
        try:
            settings = RunSettings(
                **source,
                base=str(bases[base]),
                lora_rank=rank,
                lora_targets=targets or DEFAULT_TARGETS,
                train=train,
            )
            trainable, total = _counts(str(bases[base]), rank, tuple(targets))
            st.info(trainable_text(trainable, total, rank, tuple(targets)))
        except ValueError as exc:
            problems.append(str(exc))
            st.error(str(exc))
            settings = None
    return settings, text, problems


def _lora() -> tuple[int, tuple[str, ...], str | None]:
    """LoRA's rank and matrices (each a checkbox, so each is in the URL)."""
    rank = state.number_input(
        "Rank r",
        "t_rank",
        1,
        MAX_RANK,
        DEFAULT_RANK,
        help="The update to each chosen matrix W is (alpha / r) B A, with A r × in and B out × r "
        "(B starts at zero, so training starts from the model exactly): a rank-r matrix with "
        "r × (in + out) numbers instead of in × out. Here alpha = r.",
    )
    st.caption(
        "On these matrices of every block; everything else stays frozen (their biases, the "
        "LayerNorms and the embeddings too):"
    )
    targets = tuple(
        t
        for t in TARGETS
        if state.checkbox(f"{t}: {TARGET_LABELS[t]}", f"t_lora_{t}", t in DEFAULT_TARGETS)
    )
    if not targets:
        message = "Choose at least one matrix for LoRA to adapt."
        st.warning(message)
        return rank, targets, message
    return rank, targets, None


def _ft_training(method: str) -> dict[str, Any]:
    """Steps, learning rate and seed; the rest of training/finetune.py's FINETUNE_TRAINING."""
    a, b, c = st.columns(3)
    steps = state.number_input(
        "Steps", "t_ft_steps", 1, 100_000, FINETUNE_TRAINING["max_steps"], step=50, container=a
    )
    default_lr = {**FINETUNE_TRAINING, **(LORA_TRAINING if method == "lora" else {})}["lr"]
    lr = state.number_input(
        "Learning rate",
        f"t_ft_lr_{method}",
        1e-5,
        1.0,
        float(default_lr),
        step=5e-4,
        format="%g",
        container=b,
        help="LoRA's few weights start at zero and take a larger rate than full fine-tuning.",
    )
    seed = state.number_input("Seed", "t_seed", 0, 2**31 - 1, 0, container=c)
    st.caption(
        f"The model's own batch size, no weight decay (it would pull the weights toward zero, "
        f"not toward the model you start from), an evaluation every "
        f"{FINETUNE_TRAINING['eval_every']} steps on the new text and on the old."
    )
    return {"max_steps": steps, "lr": lr, "seed": seed}
