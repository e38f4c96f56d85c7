"""Training as an iterator of step records, and the command line `python -m viz_model.train`.

    for record in train(model, data, TrainConfig(max_steps=500), Path("runs/x"), tokenizer):
        print(record.step, record.train_loss)

Each step takes one AdamW update on a random batch (weight decay on 2-D weight matrices only),
with a learning rate that warms up linearly and then follows a cosine down to `min_lr`, and with
the gradient's norm clipped. Every `eval_every` steps the loop measures the validation loss
(model.eval(), no gradients, the fused attention path), every `sample_every` steps it writes a
short sample, and at log-spaced steps it saves a float16 snapshot of the weights so a page can
scrub back through training. The bundle (checkpoint.save_bundle) is rewritten at every evaluation
and at the end, so stopping at any time leaves a loadable model.

It stops early, always leaving a loadable bundle, when the `stop` event is set (after the step in
progress) or when the loss or the gradient stops being a finite number (the weights of the last
good step are kept and the last record says why). Resuming from a bundle continues the step count,
the schedule and the curve; the optimiser's moments are not stored in bundles, so they restart.
With a time limit (TrainConfig.time_limit, seconds) the run ends when that much time has passed
and the cosine decay runs on the share of the time used, so a run of any length ends at min_lr.

The same loop serves the training page; nothing in it knows Streamlit. The command line part at
the bottom prints and draws a progress bar; the library part does neither.
"""

from __future__ import annotations

import argparse
import math
import shlex
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from viz_model.checkpoint import CheckpointError, load_bundle, save_bundle, save_snapshot
from viz_model.config import PRESET_TRAINING, PRESETS, TrainConfig, preset
from viz_model.data import (
    TASKS,
    VAL_FRACTION,
    TokenData,
    example_prompts,
    load_corpus,
    task_text,
    validate_user_text,
)
from viz_model.model import GPT
from viz_model.sampling import SamplingSettings, generate
from viz_model.tokenization import Tokenizer

EVAL_SEED = 1234  # the same validation windows at every evaluation, so the curve is not noise
SAMPLE_SEED = 0
SAMPLE_PROMPT = "\n"
STEPS_WHEN_TIMED = 1_000_000  # --minutes without --steps: the time limit ends the run
DEFAULT_PRESET = "small"
# Flags that describe what a bundle is (its data, tokenizer and shape): a resume keeps the bundle's.
_FIXED_BY_BUNDLE = (
    "corpus",
    "task",
    "text_file",
    "val_fraction",
    "tokenizer",
    "vocab_size",
    "preset",
)


@dataclass
class StepRecord:
    """What one training step reports. val_* only on evaluation steps, sample on sample steps,
    stopped only on the last record of a run that ended early."""

    step: int
    train_loss: float | None  # None only when the loss was not a finite number
    lr: float
    tokens_per_s: float  # smoothed over recent steps
    elapsed: float  # seconds since the run started (including earlier runs when resumed)
    val_loss: float | None = None
    val_ppl: float | None = None
    sample: str | None = None
    stopped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict without the fields that are None, e.g. {"step": 3, "train_loss": 4.1,
        "lr": 3e-05, "tokens_per_s": 9100.0, "elapsed": 0.4}."""
        return {k: v for k, v in asdict(self).items() if v is not None}


def lr_at(step: int, cfg: TrainConfig, time_fraction: float = 0.0) -> float:
    """The learning rate of `step` (1-based): linear warm-up to cfg.lr over warmup_steps, then a
    cosine from cfg.lr down to cfg.min_lr at max_steps (and min_lr after it).

    With lr=1e-3, min_lr=1e-4, warmup_steps=100, max_steps=1100: step 50 -> 5e-4, step 100 ->
    1e-3, step 600 -> 5.5e-4 (half way down), step 1100 -> 1e-4. Under a time limit the cosine
    follows whichever is further along: the steps or the share of the time used (time_fraction).
    """
    if cfg.warmup_steps > 0 and step <= cfg.warmup_steps:
        return cfg.lr * step / cfg.warmup_steps
    span = max(1, cfg.max_steps - cfg.warmup_steps)
    progress = min(1.0, max((step - cfg.warmup_steps) / span, time_fraction))
    return cfg.min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (cfg.lr - cfg.min_lr)


def snapshot_steps(max_steps: int, n: int) -> list[int]:
    """Step 0 (the untrained model) and `n` log-spaced steps ending at max_steps (fewer when
    small steps collide): step round(max_steps ** (i / n)) for i = 1..n, e.g.
    snapshot_steps(4000, 3) -> [0, 16, 252, 4000]; snapshot_steps(60, 4) -> [0, 3, 8, 22, 60]."""
    if n <= 0:
        return []
    return sorted({0, *(round(max_steps ** (i / n)) for i in range(1, n + 1))})


def make_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW with weight decay on the 2-D weight matrices (and embeddings), none on biases and
    LayerNorm gains, as in GPT-2 and nanoGPT."""
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": cfg.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2))


