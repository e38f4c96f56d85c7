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
snapshot of the weights so a page can scrub back through training. The bundle
(checkpoint.save_bundle) is rewritten at every evaluation and at the end, so stopping at any time
leaves a loadable model. Time is training time: what a consumer spends between records (drawing a
chart, say) counts neither in `elapsed` nor against the time limit.

A job steers a run between steps through one RunControls (stop, a new peak learning rate, notes of
a pause, a call after each save). It stops early, always leaving a loadable bundle, when the
controls' `stop` event is set (after the step in progress) or when the loss or the gradient stops
being a finite number (the weights of the last good step are kept and the last record says why).
Resuming from a bundle continues the step count, the schedule and the curve; the optimiser's
moments are not stored in bundles, so they restart. With a time limit (TrainConfig.time_limit,
seconds) the run ends when that much time has passed and the cosine decay runs on the share of the
time used, so a run of any length ends at min_lr.

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
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
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


@dataclass(frozen=True)
class RunStart:
    """Where a run starts: the step its weights are at, the records of the steps before it (its
    history.json) and the meta its config.json carries (a resumed run: the bundle's, with its
    tokens_seen; see resume_state). The default is a new run with no meta."""

    step: int = 0
    history: Sequence[Mapping[str, Any]] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunControls:
    """What steers a run from outside while it runs: the job runner (serving/job_worker.py: pause,
    stop, a new peak learning rate, which the bundle then records) and the command line's Ctrl-C.
    The defaults steer nothing."""

    stop: threading.Event | None = None  # once set: the run ends after the step in progress, saved
    # asked before each step: a new peak learning rate, or None for no change
    peak_lr: Callable[[], float | None] | None = None
    # asked before each step: what else happened since the last one (a pause, a resume), or None
    notes: Callable[[], str | None] | None = None
    on_save: Callable[[int], None] | None = None  # after each save of the bundle, given its step

    def stop_requested(self) -> bool:
        return self.stop is not None and self.stop.is_set()

    def next_settings(self, base: TrainConfig, now: TrainConfig) -> tuple[TrainConfig, str | None]:
        """The next step's settings and what happened before it (the record's event, which the
        loss curve marks). A new peak applies to the run's own settings `base`, so the schedule
        keeps its shape around it and min_lr follows it down, and comes back up with it, e.g.
        (cfg with lr=0.001, "paused 12 s; peak lr 0.003 → 0.001")."""
        cfg = _with_peak_lr(base, self.peak_lr() if self.peak_lr is not None else None)
        happened = [self.notes()] if self.notes is not None else []
        if cfg.lr != now.lr:
            happened.append(f"peak lr {now.lr:.3g} → {cfg.lr:.3g}")
        return cfg, "; ".join(e for e in happened if e) or None


