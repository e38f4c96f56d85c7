"""The Training page's "What fine-tuning did", for a model that is a fine-tune (meta["finetune"]):
what trained, the loss on the old and new text (forgetting), samples before and after on the
same prompt and seed, and the singular values of what changed, beside the other kind of
fine-tune of the same base on the same text when this server has one.

    finetune_view.draw(bundle, final_id)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from pathlib import Path

import streamlit as st

from serving import models
from ui import cache, present, state
from ui.charts import finetune as charts
from viz_model.analysis.claims import md_escape
from viz_model.analysis.labs import finetune as ft
from viz_model.bundles.checkpoint import read_config
from viz_model.bundles.files import CheckpointError

DEFAULT_RANK = 8  # the rank a full fine-tune's change is compared with when no LoRA run says

PASTED = "text.txt"  # serving/jobs.py keeps a run's pasted or uploaded text under this name


def _text_label(source: dict | None) -> str:
    """'Shakespeare', 'the repeat task' or 'notes.txt' from a meta["data"]."""
    if not source:
        return "unknown"
    if "corpus" in source:
        return str(source["corpus"]).capitalize()
    if "task" in source:
        return f"the {source['task']} task"
    path = Path(str(source.get("text_file", "")))
    if path.name == PASTED:  # a job's copy of pasted or uploaded text: its name says nothing
        try:
            return f"your text ({len(path.read_text(encoding='utf-8')):,} characters)"
        except (OSError, UnicodeDecodeError):
            return "your text"
    return path.name


def text_key(source: dict | None) -> dict | None:
    """meta["data"] with its text file replaced by the sha256 of the text: each job keeps its own
    copy of pasted text, so two runs on the same text have different paths but the same hash (a
    file that cannot be read keeps its path)."""
    if not source or "text_file" not in source:
        return source
    key = dict(source)
    with contextlib.suppress(OSError):
        key["text_file"] = hashlib.sha256(Path(str(source["text_file"])).read_bytes()).hexdigest()
    return key


@cache.per_model(keep=8)
def _spectra(folder: str, info_json: str) -> dict[str, list[float]]:
    return ft.change_spectra(Path(folder), json.loads(info_json), models.discover())


def _sibling(folder: Path, info: dict, data: dict | None) -> tuple[Path, dict] | None:
    """Another fine-tune of the same base on the same text, of the other kind (newest first)."""
    found = []
    for path in models.discover().values():
        if path.resolve() == folder.resolve():
            continue
        try:
            _, raw = read_config(path)
        except (CheckpointError, OSError):
            continue
        meta = raw.get("meta") or {}
        other = meta.get("finetune")
        if (
            other
            and other.get("base_name") == info.get("base_name")
            and other.get("mode") != info.get("mode")
            and text_key(meta.get("data")) == text_key(data)
        ):
            found.append((path.stat().st_mtime, path, other))
    return max(found, key=lambda f: f[0])[1:] if found else None


def draw(bundle, final_id: str) -> None:
    info = bundle.meta.get("finetune")
    if not info:
        return
    folder = models.path_of(final_id)
    st.subheader("What fine-tuning did")
    what = (
        f"LoRA with r = {info['rank']} on {', '.join(info['targets'])} (alpha = {info['alpha']:g})"
        if info["mode"] == "lora"
        else "full fine-tuning (every weight)"
    )
    st.markdown(
        f"Started from **{md_escape(info['base_name'])}** and trained on "
        f"{md_escape(_text_label(bundle.meta.get('data')))} with {what}: "
        + (
            f"**{info['trainable']:,}** numbers trained (A and B) beside the model's "
            f"{info['total']:,} frozen weights ({info['trainable'] / info['total']:.1%} as many), "
            "merged into them when saved."
            if info["mode"] == "lora"
            else f"all **{info['total']:,}** weights trained."
        )
    )
    if info.get("unknown_characters"):
        st.caption(
            f"{info['unknown_characters']:,} characters of the new text were not in the base's "
            "vocabulary and were read as <unk>."
        )
    blind = math.log(bundle.tokenizer.vocab_size)  # a blind guess's loss, ln V
    _losses(bundle.history, info, bundle.meta.get("data"), key="hist", blind=blind)
    _samples(bundle.history, info.get("before") or {})
    _changes(folder, info, bundle.meta.get("data"))


def draw_live(history: list[dict], meta: dict) -> None:
    """A running fine-tune's losses on the old and new text (the live panel, under its curve)."""
    if meta.get("finetune"):
        st.markdown("**Forgetting**: the loss on the model's old text beside the new")
        _losses(history, meta["finetune"], meta.get("data"), key="live")