@torch.no_grad()
def evaluate(
    model: torch.nn.Module,
    data: TokenData,
    batch_size: int,
    n_batches: int,
    split: str = "val",
    seed: int = EVAL_SEED,
) -> float:
    """Mean cross-entropy (nats per token) over n_batches fixed random windows of a split."""
    was_training = model.training
    model.eval()
    n_ctx = model.cfg.n_ctx
    device = next(model.parameters()).device
    gen = torch.Generator().manual_seed(seed)
    total = 0.0
    for _ in range(n_batches):
        x, y = data.batch(split, batch_size, n_ctx, gen)
        logits = model(x.to(device))
        total += F.cross_entropy(logits.flatten(0, 1), y.to(device).flatten()).item()
    model.train(was_training)
    return total / n_batches


def sample_text(model: GPT, tokenizer: Tokenizer, n_tokens: int, seed: int = SAMPLE_SEED) -> str:
    """`n_tokens` tokens sampled (temperature 1) after a newline, decoded to text."""
    was_training = model.training
    model.eval()
    prompt = tokenizer.encode(SAMPLE_PROMPT) or [0]
    ids = generate(model, prompt[-model.cfg.n_ctx :], n_tokens, SamplingSettings(), seed=seed)
    model.train(was_training)
    return tokenizer.decode(ids)


def _finite_params(model: torch.nn.Module) -> bool:
    return all(bool(torch.isfinite(p).all()) for p in model.parameters())