def train(
    model: GPT,
    data: TokenData,
    cfg: TrainConfig,
    out: Path | None,
    tokenizer: Tokenizer,
    *,
    start: RunStart = RunStart(),
    old_data: TokenData | None = None,
    controls: RunControls = RunControls(),
) -> Iterator[StepRecord]:
    """Train `model` from step start.step + 1 to cfg.max_steps, yielding one StepRecord per step
    (and first, for a new run that samples, the step-0 record of its untrained weights' sample).

    `out` is the bundle folder (None: keep nothing on disk). `start` (RunStart) continues an
    earlier run; the default starts a new one. `old_data` (a fine-tune: the base model's own text)
    is evaluated beside `data` at every evaluation, as the record's old_val_loss. `controls`
    (RunControls) are the job runner's: stop, a live peak learning rate, notes, a call after each
    save.
    """
    if cfg.threads > 0:
        torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed + start.step)  # dropout; + step: a resumed run draws afresh
    device = next(model.parameters()).device
    accel.allow_fast_matmuls(device)
    gen = torch.Generator().manual_seed(cfg.seed + start.step)  # the training windows' draws
    opt = make_optimizer(model, cfg)
    params = [p for group in opt.param_groups for p in group["params"]]
    probe = HealthProbe(model)
    run = _Run.begin(model, tokenizer, cfg, out, start, controls.on_save)
    if start.step == 0:
        yield from run.step_zero()  # a snapshot and a sample of the untrained weights
    model.train()
    run.clock.start_lap()
    base = cfg  # a live peak applies to the run's own settings, so min_lr can rise again
    for step in range(start.step + 1, cfg.max_steps + 1):
        cfg, event = controls.next_settings(base, cfg)  # a live peak lr; a pause, say
        run.cfg = cfg  # what the bundle saves
        lr = lr_at(step, cfg, run.clock.time_fraction(cfg.time_limit))
        for group in opt.param_groups:
            group["lr"] = lr
        x, y = data.batch("train", cfg.batch_size, model.cfg.n_ctx, gen)  # (B, T) each, on the CPU
        x, y = x.to(device), y.to(device)
        with accel.mixed_precision(device):  # bf16 matmuls on a GPU; float32 weights and loss
            logits = model(x)  # (B, T, V)
        loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        if loss.requires_grad:  # not when a hook replaced the logits by constants
            loss.backward()  # a NaN loss gives NaN gradients: the check below skips the update
        # each layer's gradient and update (health.py): every health_every steps, and the first
        health = cfg.health_every > 0 and (step == 1 or step % cfg.health_every == 0)
        grads = probe.grad_norms() if health else None  # before clipping scales them
        clip = cfg.grad_clip if cfg.grad_clip > 0 else float("inf")
        norm_t = torch.nn.utils.clip_grad_norm_(params, clip)
        # One read from the device per step: a GPU runs ahead of Python until a value is read.
        loss_value, norm = torch.stack([loss.detach(), norm_t.float()]).tolist()
        problem = _bad_step(loss_value, norm)
        if problem:
            yield run.stop_on_nan(problem, step, step - 1, lr)  # this step's update was not taken
            return
        before = probe.weights() if health else None
        opt.step()
        moved = probe.update_ratios(before) if before is not None else None

        # The step is taken: its record, then evaluate, sample and save when due.
        elapsed = run.clock.lap(run.tokens_per_step)  # training seconds so far; the speed
        record = run.record(step, loss_value, lr, norm, elapsed)
        record.event, record.grad_layers, record.update_layers = event, grads, moved
        requested = controls.stop_requested()  # read once: it may be set at any moment
        last = step == cfg.max_steps or requested or 0 < cfg.time_limit <= elapsed
        if last or _due(step, cfg.eval_every):
            problem = run.validate(record, data, old_data)
            if problem:
                yield run.stop_on_nan(problem, step, step, lr)  # this step's update was taken
                return
        if cfg.sample_tokens > 0 and (last or _due(step, cfg.sample_every)):
            record.sample = sample_text(model, tokenizer, cfg.sample_tokens)
        if requested:
            record.stopped = f"stopped on request after step {step}"
        run.keep(record, last)  # a snapshot when due; the history; the bundle when evaluated
        with run.clock.paused():  # the consumer's time with the record is not training time
            yield record
        if last:
            return


def _due(step: int, every: int) -> bool:
    """Whether a thing done every `every` steps (0: never) is done at `step`."""
    return every > 0 and step % every == 0


def _nan_or_inf(x: float) -> str:
    return "NaN" if math.isnan(x) else "infinite"


def _bad_step(loss: float, grad_norm: float) -> str | None:
    """Why a step's update must not be taken (a loss or gradient that is not a finite number)."""
    if not math.isfinite(loss):
        return f"loss became {_nan_or_inf(loss)}"
    if not math.isfinite(grad_norm):
        return "the gradient became NaN or infinite"
    return None


def _with_peak_lr(cfg: TrainConfig, lr: float | None) -> TrainConfig:
    """cfg with the peak learning rate `lr` (and min_lr no higher than it); cfg itself if None."""
    if lr is None or lr == cfg.lr:
        return cfg
    return dataclasses.replace(cfg, lr=lr, min_lr=min(cfg.min_lr, lr))