def _losses(
    history: list[dict], info: dict, data: dict | None, key: str, blind: float | None = None
) -> None:
    before = info.get("before") or {}
    old_label = f"old text ({_text_label(info.get('old_data'))})"
    new_label = f"new text ({_text_label(data)})"
    evals = [r for r in history if r.get("val_loss") is not None]
    if not evals:
        st.info("No evaluation yet: the losses appear after the first one.")
        return
    present.plot(
        cache.figure(charts.forgetting_figure, history, before, old_label, new_label),
        key=f"ft_losses_{key}",
    )
    n = int(before.get("eval_batches", 0))
    last = evals[-1]
    for key, label in (("old_val_loss", old_label), ("val_loss", new_label)):
        sd_key = "old_val_sd" if key == "old_val_loss" else "val_sd"
        if before.get(key) is None or last.get(key) is None or before.get(sd_key) is None:
            continue
        claim = ft.loss_change_claim(
            md_escape(label), before[key], last[key], before[sd_key], n, blind
        )
        st.markdown(claim.text)
    if before.get("old_val_loss") is None:
        st.caption("The base's own text is not known, so forgetting was not measured.")
    st.caption(measured_on(n))


def measured_on(n: int) -> str:
    """What each loss of the forgetting view is a mean of: `n` batches of windows (the fine-tune's
    eval_batches; training/finetune.py measures the base's spread across batches, not windows)."""
    return (
        f"Each loss is the mean over the same {n} batches of held-out windows at every "
        "evaluation; noise is twice the standard error of a difference of two such means, from "
        "the spread of the base's losses across those batches."
    )


def _samples(history: list[dict], before: dict) -> None:
    after = next((r for r in reversed(history) if r.get("sample")), None)
    if not before.get("sample") or after is None:
        return
    st.markdown("**Samples before and after**, from the same start (a newline) and seed:")
    left, right = st.columns(2)
    left.caption("Before fine-tuning")
    left.code(before["sample"], language=None, wrap_lines=True)
    right.caption(f"After, at step {after['step']:,}")
    right.code(after["sample"], language=None, wrap_lines=True)


def _changes(folder: Path, info: dict, data: dict | None) -> None:
    st.markdown("**What changed in the weights**")
    mine = _spectra(str(folder), json.dumps(info, sort_keys=True))
    if not mine:
        st.info("The change cannot be measured: the base model (or LoRA's A and B) is missing.")
        return
    runs = {_label(info, folder): mine}
    other = _sibling(folder, info, data)
    if other is not None:
        other_spectra = _spectra(str(other[0]), json.dumps(other[1], sort_keys=True))
        if other_spectra:
            runs[_label(other[1], other[0])] = other_spectra
    lora_info = info if info["mode"] == "lora" else (other[1] if other else None)
    rank = int(lora_info["rank"]) if lora_info else DEFAULT_RANK
    names = list(mine)  # a matrix the other run did not change shows this run alone
    matrix = state.selectbox("Matrix", "ft_matrix", names, names[0])
    shown = {label: s[matrix] for label, s in runs.items() if matrix in s}
    present.plot(cache.figure(charts.spectrum_figure, shown, matrix, rank), key="ft_spectrum")
    st.caption(
        "A weight change ΔW has singular values s₁ ≥ s₂ ≥ …: the lengths of its directions. "
        "LoRA's update (alpha / r) B A has at most r nonzero ones; a full fine-tune's "
        "W_after − W_base may use them all. The share of Σ s² in the top r is the most of the "
        "change any rank-r update could hold. This judges one matrix: a full fine-tune also "
        "changes the matrices LoRA was not given, the embeddings, the unembedding and the "
        "LayerNorms, which LoRA leaves frozen."
    )
    full = next((s[matrix] for label, s in runs.items() if label.startswith("full")), None)
    if full is not None:
        st.markdown(ft.low_rank_claim(matrix, full, rank).text)
    else:
        st.caption(
            "A full fine-tune of the same model on the same text, trained on this server, would "
            "be drawn beside it."
        )


def _label(info: dict, folder: Path) -> str:
    if info["mode"] == "lora":
        return f"LoRA r = {info['rank']} ({folder.name})"
    return f"full fine-tune ({folder.name})"