def _copy_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def train(
    model: GPT,
    data: TokenData,
    cfg: TrainConfig,
    out: Path | None,
    tokenizer: Tokenizer,
    stop: threading.Event | None = None,
    resume_history: list[dict[str, Any]] | None = None,
    start_step: int = 0,
    meta: dict[str, Any] | None = None,
) -> Iterator[StepRecord]:
    """Train `model` from step start_step + 1 to cfg.max_steps, yielding one StepRecord per step.

    `out` is the bundle folder (None: keep nothing on disk). Time is training time: the time a
    consumer spends between records (drawing a chart, say) counts neither in `elapsed` nor
    against the time limit. `resume_history` and `start_step`
    continue an earlier run (see `resume_state`). `meta` goes into config.json; the loop adds step,
    val_loss, wall_time, tokens_seen and, when it ended early, stopped.
    """
    if cfg.threads > 0:
        torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed + start_step)
    device = next(model.parameters()).device
    n_ctx = model.cfg.n_ctx
    tokens_per_step = cfg.batch_size * n_ctx
    gen = torch.Generator().manual_seed(cfg.seed + start_step)
    opt = make_optimizer(model, cfg)
    params = [p for group in opt.param_groups for p in group["params"]]
    history = [dict(r) for r in (resume_history or [])]
    meta = dict(meta or {})
    prev_elapsed = float(history[-1]["elapsed"]) if history else 0.0
    prev_tokens = int(meta.get("tokens_seen", start_step * tokens_per_step))
    snaps = set(snapshot_steps(cfg.max_steps, cfg.n_snapshots)) if out is not None else set()
    last_val: float | None = next(
        (r["val_loss"] for r in reversed(history) if r.get("val_loss") is not None), None
    )

    good_state, good_step = _copy_state(model), start_step
    snap_step = max((s for s in snaps if s <= start_step), default=None)

    def save(step: int, stopped: str | None = None) -> None:
        if out is None:
            return
        info = {
            **meta,
            "step": step,
            "val_loss": last_val,
            "wall_time": round(clock(), 2),
            "tokens_seen": prev_tokens + (step - start_step) * tokens_per_step,
        }
        if stopped:
            info["stopped"] = stopped
        save_bundle(out, model, tokenizer, cfg.to_dict(), history, info)

    t0 = time.perf_counter()
    paused = 0.0  # time the consumer held on to a record: not training time

    def clock() -> float:
        """Seconds of training so far, earlier runs included."""
        return prev_elapsed + time.perf_counter() - t0 - paused

    if out is not None and start_step in snaps and start_step == 0:
        save_snapshot(out, model, 0)
        snap_step = 0
    model.train()
    rate = 0.0
    t_last = time.perf_counter()

    def halt(problem: str, step: int, kept_if_finite: int) -> StepRecord:
        """Stop on a non-finite number: the loop's current state, read when it is called."""
        return _stop_on_nan(
            problem,
            step,
            kept_if_finite,
            model,
            good_state,
            good_step,
            snap_step,
            history,
            clock(),
            lr,
            rate,
            save,
        )

    for step in range(start_step + 1, cfg.max_steps + 1):
        time_fraction = clock() / cfg.time_limit if cfg.time_limit > 0 else 0.0
        lr = lr_at(step, cfg, time_fraction)
        for group in opt.param_groups:
            group["lr"] = lr
        x, y = data.batch("train", cfg.batch_size, n_ctx, gen)
        x, y = x.to(device), y.to(device)
        logits = model(x)
        loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
        loss_value = loss.item()
        problem = None
        if not math.isfinite(loss_value):
            problem = f"loss became {'NaN' if math.isnan(loss_value) else 'infinite'}"
        else:
            opt.zero_grad(set_to_none=True)
            loss.backward()
            clip = cfg.grad_clip if cfg.grad_clip > 0 else float("inf")
            norm = float(torch.nn.utils.clip_grad_norm_(params, clip))
            if not math.isfinite(norm):
                problem = "the gradient became NaN or infinite"
            else:
                opt.step()
        if problem is not None:
            yield halt(problem, step, step - 1)  # this step's update was not taken
            return

        now, elapsed = time.perf_counter(), clock()
        step_rate = tokens_per_step / max(now - t_last, 1e-9)
        rate = step_rate if rate == 0.0 else 0.9 * rate + 0.1 * step_rate
        requested = stop is not None and stop.is_set()
        out_of_time = cfg.time_limit > 0 and elapsed >= cfg.time_limit
        last = step == cfg.max_steps or requested or out_of_time
        record = StepRecord(
            step=step,
            train_loss=round(loss_value, 5),
            lr=float(f"{lr:.6g}"),  # short numbers keep history.json small
            tokens_per_s=round(rate),
            elapsed=round(elapsed, 2),
        )
        if last or (cfg.eval_every > 0 and step % cfg.eval_every == 0):
            val = evaluate(model, data, cfg.batch_size, cfg.eval_batches)
            if not math.isfinite(val):
                problem = f"validation loss became {'NaN' if math.isnan(val) else 'infinite'}"
                yield halt(problem, step, step)  # this step's update was taken
                return
            last_val = round(val, 5)
            record.val_loss, record.val_ppl = last_val, round(math.exp(val), 4)
            good_state, good_step = _copy_state(model), step
        if cfg.sample_tokens > 0 and (
            last or (cfg.sample_every > 0 and step % cfg.sample_every == 0)
        ):
            record.sample = sample_text(model, tokenizer, cfg.sample_tokens)
        if step in snaps or (last and snaps):  # the last weights are always kept as a snapshot
            save_snapshot(out, model, step)
            snap_step = step
            good_state, good_step = _copy_state(model), step
        if requested:
            record.stopped = f"stopped on request after step {step}"
        history.append(record.to_dict())
        if record.val_loss is not None or last:
            save(step, record.stopped)
        t_yield = time.perf_counter()
        yield record
        if last:
            return
        t_last = time.perf_counter()
        paused += t_last - t_yield