class _Clock:
    """Training time and speed. The time a consumer spends between records (drawing a chart, say)
    counts neither in `elapsed` nor against the time limit, nor in the speed."""

    def __init__(self, earlier: float) -> None:
        self.earlier = earlier  # seconds of training in the runs this one continues
        self.t0 = time.perf_counter()
        self.held = 0.0  # seconds the consumer held on to records
        self.lap_start = self.t0
        self.rate = 0.0  # tokens per second, smoothed over recent steps

    def seconds(self) -> float:
        """Seconds of training so far, earlier runs included."""
        return self.earlier + time.perf_counter() - self.t0 - self.held

    def time_fraction(self, limit: float) -> float:
        """The share of a time limit used so far (0 without one)."""
        return self.seconds() / limit if limit > 0 else 0.0

    def start_lap(self) -> None:
        self.lap_start = time.perf_counter()

    def lap(self, tokens: int) -> float:
        """After a step of `tokens` tokens: fold its speed into `rate`; the training seconds."""
        now, elapsed = time.perf_counter(), self.seconds()
        step_rate = tokens / max(now - self.lap_start, 1e-9)
        self.rate = step_rate if self.rate == 0.0 else 0.9 * self.rate + 0.1 * step_rate
        return elapsed

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Around a yield: the time until the consumer asks for the next record is not counted,
        and the next step's lap starts when it does."""
        t_yield = time.perf_counter()
        yield
        self.lap_start = time.perf_counter()
        self.held += self.lap_start - t_yield


