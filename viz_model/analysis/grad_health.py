"""Gradient health of a run, read back from its history, and what may be said about it.

The loop records, at every step, the whole gradient's norm before clipping (`grad_norm`), and
every TrainConfig.health_every steps each layer's gradient norm before clipping (`grad_layers`)
and update ratio ||w_after - w_before|| / ||w_before|| (`update_layers`); training/health.py says
what a layer is (embed, blocks.{l}, unembed). A history without them (a bundle trained before they
were recorded, a GPT-2 folder) has none: `grad_health` returns None, and every claim says so.

    h = grad_health(bundle.history, grad_clip=1.0)
    depth_claim(h).text      # "the gradient reaching block 0 is 14 times smaller than at block 3..."

Claims (analysis/claims.py), each under a stated condition with a neutral sentence otherwise:
- `depth_claim`: vanishing (or growing) across depth: the top block's median gradient norm over
  the last quarter of the records against block 0's, beyond a factor DEPTH_RATIO. Blocks have the
  same shape, so their norms compare like for like; embeddings and the output layer are not.
- `growth_claim`: exploding over time: the median norm of the last quarter of the steps against
  the first quarter's, beyond GROWTH_RATIO, or a gradient that became NaN or infinite.
- `clipping_claim`: on how many steps the norm passed the clipping cap (clipping acted).
- `update_claim`: the blocks' update ratio where the learning rate peaked, against the rule of
  thumb of about 1e-3 (Stanford's CS231n notes), beyond a factor UPDATE_BAND either way; steps
  that large are called a risk to stability only where the run's own record shows one (its
  smoothed training loss rose over LOSS_RISE above its lowest, `loss_rise`, or the gradient
  exploded), else the sentence says they did not destabilise this run.

Not here: measuring (training/health.py), charts (ui/charts/grad_health.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from viz_model.analysis.claims import Claim, times
from viz_model.analysis.training import MAX_POINTS, binned_mean

DEPTH_RATIO = 10.0  # top block / block 0: beyond this factor, "vanishing" (or "growing")
GROWTH_RATIO = 10.0  # last quarter / first quarter of the run: beyond this, "exploding"
RULE_OF_THUMB = 1e-3  # a healthy ||dw|| / ||w|| per step (CS231n, "Babysitting the learning")
UPDATE_BAND = 10.0  # a factor either way of the rule of thumb before an update is called large
MIN_STEPS = 8  # fewer recorded steps than this: too few to compare the start with the end
LOSS_RISE = 0.1  # nats the smoothed training loss may rise above its lowest before: "unstable"
LOSS_WINDOW = 50  # the loss is smoothed as medians of about 1/LOSS_WINDOW of the run (5 steps+)
NOT_RECORDED = (
    "This run recorded no gradient health: it was trained before the app recorded it, or "
    "with --health-every 0."
)
NONFINITE = "gradient became NaN or infinite"  # loop.py's words when it stops on one


@dataclass(frozen=True)
class GradHealth:
    """A run's gradient health as arrays. norm_* at every step; the rest at the health steps."""

    norm_steps: np.ndarray  # (N,) steps with a recorded gradient norm
    norm: np.ndarray  # (N,) the whole gradient's norm before clipping
    clip: float  # the clipping cap (0: clipping off)
    steps: np.ndarray  # (S,) steps with per-layer records
    layers: tuple[str, ...]  # embed, blocks.0, ..., unembed
    grad: np.ndarray  # (S, G) each layer's gradient norm before clipping (NaN: not recorded)
    update: np.ndarray  # (S, G) each layer's ||dw|| / ||w|| (NaN: not recorded)
    lr: np.ndarray  # (S,) the learning rate of each health step
    exploded_at: int | None = None  # the step whose gradient became NaN or infinite, if any
    loss_steps: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (L,) steps with a loss
    loss: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (L,) their training loss

    @property
    def blocks(self) -> list[int]:
        """Column indices of the transformer blocks, input to output."""
        return [i for i, name in enumerate(self.layers) if _layer_key(name)[0] == 1]


def layer_label(name: str) -> str:
    """How a page names a layer: "blocks.3" -> "block 3", "embed" -> "embeddings"."""
    if _layer_key(name)[0] == 1:
        return f"block {name[7:]}"
    return {"embed": "embeddings", "unembed": "final LN + unembedding"}.get(name, name)