def _stop_on_nan(
    problem: str,
    step: int,
    kept_if_finite: int,
    model: GPT,
    good_state: dict[str, torch.Tensor],
    good_step: int,
    snap_step: int | None,
    history: list[dict[str, Any]],
    elapsed: float,
    lr: float,
    rate: float,
    save,
) -> StepRecord:
    """Put back the last good weights, save them, and say what happened in one record."""
    if _finite_params(model):
        kept = kept_if_finite
    else:
        model.load_state_dict(good_state)
        kept = good_step
    history[:] = [r for r in history if r["step"] <= kept]
    where = f"kept the weights of step {kept}"
    if snap_step is not None:
        where += f" (last snapshot: step {snap_step})"
    reason = f"{problem} at step {step}; {where}"
    record = StepRecord(
        step=step,
        train_loss=None,
        lr=lr,
        tokens_per_s=round(rate, 1),
        elapsed=round(elapsed, 3),
        stopped=reason,
    )
    history.append(record.to_dict())
    save(kept, reason)
    return record


def resume_state(bundle_path: str | Path) -> tuple[Any, int, list[dict[str, Any]]]:
    """(bundle, start_step, history) to continue training a bundle where it stopped.

    start_step is the step of the saved weights (meta.step; after a NaN stop that is the last good
    step), and the history is cut to the records up to it.
    """
    bundle = load_bundle(bundle_path)
    history = bundle.history
    start = bundle.meta.get("step")
    if start is None:
        start = max((int(r.get("step", 0)) for r in history), default=0)
    start = int(start)
    return bundle, start, [r for r in history if int(r.get("step", 0)) <= start]


# ---- the command line -------------------------------------------------------------------------

DESCRIPTION = """\
Train a small GPT on a corpus, a synthetic task or your own text file, and save it as a model
bundle (a folder the app can open): weights, tokenizer, config, training curve and snapshots.

Examples:
  python -m viz_model.train --corpus shakespeare --tokenizer char --preset small --out runs/sh
  python -m viz_model.train --corpus shakespeare --tokenizer char --preset quick --minutes 1 --out runs/class
  python -m viz_model.train --task repeat --preset attn-only-2l --steps 1500 --out runs/ind
  python -m viz_model.train --resume runs/sh --steps 4000 --out runs/sh
"""


