"""Fine-tuning: a run that starts from a trained bundle (the base) and trains on new text.

    settings = RunSettings(task="count", base="assets/models/shakespeare-tiny", lora_rank=8,
                           lora_targets=("qkv", "out"), train={"max_steps": 300})
    run = new_run(settings, Path("runs/ft"), command="...")   # calls finetune_run
    for record in run.steps(): ...   # loop.train, with old_data and on_save passed on

The base's model, tokenizer and shape are kept (a char tokenizer cannot learn new characters: text
with more than MAX_UNKNOWN_SHARE of them is refused, fewer become <unk> and the meta says how
many). Full fine-tuning trains every weight; LoRA (model/lora.py) freezes them and trains a rank-r
update on the chosen matrices. Both are one loop (loop.train): its evaluations also measure the
loss on the base's own validation text (`old_data`, history's old_val_loss: forgetting), and the
bundle is an ordinary one with merged weights. What this module adds to the bundle's meta, under
"finetune": the base, the mode, rank, matrices, alpha, the trainable and total parameter counts,
the base's text, and "before": the base model's losses on the old and new text over the loop's own
evaluation windows (with the old text's per-window spread, for what counts as noise), and its
sample on the loop's prompt and seed. LoRA's A and B go to lora.safetensors after every save.
Not here: the loop (loop.py), the math of LoRA (model/lora.py), what may be said about the
result (analysis/labs/finetune.py).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from safetensors.torch import load_file, save_file

from viz_model.bundles.checkpoint import read_config
from viz_model.bundles.files import CheckpointError, atomic_write
from viz_model.bundles.load import load_bundle
from viz_model.model.config import PRESET_TRAINING, TrainConfig
from viz_model.model.families import build_model
from viz_model.model.lora import LoRA, attach_lora, lora_count
from viz_model.text import ngram
from viz_model.text.data import VAL_FRACTION, TokenData, example_prompts, load_text
from viz_model.text.tokenization import Tokenizer
from viz_model.training.estimate import n_params
from viz_model.training.loop import batch_losses, sample_text
from viz_model.training.run import Run, timed

if TYPE_CHECKING:  # settings.py builds a fine-tune's run through this module
    from viz_model.training.settings import RunSettings

LORA_FILE = "lora.safetensors"
MAX_UNKNOWN_SHARE = 0.01  # more of the new text unknown to the base's tokenizer than this: refused
# A fine-tune's training settings unless told otherwise: short, no weight decay (it would pull the
# base's weights toward zero, not toward the base), a short warm-up, one snapshot.
FINETUNE_TRAINING: dict[str, Any] = {
    "max_steps": 300,
    "lr": 1e-3,
    "min_lr": 1e-4,
    "warmup_steps": 20,
    "weight_decay": 0.0,
    "eval_every": 50,
    "sample_every": 100,
    "n_snapshots": 1,
}
LORA_TRAINING = {"lr": 3e-3}  # LoRA's few weights start from zero: a larger step, as usual


def unknown_characters(text: str, tokenizer: Tokenizer) -> tuple[int, int, list[str]]:
    """(unknown, total, a few unknown examples): characters of `text` a char tokenizer lacks, or
    tokens a word tokenizer reads as <unk>; (0, n, []) for byte-level BPE, which encodes anything."""
    if tokenizer.kind == "char":
        counts: dict[str, int] = {}
        for ch in text:
            counts[ch] = counts.get(ch, 0) + 1
        missing = {ch: n for ch, n in counts.items() if tokenizer.token_to_id(ch) is None}
        examples = sorted(missing, key=lambda ch: -missing[ch])[:8]
        return sum(missing.values()), len(text), examples
    if tokenizer.unk_id is None:
        return 0, len(text), []
    ids = TokenData.from_text(text, tokenizer, VAL_FRACTION)
    stream = torch.cat([ids.train, ids.val])
    return int((stream == tokenizer.unk_id).sum()), int(stream.numel()), []


def check_new_text(text: str, tokenizer: Tokenizer, base_name: str) -> int:
    """The count of unknown characters (or tokens), or ValueError past MAX_UNKNOWN_SHARE."""
    unknown, total, examples = unknown_characters(text, tokenizer)
    if total and unknown / total > MAX_UNKNOWN_SHARE:
        what = "characters" if tokenizer.kind == "char" else "words"
        shown = ", ".join(repr(c) for c in examples)
        raise ValueError(
            f"{unknown:,} of the new text's {total:,} {what} ({unknown / total:.1%}) are not in "
            f"{base_name}'s vocabulary{f' (e.g. {shown})' if shown else ''}: a fine-tune keeps the "
            f"base's tokenizer, so they would all read as <unk>. At most "
            f"{MAX_UNKNOWN_SHARE:.0%} may be unknown; use text written in the base's characters."
        )
    return unknown


def check_base(settings: RunSettings, text: str) -> int:
    """The base's parameter count (what VIZ_MAX_PARAMS caps), after checking that the base is a
    GPT bundle and can encode `text` (ValueError, CheckpointError with a plain message)."""
    base = Path(settings.base)
    cfg, raw = read_config(base)
    if settings.lora_rank and getattr(cfg, "family", "gpt") != "gpt":
        raise ValueError(f"LoRA goes on a GPT's matrices; {base.name} is not a GPT")
    from viz_model.bundles.files import read_tokenizer

    tokenizer = read_tokenizer(base, cfg, raw.get("tokenizer_sha256"))
    check_new_text(text, tokenizer, base.name)
    if settings.lora_rank:
        trainable_count(base, settings.lora_rank, settings.lora_targets)  # the rank fits
    return n_params(cfg)


def trainable_count(base: Path, rank: int, targets) -> tuple[int, int]:
    """(trainable, total) parameters of a fine-tune of `base`: LoRA's r (in + out) per chosen
    matrix, or every weight (rank 0). Built on the meta device: no weights read, no memory.
    ValueError for matrices the model lacks or a rank that is not low for them."""
    cfg, _ = read_config(base)
    with torch.device("meta"):
        model = build_model(cfg)
    total = model.n_params()
    return (lora_count(model, rank, targets) if rank else total), total


def train_config(settings: RunSettings, base_train: dict[str, Any] | None) -> TrainConfig:
    """The base's batch size, then FINETUNE_TRAINING (and LoRA's larger rate), then `train`."""
    batch = (base_train or {}).get("batch_size") or PRESET_TRAINING.get(settings.preset, {}).get(
        "batch_size"
    )
    given = {**({"batch_size": batch} if batch else {}), **FINETUNE_TRAINING}
    if settings.lora_rank:
        given.update(LORA_TRAINING)
    return TrainConfig(**{**given, **timed(settings.train, settings.minutes, True)})


def old_text_data(meta: dict[str, Any], tokenizer: Tokenizer) -> TokenData | None:
    """The base's own text, split as it was trained (None when its bundle does not say)."""
    source = meta.get("data")
    if not source:
        return None
    try:
        text = load_text(source)
    except (OSError, ValueError):  # a text file that is gone: forgetting cannot be measured
        return None
    return TokenData.from_text(text, tokenizer, source.get("val_fraction", VAL_FRACTION))


