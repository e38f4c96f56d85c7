"""Training as an iterator of step records (the command line is in cli.py).

    for record in train(model, data, TrainConfig(max_steps=500), Path("runs/x"), tokenizer):
        print(record.step, record.train_loss)

Each step takes one update of the optimiser TrainConfig.optimizer names (AdamW, or SGD with
momentum: optim.py writes both out; weight decay on 2-D weight matrices only) on a random batch,
with a learning rate that warms up linearly and then follows a cosine down to `min_lr`, and with
the gradient's norm clipped. Every step records the gradient's norm before clipping, and every
`health_every` steps each layer's gradient norm and update size too (health.py), so a page can
show vanishing, exploding and clipped gradients. Every `eval_every` steps the loop measures the
validation loss (model.eval(), no gradients, the fused attention path), every `sample_every`
steps it writes a short sample (and a new run one at step 0, before its first step: the
untrained model's text, the first record it yields), and at log-spaced steps it saves a float16
snapshot of the weights so a page can scrub back through training. The bundle (checkpoint.save_bundle) is rewritten at
every evaluation and at the end, so stopping at any time leaves a loadable model.

It stops early, always leaving a loadable bundle, when the `stop` event is set (after the step in
progress) or when the loss or the gradient stops being a finite number (the weights of the last
good step are kept and the last record says why). Resuming from a bundle continues the step count,
the schedule and the curve; the optimiser's moments are not stored in bundles, so they restart.
With a time limit (TrainConfig.time_limit, seconds) the run ends when that much time has passed
and the cosine decay runs on the share of the time used, so a run of any length ends at min_lr.

The same loop serves the command line (viz_model/training/cli.py, which prints and draws a progress
bar) and the job runner (serving/jobs.py, a child process per run); nothing in it knows
Streamlit, prints or draws. Settings become a run (data, tokenizer, model, TrainConfig) in one
place for both: viz_model/training/settings.py.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from viz_model.bundles.checkpoint import save_bundle, save_snapshot
from viz_model.bundles.load import load_bundle
from viz_model.model.config import TrainConfig
from viz_model.model.gpt import GPT
from viz_model.model.sampling import SamplingSettings, generate
from viz_model.text.data import TokenData
from viz_model.text.tokenization import Tokenizer
from viz_model.training import accel
from viz_model.training.health import HealthProbe
from viz_model.training.optim import make_optimizer

EVAL_SEED = 1234  # the same validation windows at every evaluation, so the curve is not noise
SAMPLE_SEED = 0
SAMPLE_PROMPT = "\n"


@dataclass
class StepRecord:
    """What one training step reports. val_* only on evaluation steps, sample on sample steps,
    stopped only on the last record of a run that ended early. A new run that samples at all
    first reports step 0: no step taken, only the sample of its untrained weights."""

    step: int
    train_loss: float | None  # None when the loss was not a finite number, and at step 0
    lr: float
    tokens_per_s: float  # smoothed over recent steps
    elapsed: float  # seconds since the run started (including earlier runs when resumed)
    val_loss: float | None = None
    val_ppl: float | None = None
    # a fine-tune's evaluations also measure the loss on the base model's own validation text
    # (forgetting; training/finetune.py): the same windows every time, as val_loss
    old_val_loss: float | None = None
    sample: str | None = None
    stopped: str | None = None
    event: str | None = None  # what changed before this step: a new peak lr, a pause, a resume
    grad_norm: float | None = None  # the whole gradient's norm before clipping (every step)
    # every health_every steps (health.py): {layer: gradient norm before clipping} and
    # {layer: ||w_after - w_before|| / ||w_before||}, layers from embed to unembed
    grad_layers: dict[str, float] | None = None
    update_layers: dict[str, float] | None = None

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


def perplexity(loss: float) -> float | None:
    """e^loss, rounded; None when it is too large for a float (a loss past ~709 nats, a run
    blowing up), so a diverging run is recorded instead of crashing the loop."""
    try:
        return round(math.exp(loss), 4)
    except OverflowError:
        return None


def snapshot_steps(max_steps: int, n: int) -> list[int]:
    """Step 0 (the untrained model) and `n` log-spaced steps ending at max_steps (fewer when
    small steps collide): step round(max_steps ** (i / n)) for i = 1..n, e.g.
    snapshot_steps(4000, 3) -> [0, 16, 252, 4000]; snapshot_steps(60, 4) -> [0, 3, 8, 22, 60]."""
    if n <= 0:
        return []
    return sorted({0, *(round(max_steps ** (i / n)) for i in range(1, n + 1))})


@torch.no_grad()
def batch_losses(
    model: torch.nn.Module,
    data: TokenData,
    batch_size: int,
    n_batches: int,
    split: str = "val",
    seed: int = EVAL_SEED,
) -> list[float]:
    """The cross-entropy (nats per token) of each of n_batches fixed random windows of a split:
    the windows are cut on the CPU with a seeded CPU generator, then moved to the model."""
    was_training = model.training
    model.eval()
    n_ctx = model.cfg.n_ctx
    device = next(model.parameters()).device
    gen = torch.Generator().manual_seed(seed)
    losses = []
    for _ in range(n_batches):
        x, y = data.batch(split, batch_size, n_ctx, gen)
        with accel.mixed_precision(device):
            logits = model(x.to(device))  # (B, T, V)
        losses.append(F.cross_entropy(logits.float().flatten(0, 1), y.to(device).flatten()))
    model.train(was_training)
    return torch.stack(losses).tolist()  # one transfer from the device, not one per batch


def evaluate(
    model: torch.nn.Module,
    data: TokenData,
    batch_size: int,
    n_batches: int,
    split: str = "val",
    seed: int = EVAL_SEED,
) -> float:
    """Mean cross-entropy (nats per token) over n_batches fixed random windows of a split."""
    return sum(batch_losses(model, data, batch_size, n_batches, split, seed)) / n_batches


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


def _tensors(model: torch.nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    yield from model.named_parameters()
    yield from model.named_buffers()


def _copy_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter and buffer as it is now. Not the state dict: with LoRA attached that is the
    merged W + (alpha / r) B A without A and B (model/lora.py), and loading it back would zero B,
    so the saved lora.safetensors would say the run changed nothing."""
    return {k: v.detach().clone() for k, v in _tensors(model)}