def _preset_training_help(name: str) -> str:
    """', and unless told otherwise batch 16, lr 0.003, ...' for a preset with its own settings."""
    flags = {"batch_size": "batch", "lr": "lr", "min_lr": "min-lr", "warmup_steps": "warm-up"}
    own = PRESET_TRAINING.get(name, {})
    if not own:
        return ""
    return ", and unless told otherwise " + ", ".join(f"{flags[k]} {v:g}" for k, v in own.items())


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m viz_model.train",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    src = p.add_argument_group("what to train on (choose one)")
    src.add_argument(
        "--corpus",
        help="a bundled text corpus by name: shakespeare (about 1 MB of eight plays)",
    )
    src.add_argument(
        "--task",
        choices=sorted(TASKS),
        help="a synthetic task generated from a seed: repeat (random letters written twice; "
        "teaches induction heads), count (runs of consecutive numbers), brackets (balanced "
        "brackets)",
    )
    src.add_argument(
        "--text-file",
        type=Path,
        help="a UTF-8 plain text file of your own (at most 2 MB, at least 2,000 characters)",
    )
    src.add_argument(
        "--task-examples",
        type=int,
        default=20_000,
        help="how many lines of the synthetic task to generate (default 20000)",
    )
    src.add_argument(
        "--task-len",
        type=int,
        default=32,
        help="characters per line of the synthetic task (default 32; for repeat, half of them "
        "are the random letters and half the copy)",
    )
    src.add_argument(
        "--val-fraction",
        type=float,
        help="the share of the text kept aside to measure the validation loss on text the model "
        "never trains on: the end of each of up to 20 equal stretches, so every part of the text "
        "has some (default 0.1)",
    )

    tok = p.add_argument_group("tokenizer")
    tok.add_argument(
        "--tokenizer",
        choices=("char", "bpe", "word"),
        help="how text becomes tokens: char (one token per character), bpe (byte-pair "
        "encoding: frequent pieces of words become single tokens) or word (one token per word); "
        "default char",
    )
    tok.add_argument(
        "--vocab-size",
        type=int,
        help="how many tokens a bpe or word tokenizer learns (default 512 for bpe, 2000 for word); "
        "ignored for char",
    )

    mod = p.add_argument_group("model shape (a preset, then any overrides)")
    mod.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        help="a named model size: "
        + "; ".join(
            f"{name}: {v['n_layer']} layers, {v['d_model']} dims, {v['n_head']} heads, "
            f"context {v['n_ctx']}"
            + (", attention only" if v.get("attn_only") else "")
            + _preset_training_help(name)
            for name, v in PRESETS.items()
        )
        + " (default small)",
    )
    mod.add_argument("--n-ctx", type=int, help="context length: how many tokens the model sees")
    mod.add_argument(
        "--d-model", type=int, help="width of the residual stream (the size of every token vector)"
    )
    mod.add_argument("--n-layer", type=int, help="number of transformer blocks")
    mod.add_argument("--n-head", type=int, help="attention heads per block (must divide d-model)")
    mod.add_argument("--d-mlp", type=int, help="hidden neurons of each MLP (default 4 x d-model)")
    mod.add_argument(
        "--act",
        choices=("gelu", "relu"),
        help="the MLP's nonlinearity, the bend between its two layers (default gelu)",
    )
    mod.add_argument(
        "--pos",
        choices=("learned", "sinusoidal", "none"),
        help="position information: learned vectors, fixed sine waves, or none at all (default "
        "learned)",
    )
    mod.add_argument(
        "--norm",
        choices=("pre", "post"),
        help="where LayerNorm sits: before attention and the MLP read the stream (pre, as in "
        "GPT-2) or after their output is added back (post, as in the original 2017 Transformer); "
        "default pre",
    )
    mod.add_argument(
        "--tie-embeddings",
        action="store_true",
        default=None,
        help="use the token embedding matrix (transposed) as the unembedding",
    )
    mod.add_argument(
        "--attn-only",
        action="store_true",
        default=None,
        help="blocks with attention but no MLP (easier to take apart)",
    )
    mod.add_argument(
        "--no-bias",
        action="store_true",
        default=None,
        help="no bias vectors in the linear layers and LayerNorms",
    )
    mod.add_argument(
        "--dropout",
        type=float,
        help="share of activations zeroed at random while training, so the model cannot lean on "
        "any one of them; helps long runs not to memorise the text (default 0)",
    )

    tr = p.add_argument_group("training")
    defaults = TrainConfig()
    tr.add_argument(
        "--steps",
        type=int,
        help=f"total optimiser steps (default {defaults.max_steps}); when resuming, the total "
        "including the steps already taken",
    )
    tr.add_argument(
        "--batch-size",
        type=int,
        help=f"text windows per step (default {defaults.batch_size})",
    )
    tr.add_argument("--lr", type=float, help=f"peak learning rate (default {defaults.lr})")
    tr.add_argument(
        "--min-lr",
        type=float,
        help=f"learning rate at the end: after the warm-up the rate falls from --lr to this along "
        f"half a cosine wave (default {defaults.min_lr})",
    )
    tr.add_argument(
        "--warmup",
        type=int,
        help=f"steps over which the learning rate rises linearly from 0 (default "
        f"{defaults.warmup_steps})",
    )
    tr.add_argument(
        "--weight-decay",
        type=float,
        help=f"how strongly each step pulls the weight matrices toward zero (AdamW's weight decay, a "
        f"mild brake on memorising; default {defaults.weight_decay})",
    )
    tr.add_argument(
        "--grad-clip",
        type=float,
        help=f"largest allowed gradient norm; 0 turns clipping off (default {defaults.grad_clip})",
    )
    tr.add_argument(
        "--eval-every",
        type=int,
        help=f"steps between validation-loss measurements, which also save the bundle; 0: only at "
        f"the end (default {defaults.eval_every})",
    )
    tr.add_argument(
        "--eval-batches",
        type=int,
        help=f"batches averaged for each validation loss (default {defaults.eval_batches})",
    )
    tr.add_argument(
        "--sample-every",
        type=int,
        help=f"steps between generated text samples; 0: only at the end (default "
        f"{defaults.sample_every})",
    )
    tr.add_argument(
        "--sample-tokens",
        type=int,
        help=f"tokens per sample (default {defaults.sample_tokens})",
    )
    tr.add_argument(
        "--snapshots",
        type=int,
        help=f"about how many copies of the weights to keep at log-spaced steps, plus the "
        f"untrained model (default {defaults.n_snapshots})",
    )
    tr.add_argument(
        "--minutes",
        type=float,
        help="stop after this many minutes of training in all (resumed runs count their earlier "
        "time); the learning rate then decays on time, reaching min-lr at the end. Without "
        "--steps the clock alone ends the run; with --steps, whichever comes first. "
        "0 or unset: no time limit, --steps decides",
    )
    tr.add_argument("--seed", type=int, help=f"random seed (default {defaults.seed})")
    tr.add_argument(
        "--threads",
        type=int,
        help="CPU threads for PyTorch; 0 leaves PyTorch's default (default 0)",
    )
    tr.add_argument(
        "--device",
        default="auto",
        choices=("auto", "cpu", "cuda", "mps"),
        help="where to train: auto picks a GPU (cuda, then mps) when there is one, else the CPU",
    )

    io = p.add_argument_group("output")
    io.add_argument(
        "--out",
        type=Path,
        help="the bundle folder to write (e.g. runs/my-model); when resuming, the resumed folder "
        "unless given",
    )
    io.add_argument(
        "--resume",
        type=Path,
        help="a bundle folder to continue training: its model, tokenizer, data and validation split "
        "(so those flags cannot be given); the step count and the curve continue, and the "
        "optimiser's memory restarts",
    )
    io.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar and no samples; the model line, validation losses and summary still "
        "print",
    )
    return p


