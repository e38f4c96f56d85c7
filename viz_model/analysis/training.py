"""A training run's history (history.json: one record per step) made ready to draw.

- `curves(history, x, max_points)`: train loss, validation loss and learning rate against step,
  tokens seen or seconds; a long train curve is averaged into at most `max_points` bins, because a
  45-minute run logs 11,000 steps and a browser needs a few hundred points to draw the same line.
- `samples(history)`: the text sampled at each sample step, in order; `samples_note` says what
  they span (step 0, the untrained model, only where the run kept a sample there).
- `val_loss_at(history, meta, step)`: the validation loss of the weights at a training step (the
  last evaluation by then, else the final step's, saying so); `loss_step_label` names its step.
- `bundle_baselines(bundle)`: the counting models' validation loss on the bundle's own data,
  split as it was for training, so its curve can be read against them.
- `update_rule(cfg)`: the update the loop takes (its optimiser, AdamW or SGD, the schedule, the
  clipping) as LaTeX with the run's own numbers, read from the same TrainConfig the loop reads.

Records are dicts as `train.StepRecord.to_dict` writes them: step, train_loss, lr, tokens_per_s,
elapsed, and on some steps val_loss, val_ppl, sample, stopped. Not here: charts, files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from viz_model.analysis.claims import Claim
from viz_model.bundles.checkpoint import Bundle
from viz_model.model.config import TrainConfig
from viz_model.text import ngram
from viz_model.text.data import VAL_FRACTION, DataError, TokenData, load_text

_BASELINES = ("blind guess", "unigram", "bigram")  # Baselines.as_dict() keys, in field order
X_AXES = {"step": "step", "tokens": "tokens seen", "elapsed": "seconds"}
MAX_POINTS = 400


@dataclass(frozen=True)
class Curves:
    """Arrays for one run. train_x/train_loss/lr are binned means; val_x/val_loss every evaluation."""

    x_label: str
    train_x: np.ndarray
    train_loss: np.ndarray
    lr: np.ndarray
    val_x: np.ndarray
    val_loss: np.ndarray
    events: tuple[tuple[float, str], ...] = ()  # (x, what changed before that step), in order


def _has_x(record: dict, x: str) -> bool:
    return isinstance(record.get("step" if x == "tokens" else x), int | float)


def _x_values(records: list[dict], x: str, tokens_per_step: int) -> np.ndarray:
    if x == "tokens":
        return np.array([r["step"] * tokens_per_step for r in records], dtype=float)
    return np.array([r[x] for r in records], dtype=float)


def binned_mean(values: np.ndarray, max_points: int) -> np.ndarray:
    """Means of consecutive equal bins so at most max_points remain (unchanged when short).

    >>> binned_mean(np.arange(6.0), 3)
    array([0.5, 2.5, 4.5])
    """
    values = np.asarray(values, dtype=float)
    if values.size <= max_points:
        return values
    edges = np.linspace(0, values.size, max_points + 1).astype(int)
    sums = np.add.reduceat(values, edges[:-1])
    return sums / np.diff(edges)


def curves(
    history: list[dict], x: str = "step", tokens_per_step: int = 1, max_points: int = MAX_POINTS
) -> Curves:
    """The run's curves against x ("step", "tokens" or "elapsed"); tokens = step * tokens_per_step.

    Records without a finite train loss (a NaN step) are left out of the train curve, and records
    without the x value (an old history without seconds) are left out of both. `events` are the
    records' events (a new peak learning rate, a pause, a resume, more training) where they
    happened, for the chart to mark.
    """
    if x not in X_AXES:
        raise ValueError(f"x must be one of {', '.join(X_AXES)}; got {x!r}")
    records = [r for r in history if isinstance(r, dict) and "step" in r and _has_x(r, x)]
    train = [r for r in records if isinstance(r.get("train_loss"), int | float)]
    val = [r for r in records if isinstance(r.get("val_loss"), int | float)]
    marked = [r for r in records if isinstance(r.get("event"), str) and r["event"]]
    return Curves(
        x_label=X_AXES[x],
        train_x=binned_mean(_x_values(train, x, tokens_per_step), max_points),
        train_loss=binned_mean(np.array([r["train_loss"] for r in train], float), max_points),
        lr=binned_mean(np.array([r.get("lr", np.nan) for r in train], float), max_points),
        val_x=_x_values(val, x, tokens_per_step),
        val_loss=np.array([r["val_loss"] for r in val], dtype=float),
        events=tuple(
            (float(at), str(r["event"]))
            for r, at in zip(marked, _x_values(marked, x, tokens_per_step), strict=True)
        ),
    )


def samples(history: list[dict]) -> list[tuple[int, str]]:
    """(step, text) of every record that carries a sample, in step order."""
    found = [
        (int(r["step"]), str(r["sample"]))
        for r in history
        if isinstance(r, dict) and isinstance(r.get("sample"), str) and "step" in r
    ]
    return sorted(found)


def samples_note(steps: list[int], finetune: bool = False) -> tuple[str, str | None]:
    """(caption, slider help) for the samples at `steps` (in order), saying what the slider
    really spans: step 0 is the untrained model (a fine-tune's: its base) only when a sample was
    kept there; runs trained before the loop kept one start later, and one sample has no slider.

    >>> samples_note([250, 500])[1]
    'From step 250 (the earliest sample this run kept) to step 500.'
    """
    start = "Text sampled from the weights at {}, each time from the same start, a newline"
    if not steps:
        return "This run recorded no samples.", None
    if len(steps) == 1:
        return start.format(f"step {steps[0]:,}") + ": the only sample this run kept.", None
    first, last = steps[0], steps[-1]
    span = f"{len(steps)} samples, steps {first:,} to {last:,}"
    if first == 0:
        before = "the base model, before fine-tuning" if finetune else "random weights"
        return (
            start.format("each step")
            + f" ({span}): drag back to step 0 ({before}) and forward again to see what "
            + ("fine-tuning" if finetune else "training")
            + " changed.",
            f"Step 0 is {before}; step {last:,} the last sample.",
        )
    return (
        start.format("each step")
        + f" ({span}): this run kept no sample of "
        + ("the base model before fine-tuning" if finetune else "its untrained weights")
        + f", so the earliest text is already {first:,} steps into "
        + ("fine-tuning" if finetune else "training")
        + f". Drag from step {first:,} forward to see what the later steps changed.",
        f"From step {first:,} (the earliest sample this run kept) to step {last:,}.",
    )


def bundle_baselines(bundle: Bundle) -> ngram.Baselines | None:
    """Blind, unigram and bigram validation losses on the text the bundle was trained on, with its
    tokenizer and its validation split; None when that text cannot be found any more (an uploaded
    file since deleted) or the bundle does not say what it was trained on."""

    stored = bundle.meta.get("baselines")  # written by run_settings.new_run since issue 10
    if isinstance(stored, dict) and all(isinstance(stored.get(k), float) for k in _BASELINES):
        return ngram.Baselines(
            *(stored[k] for k in _BASELINES), k_unigram=math.nan, k_bigram=math.nan
        )
    data = training_data(bundle)
    if data is None:
        return None
    return ngram.baselines(data.train.numpy(), data.val.numpy(), bundle.tokenizer.vocab_size)


def training_data(bundle: Bundle) -> TokenData | None:
    """The bundle's own text as tokens, split as it was trained (train and validation); None when
    the bundle does not say what it was trained on or the text cannot be found any more."""
    source = bundle.meta.get("data")
    if not isinstance(source, dict):
        return None
    try:
        text = load_text(source)
        return TokenData.from_text(text, bundle.tokenizer, source.get("val_fraction", VAL_FRACTION))
    except (OSError, KeyError, TypeError, ValueError, DataError):
        return None


def final_step(history: list[dict], meta: dict) -> int | None:
    """The step the bundle's final weights were saved at: meta["step"], else the last record's."""
    if isinstance(meta.get("step"), int):
        return meta["step"]
    steps = [r["step"] for r in history if isinstance(r, dict) and isinstance(r.get("step"), int)]
    return max(steps) if steps else None


def training_steps(snapshots: list[int], final: int | None) -> list[int]:
    """The steps a model can be looked at, in order: its snapshots before the final step, then
    the final step; none when it kept no snapshot before its final weights.

    >>> training_steps([0, 5, 40], 40), training_steps([40], 40), training_steps([0, 5], None)
    ([0, 5, 40], [], [])
    """
    if final is None:
        return []
    earlier = [s for s in snapshots if s < final]
    return [*earlier, final] if earlier else []


def losses_at(history: list[dict], step: int) -> tuple[float | None, float | None]:
    """(train loss of the record at `step`, validation loss of the last evaluation at or before
    it); None where there is none (step 0 is before any training step).

    >>> losses_at([{"step": 1, "train_loss": 4.0}, {"step": 2, "train_loss": 3.0,
    ...   "val_loss": 3.5}, {"step": 3, "train_loss": 2.0}], 3)
    (2.0, 3.5)
    """
    train = val = None
    for r in history:
        if not isinstance(r, dict) or not isinstance(r.get("step"), int) or r["step"] > step:
            continue
        if r["step"] == step and isinstance(r.get("train_loss"), int | float):
            train = float(r["train_loss"])
        if isinstance(r.get("val_loss"), int | float):
            val = float(r["val_loss"])
    return train, val


@dataclass(frozen=True)
class RecordedLoss:
    """A validation loss from a run's records, in nats per token, and whose it is: `step` the
    evaluation's step (None when the run does not say); `of_final` the run's last evaluation,
    standing for the final weights (also when the step shown came before any evaluation)."""

    loss: float
    step: int | None
    of_final: bool


def val_loss_at(history: list[dict], meta: dict, step: int | None = None) -> RecordedLoss | None:
    """The validation loss of the weights at training step `step` (None: the final weights): the
    last evaluation at or before it. Before the first evaluation (step 0 is always) the run's last
    one stands in, marked `of_final`, so a page says it is the final step's; the last one is the
    history's, else meta["val_loss"] at the final step. None when the run recorded none.

    >>> h = [{"step": 0}, {"step": 100, "val_loss": 2.5}, {"step": 200, "val_loss": 2.0}]
    >>> val_loss_at(h, {}, 150), val_loss_at(h, {}, 0) == val_loss_at(h, {}, None)
    (RecordedLoss(loss=2.5, step=100, of_final=False), True)
    """
    evals = [
        (int(r["step"]), float(r["val_loss"]))
        for r in history
        if isinstance(r, dict)
        and isinstance(r.get("step"), int)
        and isinstance(r.get("val_loss"), int | float)
    ]
    evals.sort(key=lambda e: e[0])  # stable: of two records of one step, the later counts
    final = final_step(history, meta)
    if step is not None and (final is None or step < final):
        before = [e for e in evals if e[0] <= step]
        if before:
            return RecordedLoss(before[-1][1], before[-1][0], False)
    if evals:
        return RecordedLoss(evals[-1][1], evals[-1][0], True)
    stored = meta.get("val_loss")
    return RecordedLoss(float(stored), final, True) if isinstance(stored, int | float) else None


def tokens_at(meta: dict, train_config: dict | None, n_ctx: int, step: int) -> int | None:
    """Training tokens read by `step`: the run's final count (meta tokens_seen at meta step) less
    a batch of windows for each later step (the training loop counts them so); None where the
    bundle does not record them.

    >>> tokens_at({"step": 650, "tokens_seen": 665_600}, {"batch_size": 16}, 64, 100)
    102400
    """
    seen, final = meta.get("tokens_seen"), meta.get("step")
    batch = (train_config or {}).get("batch_size")
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (seen, final, batch)):
        return None
    tokens = seen - (final - step) * batch * n_ctx
    return tokens if 0 <= tokens <= seen and step <= final else None


def loss_step_label(found: RecordedLoss, shown: int | None) -> str:
    """Whose a recorded loss is, for a page showing the weights at step `shown` (None: the final
    weights): "" where it is theirs, "final step 650" where the final weights' stands in for a
    step before any evaluation, "step 300" for the last evaluation before the step shown.

    >>> loss_step_label(RecordedLoss(2.0, 650, True), 0), loss_step_label(RecordedLoss(2.5, 300,
    ...   False), 316), loss_step_label(RecordedLoss(2.0, 650, True), None)
    ('final step 650', 'step 300', '')
    """
    if shown is None:
        return ""
    if found.of_final:
        return "final step" + ("" if found.step is None else f" {found.step:,}")
    return f"step {found.step:,}"


# ---- the update the loop takes ----------------------------------------------------------------


def tex_number(x: float) -> str:
    r"""A number for LaTeX: 0.9, 0.1, 3 \times 10^{-3}, 10^{-8}.

    >>> tex_number(0.99), tex_number(3e-3), tex_number(1e-8), tex_number(1.0)
    ('0.99', '3 \\times 10^{-3}', '10^{-8}', '1')
    """
    if x == 0 or 1e-2 <= abs(x) < 1e4:
        return f"{x:g}"
    mantissa, exponent = f"{x:.2e}".split("e")
    power = f"10^{{{int(exponent)}}}"
    return power if float(mantissa) == 1 else f"{float(mantissa):g} \\times {power}"


@dataclass(frozen=True)
class UpdateRule:
    """The update as LaTeX lines, and the numbers it was written from (TrainConfig's, and eps)."""

    lines: tuple[str, ...]
    numbers: dict


OPTIMIZER_NAMES = {"adamw": "AdamW", "sgd": "SGD with momentum"}


def optimizer_name(cfg: TrainConfig) -> str:
    """How the page names the run's optimiser: "AdamW", "SGD with momentum" or "SGD"."""
    if cfg.optimizer == "sgd" and cfg.momentum == 0:
        return "SGD"
    return OPTIMIZER_NAMES[cfg.optimizer]


def update_rule(cfg: TrainConfig, eps: float, timed: bool = False) -> UpdateRule:
    """The update of the run's optimiser (training/optim.py) with this run's numbers: the clipped
    gradient, then AdamW's two running means with their bias correction and decoupled weight decay,
    or SGD's decay in the gradient and its momentum; then the warm-up + cosine schedule (`timed`:
    the cosine follows the share of the run's time used when that is further along)."""
    n = tex_number
    clip = cfg.grad_clip
    grad = (
        rf"g_t = \nabla_\theta L \cdot \min\!\Big(1,\ \frac{{{n(clip)}}}{{\lVert \nabla_\theta L"
        rf" \rVert}}\Big)"
        if clip > 0
        else r"g_t = \nabla_\theta L"
    )
    steps = _sgd_lines(cfg) if cfg.optimizer == "sgd" else _adamw_lines(cfg, eps)
    numbers = {
        "optimizer": cfg.optimizer,
        "weight_decay": cfg.weight_decay,
        "grad_clip": clip,
        "lr": cfg.lr,
        "min_lr": cfg.min_lr,
        "warmup_steps": cfg.warmup_steps,
        "max_steps": cfg.max_steps,
    }
    if cfg.optimizer == "sgd":
        numbers["momentum"] = cfg.momentum
    else:
        numbers.update(beta1=cfg.beta1, beta2=cfg.beta2, eps=eps)
    return UpdateRule((grad, *steps, *_schedule_lines(cfg, timed)), numbers)


def _adamw_lines(cfg: TrainConfig, eps: float) -> tuple[str, ...]:
    n = tex_number
    b1, b2, wd = cfg.beta1, cfg.beta2, cfg.weight_decay
    moments = (
        rf"m_t = {n(b1)}\, m_{{t-1}} + {n(1 - b1)}\, g_t,\qquad "
        rf"v_t = {n(b2)}\, v_{{t-1}} + {n(round(1 - b2, 12))}\, g_t^2"
    )
    step = (
        rf"\theta_t = \theta_{{t-1}} - \eta_t \left( \frac{{m_t / (1 - {n(b1)}^t)}}"
        rf"{{\sqrt{{v_t / (1 - {n(b2)}^t)}} + {n(eps)}}} + {n(wd)}\, \theta_{{t-1}} \right)"
    )
    return moments, step


def _sgd_lines(cfg: TrainConfig) -> tuple[str, ...]:
    """optim.SGD: decay added to the gradient (as torch.optim.SGD), then the momentum buffer b."""
    n = tex_number
    wd, mu = cfg.weight_decay, cfg.momentum

    def decayed(t: str, before: str) -> str:  # the gradient at step t with the decay's pull
        return rf"g_{t} + {n(wd)}\, \theta_{{{before}}}" if wd > 0 else f"g_{t}"

    if mu == 0:
        return (rf"\theta_t = \theta_{{t-1}} - \eta_t \big({decayed('t', 't-1')}\big)",)
    buffer = rf"b_t = {n(mu)}\, b_{{t-1}} + {decayed('t', 't-1')},\qquad b_1 = {decayed('1', '0')}"
    return buffer, r"\theta_t = \theta_{t-1} - \eta_t\, b_t"


def _schedule_lines(cfg: TrainConfig, timed: bool) -> tuple[str, ...]:
    """The learning rate: the linear warm-up (or none), then the cosine to min_lr."""
    n = tex_number
    progress = (
        r"\tfrac{t - W}{T - W}"
        if not timed
        else r"\max\!\big(\tfrac{t - W}{T - W},\ \tfrac{\text{time used}}{\text{time allowed}}\big)"
    )
    total = f"{cfg.max_steps:,}".replace(",", "{,}")
    if cfg.warmup_steps > 0:
        warmup = (
            rf"\eta_t = {n(cfg.lr)} \cdot t / W \quad \text{{for }} t \le W = {cfg.warmup_steps}"
        )
    else:
        warmup = r"\text{no warm-up: } W = 0"
    cosine = (
        rf"\eta_t = {n(cfg.min_lr)} + \tfrac12 ({n(cfg.lr)} - {n(cfg.min_lr)})"
        r"\big(1 + \cos(\pi\, p_t)\big) \quad \text{for } t > W"
    )
    where = rf"p_t = {progress},\quad T = {total}"
    return warmup, cosine, where


# ---- claims about a run (docs/ARCHITECTURE.md, Claims) -------------------------------------------------

MIN_STEPS_TO_COMPARE = 20  # fewer steps than this: the start-up noise would decide the speed
LOSS_CHANGE = 0.02  # nats: a smaller change of the validation loss is not called a rise or a fall


def achieved_speed(history: list[dict]) -> tuple[float, int] | None:
    """(steps per second of training time, steps counted) between the first and last records
    that have a step and an elapsed time; None with fewer than two. Training time is the loop's
    clock: evaluations and samples count, the start-up and any pause do not."""
    recs = [
        r
        for r in history
        if isinstance(r, dict)
        and isinstance(r.get("step"), int)
        and isinstance(r.get("elapsed"), int | float)
    ]
    if len(recs) < 2:
        return None
    steps = recs[-1]["step"] - recs[0]["step"]
    span = float(recs[-1]["elapsed"]) - float(recs[0]["elapsed"])
    if steps <= 0 or span <= 0:
        return None
    return steps / span, steps


def _rate(x: float) -> str:
    return f"{x:.3g}"


def speed_headline(history: list[dict], tokens_per_step: int) -> str:
    """The run's speed for its headline, the statistic its speed claim uses (`achieved_speed`:
    steps over training time, first record to last), with the tokens it means, e.g.
    "2.58 steps/s · 2,642 tokens/s"; "– tokens/s" before two records. Not the last step's
    smoothed rate (records' tokens_per_s), which a page beside the run's average contradicts."""
    found = achieved_speed(history)
    if found is None:
        return "– tokens/s"
    rate = found[0]
    return f"{_rate(rate)} steps/s · {rate * tokens_per_step:,.0f} tokens/s"


def speed_claim(low: float, high: float, achieved: float, steps: int) -> Claim:
    """Did the run keep to the speed estimated before Start (low..high steps a second)?"""
    numbers = {
        "promised_low": low,
        "promised_high": high,
        "achieved": achieved,
        "steps": steps,
        "min_steps": MIN_STEPS_TO_COMPARE,
    }
    promised = f"{_rate(low)}–{_rate(high)} steps a second"
    if steps < MIN_STEPS_TO_COMPARE:
        return Claim(
            f"The estimate before Start was {promised}; too few steps so far "
            f"({steps} of {MIN_STEPS_TO_COMPARE}) to compare it with the run.",
            False,
            numbers,
        )
    did = f"the run did {_rate(achieved)} over {steps:,} steps"
    # Compared and divided as printed (3 significant figures), so a reader who checks the
    # sentence against its own numbers finds the same verdict and percentage.
    low, high, achieved = (float(_rate(x)) for x in (low, high, achieved))
    if low <= achieved <= high:
        return Claim(f"The estimate held: it said {promised} and {did}.", True, numbers)
    if achieved < low:
        return Claim(
            f"The run was slower than estimated: the estimate said {promised}, timed with nothing "
            f"else running, and {did} ({achieved / low:.0%} of the low end). Whatever else runs "
            "on this machine (the class's pages, another run) shares its cores.",
            False,
            numbers,
        )
    return Claim(
        f"The run was faster than estimated: the estimate said {promised} and {did} "
        f"({achieved / high:.0%} of the high end).",
        False,
        numbers,
    )


def _evaluations(history: list[dict]) -> list[tuple[int, float]]:
    return [
        (int(r["step"]), float(r["val_loss"]))
        for r in history
        if isinstance(r, dict)
        and isinstance(r.get("step"), int)
        and isinstance(r.get("val_loss"), int | float)
        and math.isfinite(r["val_loss"])
    ]


def loss_claim(history: list[dict]) -> Claim:
    """Did the validation loss fall from the first evaluation to the last (by more than
    LOSS_CHANGE nats)? The neutral sentence says what it did instead."""
    evals = _evaluations(history)
    if len(evals) < 2:
        return Claim(
            "Too few evaluations of the validation loss to say how it moved.",
            False,
            {"evaluations": len(evals), "threshold": LOSS_CHANGE},
        )
    (s0, first), (s1, last) = evals[0], evals[-1]
    numbers = {
        "first_step": s0,
        "first": first,
        "last_step": s1,
        "last": last,
        "threshold": LOSS_CHANGE,
    }
    span = f"from {first:.3f} at step {s0:,} to {last:.3f} at step {s1:,}"
    if last < first - LOSS_CHANGE:
        return Claim(f"The validation loss fell {span}.", True, numbers)
    if last > first + LOSS_CHANGE:
        return Claim(f"The validation loss rose {span}.", False, numbers)
    return Claim(
        f"The validation loss hardly moved: {span} (less than {LOSS_CHANGE} nats).",
        False,
        numbers,
    )


def baseline_claim(
    history: list[dict], baselines: dict[str, float] | None, causal: bool = True
) -> Claim:
    """Where the last validation loss sits among the counting baselines (same validation text):
    below the bigram line = predicts better than counting pairs (the claim); else which line it
    has not yet passed. A model without a causal mask sees the token it is scored on, so its loss
    measures copying and is compared with nothing (causal=False)."""
    evals = _evaluations(history)
    if evals and not causal:
        step, last = evals[-1]
        return Claim(
            f"At step {step:,} the validation loss is {last:.3f}, but this model has no causal "
            "mask: each position also sees the token it is scored on, so the loss measures "
            "copying, not predicting, and is not compared with counting.",
            False,
            {"step": step, "val_loss": last, "causal": 0.0},
        )
    if not evals or not baselines or not all(k in baselines for k in _BASELINES):
        return Claim(
            "No counting baseline to compare with (the training text is not known, or no "
            "evaluation yet).",
            False,
            {},
        )
    step, last = evals[-1]
    blind, unigram, bigram = (float(baselines[k]) for k in _BASELINES)
    numbers = {"step": step, "val_loss": last, "blind": blind, "unigram": unigram, "bigram": bigram}
    at = f"At step {step:,} the validation loss is {last:.3f}"
    if last < bigram:
        return Claim(
            f"{at}, below the bigram line ({bigram:.3f}): it predicts the next token better than "
            "counting which token follows which.",
            True,
            numbers,
        )
    if last < unigram:
        return Claim(
            f"{at}: below the unigram line ({unigram:.3f}) but not the bigram's ({bigram:.3f}), "
            "so it has learned how often tokens occur but predicts no better than counting pairs.",
            False,
            numbers,
        )
    if last < blind:
        return Claim(
            f"{at}: better than a blind guess ({blind:.3f}) but not yet below the unigram line "
            f"({unigram:.3f}), so it predicts no better than counting how often each token occurs.",
            False,
            numbers,
        )
    return Claim(
        f"{at}: no better than a blind guess over the vocabulary ({blind:.3f}).", False, numbers
    )