def _put_back(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
    with torch.no_grad():
        for k, v in _tensors(model):
            v.copy_(state[k])


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
    peak_lr: Callable[[], float | None] | None = None,
    notes: Callable[[], str | None] | None = None,
    old_data: TokenData | None = None,
    on_save: Callable[[int], None] | None = None,
) -> Iterator[StepRecord]:
    """Train `model` from step start_step + 1 to cfg.max_steps, yielding one StepRecord per step
    (and first, for a new run that samples, the step-0 record of its untrained weights' sample).

    `out` is the bundle folder (None: keep nothing on disk). Time is training time: the time a
    consumer spends between records (drawing a chart, say) counts neither in `elapsed` nor
    against the time limit. `resume_history` and `start_step`
    continue an earlier run (see `resume_state`). `meta` goes into config.json; the loop adds step,
    val_loss, wall_time, tokens_seen and, when it ended early, stopped. `peak_lr`, asked before
    each step, changes the run's peak learning rate while it runs (None: no change): the schedule
    keeps its shape around the new cfg.lr (min_lr follows it down if needed), and the bundle
    records it. `notes`, asked before each step, says what else happened since the last one (a
    pause, a resume: the job worker knows); with a change of peak it becomes the record's
    `event`, which the loss curve marks. `old_data` (a fine-tune: the base model's own text) is
    evaluated beside `data` at every evaluation, as the record's old_val_loss; `on_save(step)` runs
    after each save of the bundle (a LoRA run keeps its A and B beside it).
    """
    if cfg.threads > 0:
        torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed + start_step)
    device = next(model.parameters()).device
    accel.allow_fast_matmuls(device)
    n_ctx = model.cfg.n_ctx
    tokens_per_step = cfg.batch_size * n_ctx
    gen = torch.Generator().manual_seed(cfg.seed + start_step)
    opt = make_optimizer(model, cfg)
    params = [p for group in opt.param_groups for p in group["params"]]
    probe = HealthProbe(model)
    history = [dict(r) for r in (resume_history or [])]
    meta = dict(meta or {})
    prev_elapsed = float(history[-1]["elapsed"]) if history else 0.0
    prev_tokens = int(meta.get("tokens_seen", start_step * tokens_per_step))
    snaps = set(snapshot_steps(cfg.max_steps, cfg.n_snapshots)) | set(cfg.snapshot_at)
    snaps = snaps if out is not None else set()
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
        if on_save is not None:
            on_save(step)

    t0 = time.perf_counter()
    paused = 0.0  # time the consumer held on to a record: not training time

    def clock() -> float:
        """Seconds of training so far, earlier runs included."""
        return prev_elapsed + time.perf_counter() - t0 - paused

    if out is not None and start_step in snaps and start_step == 0:
        save_snapshot(out, model, 0)
        snap_step = 0
    if start_step == 0 and cfg.sample_tokens > 0 and cfg.max_steps > 0:
        # The untrained model's text (a fine-tune's: its base's), so the samples start at step 0.
        text = sample_text(model, tokenizer, cfg.sample_tokens)
        first = StepRecord(0, None, 0.0, 0.0, round(clock(), 2), sample=text)
        history.append(first.to_dict())
        t_yield = time.perf_counter()
        yield first
        paused += time.perf_counter() - t_yield
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

    base = cfg  # a live peak is applied to the run's own settings, so min_lr can rise again
    for step in range(start_step + 1, cfg.max_steps + 1):
        previous_peak = cfg.lr
        cfg = _with_peak_lr(base, peak_lr() if peak_lr is not None else None)
        happened = [notes()] if notes is not None else []
        if cfg.lr != previous_peak:
            happened.append(f"peak lr {previous_peak:.3g} → {cfg.lr:.3g}")
        event = "; ".join(e for e in happened if e) or None
        time_fraction = clock() / cfg.time_limit if cfg.time_limit > 0 else 0.0
        lr = lr_at(step, cfg, time_fraction)
        for group in opt.param_groups:
            group["lr"] = lr
        x, y = data.batch("train", cfg.batch_size, n_ctx, gen)  # (B, T) each, cut on the CPU
        x, y = x.to(device), y.to(device)
        with accel.mixed_precision(device):  # bf16 matmuls on a GPU; float32 weights and loss
            logits = model(x)  # (B, T, V)
        loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten())
        health = cfg.health_every > 0 and (step == 1 or step % cfg.health_every == 0)
        moved = None
        opt.zero_grad(set_to_none=True)
        if loss.requires_grad:  # not when a hook replaced the logits by constants
            loss.backward()  # a NaN loss gives NaN gradients: the checks below skip the update
        grads = probe.grad_norms() if health else None  # before clipping scales them
        clip = cfg.grad_clip if cfg.grad_clip > 0 else float("inf")
        norm_t = torch.nn.utils.clip_grad_norm_(params, clip)
        # One read from the device per step: a GPU runs ahead of Python until a value is read.
        loss_value, norm = torch.stack([loss.detach(), norm_t.float()]).tolist()
        problem = None
        if not math.isfinite(loss_value):
            problem = f"loss became {'NaN' if math.isnan(loss_value) else 'infinite'}"
        elif not math.isfinite(norm):
            problem = "the gradient became NaN or infinite"
        else:
            before = probe.weights() if health else None
            opt.step()
            moved = probe.update_ratios(before) if before is not None else None
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
            event=event,
            grad_norm=float(f"{norm:.4g}"),
            grad_layers=grads,
            update_layers=moved,
        )
        if last or (cfg.eval_every > 0 and step % cfg.eval_every == 0):
            val = evaluate(model, data, cfg.batch_size, cfg.eval_batches)
            if not math.isfinite(val):
                problem = f"validation loss became {'NaN' if math.isnan(val) else 'infinite'}"
                yield halt(problem, step, step)  # this step's update was taken
                return
            last_val = round(val, 5)
            record.val_loss, record.val_ppl = last_val, perplexity(val)
            if old_data is not None:
                record.old_val_loss = round(
                    evaluate(model, old_data, cfg.batch_size, cfg.eval_batches), 5
                )
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


def _with_peak_lr(cfg: TrainConfig, lr: float | None) -> TrainConfig:
    """cfg with the peak learning rate `lr` (and min_lr no higher than it); cfg itself if None."""
    if lr is None or lr == cfg.lr:
        return cfg
    return dataclasses.replace(cfg, lr=lr, min_lr=min(cfg.min_lr, lr))


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
        _put_back(model, good_state)
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