_MODEL_FLAGS = {
    "n_ctx": "n_ctx",
    "d_model": "d_model",
    "n_layer": "n_layer",
    "n_head": "n_head",
    "d_mlp": "d_mlp",
    "act": "act",
    "pos": "pos",
    "norm": "norm",
    "tie_embeddings": "tie_embeddings",
    "attn_only": "attn_only",
    "dropout": "dropout",
}
_TRAIN_FLAGS = {
    "steps": "max_steps",
    "batch_size": "batch_size",
    "lr": "lr",
    "min_lr": "min_lr",
    "warmup": "warmup_steps",
    "weight_decay": "weight_decay",
    "grad_clip": "grad_clip",
    "eval_every": "eval_every",
    "eval_batches": "eval_batches",
    "sample_every": "sample_every",
    "sample_tokens": "sample_tokens",
    "snapshots": "n_snapshots",
    "seed": "seed",
    "threads": "threads",
}


def _data_source(args: argparse.Namespace) -> dict[str, Any]:
    chosen = [n for n in ("corpus", "task", "text_file") if getattr(args, n) is not None]
    if len(chosen) != 1:
        raise SystemExit("choose exactly one of --corpus, --task or --text-file")
    split = {"val_fraction": VAL_FRACTION if args.val_fraction is None else args.val_fraction}
    if args.corpus is not None:
        return {"corpus": args.corpus, **split}
    if args.task is not None:
        return {
            "task": args.task,
            "task_examples": args.task_examples,
            "task_len": args.task_len,
            "task_seed": 0,
            **split,
        }
    return {"text_file": str(args.text_file), **split}


def load_text(source: dict[str, Any]) -> str:
    """The training text of a data source as stored in a bundle's meta["data"]."""
    if "corpus" in source:
        return load_corpus(source["corpus"])
    if "task" in source:
        return task_text(
            source["task"], source["task_examples"], source.get("task_seed", 0), source["task_len"]
        )
    return validate_user_text(Path(source["text_file"]).read_bytes())