def _number(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _layer_key(name: str) -> tuple[int, int, str]:
    """Sorts layers in model order: embed, blocks.0, blocks.1, ..., anything else, unembed."""
    if name == "embed":
        return (0, 0, "")
    if name.startswith("blocks.") and name[7:].isdigit():
        return (1, int(name[7:]), "")
    return (3, 0, "") if name == "unembed" else (2, 0, name)


def _layer_order(records: list[dict]) -> tuple[str, ...]:
    """Every layer named in the records, in model order."""
    return tuple(sorted({str(name) for r in records for name in r["grad_layers"]}, key=_layer_key))


def _table(records: list[dict], field: str, layers: tuple[str, ...]) -> np.ndarray:
    """(records x layers) of one per-layer field; NaN where a value is missing or not a number."""
    rows = []
    for r in records:
        values = r.get(field) if isinstance(r.get(field), dict) else {}
        rows.append([float(v) if _number(v := values.get(name)) else np.nan for name in layers])
    return np.array(rows, dtype=float).reshape(len(records), len(layers))


def grad_health(history: list[dict], grad_clip: float = 0.0) -> GradHealth | None:
    """The run's gradient health, or None when its history recorded none. `grad_clip` is the
    run's cap (TrainConfig.grad_clip; 0: off)."""
    records = [r for r in history if isinstance(r, dict) and isinstance(r.get("step"), int)]
    normed = [r for r in records if _number(r.get("grad_norm")) and math.isfinite(r["grad_norm"])]
    layered = [r for r in records if isinstance(r.get("grad_layers"), dict) and r["grad_layers"]]
    exploded = next(
        (
            r["step"]
            for r in records
            if isinstance(r.get("stopped"), str) and NONFINITE in r["stopped"]
        ),
        None,
    )
    if not normed and not layered:
        return None
    layers = _layer_order(layered) if layered else ()
    lossy = [r for r in records if _number(r.get("train_loss")) and math.isfinite(r["train_loss"])]
    return GradHealth(
        norm_steps=np.array([r["step"] for r in normed], dtype=float),
        norm=np.array([r["grad_norm"] for r in normed], dtype=float),
        clip=float(grad_clip),
        steps=np.array([r["step"] for r in layered], dtype=float),
        layers=layers,
        grad=_table(layered, "grad_layers", layers),
        update=_table(layered, "update_layers", layers),
        lr=np.array([r.get("lr", np.nan) for r in layered], dtype=float),
        exploded_at=exploded,
        loss_steps=np.array([r["step"] for r in lossy], dtype=float),
        loss=np.array([r["train_loss"] for r in lossy], dtype=float),
    )


def norm_curve(h: GradHealth, max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(steps, whole-gradient norms) for drawing: a long run averaged into at most max_points
    bins, as the loss curve is (analysis/training.binned_mean)."""
    return binned_mean(h.norm_steps, max_points), binned_mean(h.norm, max_points)


def _quarter(n: int) -> int:
    return max(1, n // 4)


def _steps(a: float, b: float) -> str:
    return f"step {int(a):,}" if a == b else f"steps {int(a):,}–{int(b):,}"


def depth_claim(h: GradHealth | None) -> Claim:
    """Does the gradient vanish (or grow) on its way down the blocks? Over the last quarter of
    the per-layer records: the top block's median norm over block 0's, beyond DEPTH_RATIO."""
    if h is None or h.steps.size == 0:
        return Claim(NOT_RECORDED, False, {})
    blocks = h.blocks
    if len(blocks) < 2:
        return Claim(
            "This model has one block: there is no depth for the gradient to fade across.",
            False,
            {"blocks": len(blocks)},
        )
    late = slice(h.steps.size - _quarter(h.steps.size), None)
    bottom = float(np.nanmedian(h.grad[late, blocks[0]]))
    top = float(np.nanmedian(h.grad[late, blocks[-1]]))
    top_name = layer_label(h.layers[blocks[-1]])
    over = (
        f"Over {_steps(h.steps[late][0], h.steps[-1])} (the last quarter of the records), the "
        f"gradient reaching block 0 has a median norm of {bottom:.3g} and {top_name}'s {top:.3g}"
    )
    steps = {"first_step": float(h.steps[late][0]), "last_step": float(h.steps[-1])}
    return across_depth(over, bottom, top, top_name, steps)


def across_depth(over: str, bottom: float, top: float, top_name: str, numbers: dict) -> Claim:
    """Block 0's gradient norm against the top block's, beyond DEPTH_RATIO either way: vanishing,
    growing, or neither. `over` is the sentence's start, saying which norms were compared (the
    medians of which records); `numbers` what it states besides. Used by `depth_claim` and by
    the depth sweep's claim (analysis/labs/sweeps.py)."""
    ratio = top / bottom if bottom > 0 else math.inf
    numbers = {**numbers, "bottom": bottom, "top": top, "ratio": ratio, "threshold": DEPTH_RATIO}
    if ratio >= DEPTH_RATIO:
        return Claim(
            f"{over}: the gradient reaching block 0 is {times(ratio)} times smaller than at the "
            "top: it **vanishes** on its way down.",
            True,
            numbers,
        )
    if ratio <= 1 / DEPTH_RATIO:
        return Claim(
            f"{over}: the gradient reaching block 0 is {times(1 / ratio)} times larger than at the "
            "top: it **grows** on its way down.",
            True,
            numbers,
        )
    return Claim(
        f"{over}: within a factor of {DEPTH_RATIO:.0f} of each other ({top_name}'s is "
        f"{ratio:.2g} times block 0's), so it neither vanishes nor grows much across depth.",
        False,
        numbers,
    )


def growth_claim(h: GradHealth | None) -> Claim:
    """Is the gradient exploding? It became NaN or infinite, or its median norm over the last
    quarter of the steps is GROWTH_RATIO times the first quarter's or more."""
    if h is None or (h.norm.size == 0 and h.exploded_at is None):
        return Claim(NOT_RECORDED, False, {})
    if h.exploded_at is not None:
        return Claim(
            f"The gradient became NaN or infinite at step {h.exploded_at:,}: it **exploded**, "
            "and the run stopped there.",
            True,
            {"exploded_at": float(h.exploded_at)},
        )
    n = h.norm.size
    if n < MIN_STEPS:
        return Claim(
            f"Too few steps recorded ({n} of {MIN_STEPS}) to say how the gradient norm moved.",
            False,
            {"steps": n, "min_steps": MIN_STEPS},
        )
    q = _quarter(n)
    first, last = float(np.median(h.norm[:q])), float(np.median(h.norm[-q:]))
    ratio = last / first if first > 0 else math.inf
    numbers = {"first": first, "last": last, "ratio": ratio, "threshold": GROWTH_RATIO}
    span = (
        f"from a median of {first:.3g} over {_steps(h.norm_steps[0], h.norm_steps[q - 1])} to "
        f"{last:.3g} over {_steps(h.norm_steps[-q], h.norm_steps[-1])}"
    )
    if ratio >= GROWTH_RATIO:
        return Claim(
            f"The gradient norm (before clipping) grew {times(ratio)}-fold, {span}: the gradients "
            "are **exploding**.",
            True,
            numbers,
        )
    if ratio <= 1 / GROWTH_RATIO:
        return Claim(
            f"The gradient norm (before clipping) fell {times(1 / ratio)}-fold, {span}.",
            False,
            numbers,
        )
    return Claim(
        f"The gradient norm (before clipping) stayed within a factor of {GROWTH_RATIO:.0f}, "
        f"{span}: nothing exploded.",
        False,
        numbers,
    )


def clipping_claim(h: GradHealth | None) -> Claim:
    """Did clipping act? The steps whose norm before clipping passed the cap, out of all."""
    if h is None or h.norm.size == 0:
        return Claim(NOT_RECORDED, False, {})
    n = h.norm.size
    biggest = int(np.argmax(h.norm))
    top = f"largest {h.norm[biggest]:.3g} at step {int(h.norm_steps[biggest]):,}"
    if h.clip <= 0:
        return Claim(
            f"Clipping was off: every step used the whole gradient ({top}).",
            False,
            {"clip": 0.0, "steps": n},
        )
    clipped = h.norm > h.clip
    k = int(clipped.sum())
    numbers = {"clip": h.clip, "steps": n, "clipped": k, "share": k / n}
    if k == 0:
        return Claim(
            f"Clipping never acted: the gradient norm stayed under its cap of {h.clip:g} on all "
            f"{n:,} steps ({top}).",
            False,
            numbers,
        )
    last = int(h.norm_steps[np.flatnonzero(clipped)[-1]])
    return Claim(
        f"Clipping was **active** on {k:,} of {n:,} steps ({k / n:.0%}): there the norm before "
        f"clipping passed the cap of {h.clip:g} ({top}), and the step used the gradient scaled "
        f"down to length {h.clip:g}. The last clipped step was {last:,}.",
        True,
        numbers,
    )


ADAPTERS_NOTE = (
    "This run trains only LoRA's adapters, A and B in each chosen matrix; the model's own "
    "weights are frozen. So every gradient and update here is the adapters', not the weights'."
)


def is_lora(meta: dict | None) -> bool:
    """A LoRA fine-tune's bundle (training/finetune.py records meta["finetune"]["mode"])."""
    info = (meta or {}).get("finetune")
    return isinstance(info, dict) and info.get("mode") == "lora"


def update_claim(h: GradHealth | None, adapters: bool = False) -> Claim:
    """How big are the steps, relative to the weights? The blocks' update ratios at the health
    step where the learning rate was highest, against RULE_OF_THUMB (beyond UPDATE_BAND).
    `adapters` (a LoRA run): the ratios are A's and B's, and B starts at zero, so a weight's
    rule of thumb says nothing about them: the sentence gives the numbers and no verdict."""
    if h is None or h.steps.size == 0:
        return Claim(NOT_RECORDED, False, {})
    cols = h.blocks or list(range(len(h.layers)))
    lr = np.where(np.isfinite(h.lr), h.lr, -np.inf)
    row = int(np.flatnonzero(lr == lr.max())[-1])  # the latest record at the peak rate
    ratios = h.update[row, cols]
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size == 0:
        return Claim(NOT_RECORDED, False, {})
    low, high, mid = float(ratios.min()), float(ratios.max()), float(np.median(ratios))
    numbers = {
        "step": float(h.steps[row]),
        "lr": float(h.lr[row]),
        "low": low,
        "high": high,
        "median": mid,
        "rule": RULE_OF_THUMB,
        "band": UPDATE_BAND,
    }
    what = "the blocks'" if h.blocks else "the layers'"
    if adapters:
        return Claim(
            f"At step {int(h.steps[row]):,}, where the learning rate peaked ({h.lr[row]:.3g}), "
            f"one step changed the adapters by {low:.2g} to {high:.2g} of their size (median "
            f"{mid:.2g}). The rule of thumb for a weight's step (about {RULE_OF_THUMB:g}) does "
            "not apply: B starts at zero, so any step is large against it.",
            False,
            numbers,
        )
    said = (
        f"At step {int(h.steps[row]):,}, where the learning rate peaked ({h.lr[row]:.3g}), one "
        f"step changed {what} weights by {low:.2g} to {high:.2g} of their size (median "
        f"{mid:.2g}); a common rule of thumb (Stanford's CS231n notes) puts it near "
        f"{RULE_OF_THUMB:g}."
    )
    if mid > RULE_OF_THUMB * UPDATE_BAND:
        over = f" That is over {UPDATE_BAND:.0f} times more: these steps are **large**"
        return Claim(said + over + _stability(h, numbers), True, numbers)
    if mid < RULE_OF_THUMB / UPDATE_BAND:
        return Claim(
            said + f" That is under 1/{UPDATE_BAND:.0f} of it: steps this **small** barely "
            "move the weights, so learning is slow.",
            True,
            numbers,
        )
    return Claim(said + f" That is within a factor of {UPDATE_BAND:.0f} of it.", False, numbers)


def loss_rise(h: GradHealth) -> tuple[float, int, float, int] | None:
    """(rise, step, lowest before it, window): the largest rise of the training loss above its
    lowest point before, on medians of consecutive windows of `window` steps (one batch's loss is
    noisy; a median of several is not), the step being the end of the window that rose most;
    None with fewer than two windows.

    >>> h = GradHealth(*(np.zeros(0),) * 2, 0.0, np.zeros(0), (), np.zeros((0, 0)),
    ...     np.zeros((0, 0)), np.zeros(0), None, np.arange(1.0, 16), np.repeat([3, 2, 2.5], 5))
    >>> loss_rise(h)
    (0.5, 15, 2.0, 5)
    """
    n = h.loss.size
    window = max(5, n // LOSS_WINDOW)
    if n < 2 * window:
        return None
    ends = list(range(window, n + 1, window))
    medians = np.array([np.median(h.loss[e - window : e]) for e in ends])
    lowest = np.minimum.accumulate(medians)
    rises = medians[1:] - lowest[:-1]
    i = int(np.argmax(rises))
    return float(rises[i]), int(h.loss_steps[ends[i + 1] - 1]), float(lowest[i]), window


def _stability(h: GradHealth, numbers: dict) -> str:
    """What this run's own record says about steps that large (the end of update_claim's
    sentence): instability is claimed only where its loss or its gradient shows it."""
    growth = growth_claim(h)
    rise = loss_rise(h)
    if rise is not None:
        numbers |= {"loss_rise": rise[0], "rise_step": float(rise[1]), "rise_limit": LOSS_RISE}
    if h.exploded_at is not None or growth.made:
        what = (
            f"its gradient became NaN or infinite at step {h.exploded_at:,}"
            if h.exploded_at is not None
            else f"its gradient norm grew {times(growth.numbers['ratio'])}-fold"
        )
        return f", and in this run {what}: steps this large can make training unstable."
    if rise is None:
        return (
            ". Steps this large can make training unstable; this run's loss record is too short "
            "to say whether they did here."
        )
    size, step, lowest, window = rise
    smoothed = f"medians of {window} steps"
    if size > LOSS_RISE:
        return (
            f", and this run's training loss ({smoothed}) rose {size:.3f} nats above its lowest "
            f"({lowest:.3f}) by step {step:,}: steps this large can make training unstable, "
            "and here the loss went back up."
        )
    return (
        f", yet this run's training loss ({smoothed}) never rose more than {LOSS_RISE:g} nats "
        f"above its lowest (at most {max(size, 0.0):.3f}) and its gradient did not explode: the "
        "rule of thumb is a guide, and steps this large did not destabilise this run."
    )