@dataclass
class _Run:
    """One run's bookkeeping around its steps: the bundle and its history, the snapshots, the last
    good weights to fall back on when a number stops being finite, and the clock."""

    model: GPT
    tokenizer: Tokenizer
    cfg: TrainConfig  # the settings now (a live peak lr changes them): what the bundle saves
    out: Path | None
    on_save: Callable[[int], None] | None
    start_step: int
    meta: dict[str, Any]
    history: list[dict[str, Any]]
    tokens_per_step: int
    tokens_before: int  # tokens seen by the runs this one continues
    snaps: set[int]  # the steps to keep a snapshot of (none without a bundle folder)
    snap_step: int | None  # the last snapshot kept
    good_state: dict[str, torch.Tensor]  # the weights to put back after a NaN (see _copy_state)
    good_step: int
    last_val: float | None  # the latest validation loss, for the bundle's meta
    clock: _Clock

    @classmethod
    def begin(
        cls,
        model: GPT,
        tokenizer: Tokenizer,
        cfg: TrainConfig,
        out: Path | None,
        start: RunStart,
        on_save: Callable[[int], None] | None,
    ) -> _Run:
        """The bookkeeping of a run that starts at `start`; its clock starts now."""
        history = [dict(r) for r in start.history]
        tokens_per_step = cfg.batch_size * model.cfg.n_ctx
        snaps = set(snapshot_steps(cfg.max_steps, cfg.n_snapshots)) | set(cfg.snapshot_at)
        snaps = snaps if out is not None else set()
        vals = [r["val_loss"] for r in history if r.get("val_loss") is not None]
        return cls(
            model=model,
            tokenizer=tokenizer,
            cfg=cfg,
            out=out,
            on_save=on_save,
            start_step=start.step,
            meta=dict(start.meta),
            history=history,
            tokens_per_step=tokens_per_step,
            tokens_before=int(start.meta.get("tokens_seen", start.step * tokens_per_step)),
            snaps=snaps,
            snap_step=max((s for s in snaps if s <= start.step), default=None),
            good_state=_copy_state(model),
            good_step=start.step,
            last_val=vals[-1] if vals else None,
            clock=_Clock(float(history[-1]["elapsed"]) if history else 0.0),
        )

    def step_zero(self) -> Iterator[StepRecord]:
        """A new run's step 0: a snapshot of the untrained weights (when snapshots include step
        0), and when the run samples, the record of their text (a fine-tune's: its base's)."""
        cfg = self.cfg
        if 0 in self.snaps:
            save_snapshot(self.out, self.model, 0)
            self.snap_step = 0
        if cfg.sample_tokens > 0 and cfg.max_steps > 0:
            text = sample_text(self.model, self.tokenizer, cfg.sample_tokens)
            first = StepRecord(0, None, 0.0, 0.0, round(self.clock.seconds(), 2), sample=text)
            self.history.append(first.to_dict())
            with self.clock.paused():
                yield first

    def record(self, step: int, loss: float, lr: float, norm: float, elapsed: float) -> StepRecord:
        """The record of a step taken, rounded: short numbers keep history.json small."""
        return StepRecord(
            step=step,
            train_loss=round(loss, 5),
            lr=float(f"{lr:.6g}"),
            tokens_per_s=round(self.clock.rate),
            elapsed=round(elapsed, 2),
            grad_norm=float(f"{norm:.4g}"),
        )

    def validate(
        self, record: StepRecord, data: TokenData, old_data: TokenData | None
    ) -> str | None:
        """Measure the validation loss into `record` (and a fine-tune's on its base's text) and
        keep these weights as the last good ones; what went wrong if the loss is not finite."""
        batch_size, n_batches = self.cfg.batch_size, self.cfg.eval_batches
        val = evaluate(self.model, data, batch_size, n_batches)
        if not math.isfinite(val):
            return f"validation loss became {_nan_or_inf(val)}"
        self.last_val = round(val, 5)
        record.val_loss, record.val_ppl = self.last_val, perplexity(val)
        if old_data is not None:
            record.old_val_loss = round(evaluate(self.model, old_data, batch_size, n_batches), 5)
        self.good_state, self.good_step = _copy_state(self.model), record.step
        return None

    def keep(self, record: StepRecord, last: bool) -> None:
        """Keep what a step leaves: a float16 snapshot of the weights at the snapshot steps and at
        the last (these become the last good weights too), the record in the history, and the
        bundle at an evaluation and at the end, so stopping at any time leaves a loadable model."""
        step = record.step
        if step in self.snaps or (last and self.snaps):
            save_snapshot(self.out, self.model, step)
            self.snap_step = step
            self.good_state, self.good_step = _copy_state(self.model), step
        self.history.append(record.to_dict())
        if record.val_loss is not None or last:
            self.save(step, record.stopped)

    def save(self, step: int, stopped: str | None = None) -> None:
        """Write the bundle (nothing without a folder), its meta saying where the run is."""
        if self.out is None:
            return
        info = {
            **self.meta,
            "step": step,
            "val_loss": self.last_val,
            "wall_time": round(self.clock.seconds(), 2),
            "tokens_seen": self.tokens_before + (step - self.start_step) * self.tokens_per_step,
        }
        if stopped:
            info["stopped"] = stopped
        save_bundle(self.out, self.model, self.tokenizer, self.cfg.to_dict(), self.history, info)
        if self.on_save is not None:
            self.on_save(step)

    def stop_on_nan(self, problem: str, step: int, kept_if_finite: int, lr: float) -> StepRecord:
        """Put back the last good weights (those of `kept_if_finite` if the weights now are all
        finite), save them, and say what happened in the run's last record."""
        elapsed = self.clock.seconds()
        if _finite_params(self.model):
            kept = kept_if_finite
        else:
            _put_back(self.model, self.good_state)
            kept = self.good_step
        self.history[:] = [r for r in self.history if r["step"] <= kept]
        where = f"kept the weights of step {kept}"
        if self.snap_step is not None:
            where += f" (last snapshot: step {self.snap_step})"
        reason = f"{problem} at step {step}; {where}"
        record = StepRecord(
            step=step,
            train_loss=None,
            lr=lr,
            tokens_per_s=round(self.clock.rate, 1),
            elapsed=round(elapsed, 3),
            stopped=reason,
        )
        self.history.append(record.to_dict())
        self.save(kept, reason)
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