def _mean_sd(values: list[float]) -> tuple[float, float]:
    """The mean and the sample standard deviation of the per-window losses."""
    mean = sum(values) / len(values)
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / max(1, len(values) - 1))


def _before(model, tokenizer, data, old, cfg) -> dict[str, Any]:
    """The base model on the loop's evaluation windows of both texts, and its sample."""
    info: dict[str, Any] = {}
    for key, split in (("val", data), ("old_val", old)):
        if split is not None:
            mean, spread = _mean_sd(batch_losses(model, split, cfg.batch_size, cfg.eval_batches))
            info.update({f"{key}_loss": round(mean, 5), f"{key}_sd": round(spread, 5)})
    info["eval_batches"] = cfg.eval_batches
    info["sample"] = sample_text(model, tokenizer, cfg.sample_tokens) if cfg.sample_tokens else ""
    return info


def save_lora(out: Path, lora: LoRA) -> None:
    """lora.safetensors: every A and B, with the rank and alpha as metadata."""
    tensors = lora.tensors()
    meta = {"rank": str(lora.rank), "alpha": f"{lora.alpha:g}"}
    atomic_write(Path(out) / LORA_FILE, lambda tmp: save_file(tensors, tmp, metadata=meta))


def read_lora(folder: Path) -> tuple[dict[str, torch.Tensor], int, float] | None:
    """(tensors, rank, alpha) of a LoRA run's lora.safetensors, or None when there is none."""
    path = Path(folder) / LORA_FILE
    if not path.is_file():
        return None
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata() or {}
    try:
        return load_file(str(path)), int(meta["rank"]), float(meta["alpha"])
    except (KeyError, ValueError) as exc:
        raise CheckpointError(f"{LORA_FILE} has no rank or alpha") from exc