def _device(name: str) -> torch.device:
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    return torch.device(name)


@dataclass
class _Run:
    """Everything the command line sets up before the first step."""

    model: GPT
    tokenizer: Tokenizer
    data: TokenData
    cfg: TrainConfig
    out: Path
    meta: dict[str, Any]
    history: list[dict[str, Any]]
    start_step: int


def _overrides(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    """(training overrides, model-shape overrides) from the flags that were given."""
    train_overrides = {
        field: getattr(args, flag)
        for flag, field in _TRAIN_FLAGS.items()
        if getattr(args, flag) is not None
    }
    model_overrides = {
        field: getattr(args, flag)
        for flag, field in _MODEL_FLAGS.items()
        if getattr(args, flag) is not None
    }
    if args.no_bias:
        model_overrides["bias"] = False
    if args.minutes is not None:
        train_overrides["time_limit"] = args.minutes * 60.0
        if args.minutes > 0 and args.steps is None and args.resume is None:
            # the clock decides; the step count only places the log-spaced snapshots
            train_overrides["max_steps"] = STEPS_WHEN_TIMED
    return train_overrides, model_overrides


def _resumed_run(args: argparse.Namespace, argv: list[str], train_overrides, model_overrides):
    fixed = [f"--{n.replace('_', '-')}" for n in _FIXED_BY_BUNDLE if getattr(args, n) is not None]
    if model_overrides or fixed:
        given = ", ".join(fixed + sorted(model_overrides))
        raise SystemExit(
            f"the data, tokenizer and model shape cannot change when resuming (given: {given}); "
            "they are the bundle's own"
        )
    bundle, start_step, history = resume_state(args.resume)
    source = bundle.meta.get("data")
    if source is None:
        raise SystemExit(f"{args.resume} does not say what it was trained on (meta.data)")
    cfg = TrainConfig.from_dict({**(bundle.train_config or {}), **train_overrides})
    meta = dict(bundle.meta)
    meta["command"] = meta.get("command", "") + " && " + _command(argv)
    used = float(history[-1]["elapsed"]) if history else 0.0
    if cfg.time_limit > 0 and used >= cfg.time_limit:
        raise SystemExit(
            f"{args.resume} has already trained for its {cfg.time_limit / 60:g} minutes; "
            "give a larger --minutes (or --minutes 0 for no limit) to continue"
        )
    if start_step >= cfg.max_steps:
        raise SystemExit(
            f"{args.resume} has already trained {start_step} steps; give a larger --steps to continue"
        )
    text = load_text(source)
    # the split the bundle was trained with, so the curve stays comparable across the resume
    data = TokenData.from_text(text, bundle.tokenizer, source.get("val_fraction", VAL_FRACTION))
    out = args.out or args.resume
    return _Run(bundle.model, bundle.tokenizer, data, cfg, out, meta, history, start_step)


def _new_run(args: argparse.Namespace, argv: list[str], train_overrides, model_overrides):
    if args.out is None:
        raise SystemExit("give --out, the folder to write the model bundle to")
    source = _data_source(args)
    preset_name = args.preset or DEFAULT_PRESET
    cfg = TrainConfig(**{**PRESET_TRAINING.get(preset_name, {}), **train_overrides})
    text = load_text(source)
    kind = args.tokenizer or "char"
    tokenizer = Tokenizer.train(text, kind, args.vocab_size if kind != "char" else None)
    torch.manual_seed(cfg.seed)
    model = GPT(preset(preset_name, tokenizer.vocab_size, **model_overrides))
    meta = {
        "command": _command(argv),
        "data": source,
        "corpus": source.get("corpus") or source.get("task") or source.get("text_file"),
        "tokenizer": tokenizer.kind,
        "vocab_size": tokenizer.vocab_size,
        "preset": preset_name,
        "example_prompts": example_prompts(text, source.get("task")),
    }
    data = TokenData.from_text(text, tokenizer, source["val_fraction"])
    return _Run(model, tokenizer, data, cfg, args.out, meta, [], 0)


def _set_up(args: argparse.Namespace, argv: list[str]) -> _Run:
    """The model, data and settings of the run, or SystemExit with a plain message (a missing
    file, text that cannot be trained on, an impossible model shape, a broken bundle)."""
    train_overrides, model_overrides = _overrides(args)
    try:
        if args.resume is not None:
            return _resumed_run(args, argv, train_overrides, model_overrides)
        return _new_run(args, argv, train_overrides, model_overrides)
    except (ValueError, OSError, CheckpointError) as exc:  # DataError, TokenizerError included
        raise SystemExit(f"error: {exc}") from None


def _stop_on_ctrl_c(stop: threading.Event):
    """Make the first Ctrl-C set the stop flag (the run ends after the step in progress and saves
    the bundle); a second one quits at once. Returns the previous handler, or None when this is
    not the main thread (signals can only be caught there)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def on_sigint(signum, frame) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        print(
            "\nCtrl-C: stopping after this step and saving the bundle "
            "(press Ctrl-C again to quit without saving)",
            file=sys.stderr,
            flush=True,
        )

    return signal.signal(signal.SIGINT, on_sigint)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    from tqdm import tqdm

    run = _set_up(args, argv)
    model, cfg, out = run.model, run.cfg, run.out
    if cfg.threads > 0:
        torch.set_num_threads(cfg.threads)
    device = _device(args.device)
    model.to(device)
    run.meta["device"] = str(device)
    print(
        f"model: {model.n_params():,} parameters, {model.cfg.n_layer} layers, "
        f"{model.cfg.d_model} dims, {model.cfg.n_head} heads, context {model.cfg.n_ctx}; "
        f"data: {run.data!r}; vocabulary {run.tokenizer.vocab_size} ({run.tokenizer.kind}); "
        f"torch threads {torch.get_num_threads()}; device {device}",
        flush=True,
    )
    stop = threading.Event()
    timed = cfg.time_limit > 0 and cfg.max_steps == STEPS_WHEN_TIMED
    bar = tqdm(
        total=None if timed else cfg.max_steps,
        initial=run.start_step,
        disable=args.quiet,
        unit="step",
        dynamic_ncols=True,
    )
    last = None
    best_val = None
    previous_handler = _stop_on_ctrl_c(stop)
    loop = train(
        model, run.data, cfg, out, run.tokenizer, stop, run.history, run.start_step, run.meta
    )
    try:
        for rec in loop:
            last = rec
            if rec.val_loss is not None:
                best_val = rec.val_loss
                bar.write(f"step {rec.step}: val loss {rec.val_loss:.4f}")
            if rec.sample is not None and not args.quiet:
                bar.write(f"--- sample at step {rec.step} ---\n{rec.sample}\n---")
            post = {"loss": f"{rec.train_loss:.3f}" if rec.train_loss is not None else "nan"}
            post["tok/s"] = f"{rec.tokens_per_s:,.0f}"
            if best_val is not None:
                post["val"] = f"{best_val:.3f}"
            bar.set_postfix(post, refresh=False)
            bar.update(rec.step - bar.n)
    except KeyboardInterrupt:
        print("\nquit without saving: the bundle holds the last evaluation, if any", flush=True)
        return 130
    finally:
        bar.close()
        if previous_handler is not None:
            signal.signal(signal.SIGINT, previous_handler)
    if last is None:
        return 1
    saved = load_bundle(out).meta
    print(
        f"done: step {saved.get('step')}, train loss {last.train_loss}, val loss "
        f"{saved.get('val_loss')} (perplexity "
        f"{math.exp(saved['val_loss']) if saved.get('val_loss') else float('nan'):.2f}), "
        f"{saved.get('wall_time')} s, {last.tokens_per_s:,.0f} tokens/s; bundle in {out}"
    )
    if last.stopped:
        print(f"stopped early: {last.stopped}")
        return 130 if stop.is_set() else 2
    return 0


def _command(argv: list[str]) -> str:
    return "python -m viz_model.train " + shlex.join(argv)


if __name__ == "__main__":
    sys.exit(main())