def finetune_run(settings: RunSettings, out: Path, command: str) -> Run:
    """The base bundle, its tokenizer on the new text, LoRA attached if asked, the base measured."""
    base = load_bundle(settings.base)
    source = settings.data_source()
    text = load_text(source)
    unknown = check_new_text(text, base.tokenizer, base.name)
    cfg = train_config(settings, base.train_config)
    data = TokenData.from_text(text, base.tokenizer, source["val_fraction"])
    old = old_text_data(base.meta, base.tokenizer)
    model = base.model
    total = model.n_params()
    before = _before(model, base.tokenizer, data, old, cfg)
    lora = None
    if settings.lora_rank:
        lora = attach_lora(
            model, settings.lora_rank, settings.lora_targets, settings.lora_alpha, cfg.seed
        )
    trainable = lora.n_trainable() if lora else total
    meta = {
        **{k: v for k, v in base.meta.items() if k in ("tokenizer", "vocab_size", "preset")},
        "command": command,
        "data": source,
        "corpus": source.get("corpus") or source.get("task") or source.get("text_file"),
        "family": base.family,
        "example_prompts": example_prompts(text, source.get("task")),
        "baselines": ngram.baselines(
            data.train.numpy(), data.val.numpy(), base.tokenizer.vocab_size
        ).as_dict(),
        "finetune": {
            "base": str(settings.base),
            "base_name": base.name,
            "mode": "lora" if lora else "full",
            "rank": settings.lora_rank or None,
            "targets": list(settings.lora_targets) if lora else None,
            "alpha": lora.alpha if lora else None,
            "trainable": trainable,
            "total": total,
            "old_data": base.meta.get("data"),
            "unknown_characters": unknown,
            "before": before,
        },
    }
    on_save = (lambda step: save_lora(out, lora)) if lora else None
    return Run(model, base.tokenizer, data, cfg, Path(out), meta, [], 0, old, on_save)


def continue_finetune(run: Run, folder: Path) -> None:
    """A resumed fine-tune: LoRA's A and B put back (W becomes the saved merged weight minus
    (alpha / r) B A, the base as trained), the base's text for forgetting, and the LoRA save."""
    info = run.meta["finetune"]
    run.old_data = old_text_data({"data": info.get("old_data")}, run.tokenizer)
    if info.get("mode") != "lora":
        return
    saved = read_lora(folder)
    if saved is None:
        raise CheckpointError(f"{folder.name} is a LoRA run without its {LORA_FILE}")
    tensors, rank, alpha = saved
    lora = attach_lora(run.model, rank, info["targets"], alpha, run.cfg.seed)
    lora.load(tensors)
    out = run.out
    run.on_save = lambda step: save_lora(out, lora)
