"""Sweep contrasts: runs too slow to bundle as weights, bundled as their results (curves, final
losses, gradient health), and what may be said about them.

- `SWEEPS`: the four sweeps of the Architecture contrasts page (depth with and without residual
  connections, LayerNorm across learning rates, dropout on a small text, SGD against AdamW with
  and without warm-up), each read from assets/contrasts/<key>.json.
- `load_sweep(key)`: a sweep's file as a `Sweep` of `Run`s; a missing or damaged file raises
  ValueError with a plain message.
- `outcome(run)`: "diverged" (stopped on a NaN, or its training loss ended no lower than the
  untrained model's), "trained" (its validation loss ended more than MARGIN below the unigram
  baseline's, the loss of predicting each character by its frequency alone: it learned more than
  letter frequencies), or "stalled" (in between).
- Claims (docs/ARCHITECTURE.md, Claims), each a function of the file's numbers with a neutral
  sentence when the finding does not show beyond its margin: `depth_claim` (deeper is worse
  only without residual connections), `baseline_claim` (a run's final loss against the n-gram
  baselines: did it learn more than letter frequencies?), `depth_gradient_claim` (block 0's gradient against the
  top block's, beyond a factor), `lr_claim` (a learning rate where the run without
  normalization diverges and the LayerNorm one trains), `lr_trained_claim` (where both trained,
  which ended lower, and the largest spike on the way), `gap_claim` and `overfit_claim` (the
  train/validation gap with and without dropout), `warmup_claim` (warm-up's effect for one
  optimiser), `optimizer_claim` (AdamW against SGD).

Not here: training the sweeps (scripts/contrast_sweeps.py), charts (ui/charts/sweeps.py),
streamlit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from viz_model.analysis.claims import Claim, times
from viz_model.analysis.grad_health import across_depth, layer_label
from viz_model.text.data import ASSETS_DIR

SWEEPS_DIR = ASSETS_DIR / "contrasts"  # scripts/contrast_sweeps.py writes <key>.json here
BIN_STEPS = 10  # the training curve is kept as the mean of every 10 steps
MARGIN = 0.05  # nats: a loss is "lower" or "higher" than another's beyond this
NONFINITE = ("NaN", "infinite")  # the loop's words when it stops on a number that is not finite


@dataclass(frozen=True)
class SweepInfo:
    """One sweep as the page's chooser names it."""

    title: str


SWEEPS: dict[str, SweepInfo] = {
    "depth": SweepInfo("Depth and residual connections"),
    "layernorm-lr": SweepInfo("LayerNorm and the learning rate"),
    "dropout": SweepInfo("Dropout on a small text"),
    "optimizers": SweepInfo("SGD and AdamW, with and without warm-up"),
}


@dataclass(frozen=True)
class Curve:
    """A loss curve: steps and nats per token."""

    step: np.ndarray
    loss: np.ndarray


@dataclass(frozen=True)
class Run:
    """One training run of a sweep, as its file records it."""

    name: str
    command: str
    model: dict  # GPTConfig.to_dict()
    train: dict  # TrainConfig as a dict
    steps: int  # the last step recorded (the step it stopped at, when it stopped early)
    stopped: str | None  # the loop's words when it stopped early
    initial_loss: float  # the training loss at step 1: the untrained model's
    final_train: float  # mean training loss over the last tenth of the steps (final_window)
    final_val: float | None  # the last validation loss
    peak_train: float  # the largest training loss of any step
    curve: Curve  # training loss, means of BIN_STEPS steps
    val: Curve  # validation loss at each evaluation
    grad_layers: tuple[str, ...]  # embed, blocks.0, ..., unembed
    grad_median: np.ndarray  # each layer's median gradient norm (before clipping) over the run
    seconds: float  # wall time of the run, start to saved
    eval_train: Curve | None = None  # dropout sweep: the training split, without dropout
    eval_val: Curve | None = None  # and the validation split, from the same weights
    # the n-gram baselines on the same held-out text: {"unigram": 3.32, "bigram": 2.50, ...}
    baselines: dict[str, float] = field(default_factory=dict)

    @property
    def nonfinite(self) -> bool:
        """Did the loop stop on a loss or gradient that was not a finite number?"""
        return bool(self.stopped) and any(w in self.stopped for w in NONFINITE)


@dataclass(frozen=True)
class Sweep:
    key: str
    title: str
    script: str  # the one command that reruns the whole sweep
    seconds: float
    text: str  # what it trained on, in words
    runs: tuple[Run, ...]


def final_window(losses: Sequence[float]) -> Sequence[float]:
    """The last tenth of a run's per-step losses (at least BIN_STEPS of them, all when fewer):
    one step's loss is a noisy reading of one batch.

    >>> list(final_window(range(100)))
    [90, 91, 92, 93, 94, 95, 96, 97, 98, 99]
    """
    n = max(BIN_STEPS, len(losses) // 10)
    return losses[-n:]


def _curve(d: dict, y: str = "loss") -> Curve:
    return Curve(np.asarray(d["step"], dtype=float), np.asarray(d[y], dtype=float))


def _run(d: dict) -> Run:
    grad = d.get("grad") or {}
    median = [np.nan if v is None else v for v in grad.get("median", [])]
    ev = d.get("eval")
    return Run(
        name=str(d["name"]),
        command=str(d["command"]),
        model=dict(d["model"]),
        train=dict(d["train"]),
        steps=int(d["steps"]),
        stopped=d.get("stopped"),
        initial_loss=float(d["initial_loss"]),
        final_train=float(d["final_train"]),
        final_val=None if d.get("final_val") is None else float(d["final_val"]),
        peak_train=float(d["peak_train"]),
        curve=_curve(d["curve"]),
        val=_curve(d["val"]),
        grad_layers=tuple(grad.get("layers", ())),
        grad_median=np.asarray(median, dtype=float),
        seconds=float(d.get("seconds", 0.0)),
        eval_train=_curve(ev, "train") if ev else None,
        eval_val=_curve(ev, "val") if ev else None,
        baselines={str(k): float(v) for k, v in (d.get("baselines") or {}).items()},
    )


def load_sweep(key: str, folder: Path | None = None) -> Sweep:
    """The sweep `key` (one of SWEEPS) from its file in `folder` (default SWEEPS_DIR);
    ValueError when it is missing or damaged."""
    path = Path(folder or SWEEPS_DIR) / f"{key}.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        runs = tuple(_run(r) for r in doc["runs"])
        return Sweep(
            key=key,
            title=str(doc.get("title", SWEEPS[key].title if key in SWEEPS else key)),
            script=str(doc["script"]),
            seconds=float(doc.get("seconds", 0.0)),
            text=str(doc.get("text", "the Shakespeare corpus")),
            runs=runs,
        )
    except FileNotFoundError as exc:
        raise ValueError(f"The results file {path.name} is not there") from exc
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"The results file {path.name} could not be read ({exc})") from exc


# ---- what each run was: read from its config, never from its name --------------------------


def n_layer(r: Run) -> int:
    return int(r.model["n_layer"])


def residual(r: Run) -> bool:
    return bool(r.model.get("residual", True))


def norm_kind(r: Run) -> str:
    return str(r.model.get("norm_kind", "layernorm"))


def lr(r: Run) -> float:
    return float(r.train["lr"])


def dropout(r: Run) -> float:
    return float(r.model.get("dropout", 0.0))


def optimizer(r: Run) -> str:
    return str(r.train.get("optimizer", "adamw"))


def warmup(r: Run) -> int:
    return int(r.train.get("warmup_steps", 0))


def outcome(r: Run) -> str:
    """ "diverged", "trained" or "stalled" (see the module's docstring); a run without a
    unigram baseline counts as trained when its validation loss is below its untrained loss
    by more than MARGIN."""
    if r.nonfinite or r.final_train >= r.initial_loss:
        return "diverged"
    floor = r.baselines.get("unigram", r.initial_loss)
    if r.final_val is not None and r.final_val < floor - MARGIN:
        return "trained"
    return "stalled"


def _find(runs: Sequence[Run], **want) -> Run | None:
    """The first run whose attributes (n_layer=8, residual=False, ...) are all as asked."""
    readers = {
        "n_layer": n_layer,
        "residual": residual,
        "norm_kind": norm_kind,
        "lr": lr,
        "dropout": dropout,
        "optimizer": optimizer,
        "warmup": warmup,
    }
    for r in runs:
        if all(
            math.isclose(readers[k](r), v) if isinstance(v, float) else readers[k](r) == v
            for k, v in want.items()
        ):
            return r
    return None


def _missing(what: str) -> Claim:
    return Claim(f"This sweep's file lacks {what}: nothing can be said about it.", False, {})


def _nats(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def big(x: float) -> str:
    """A loss in words that stays readable when it blew up: 2.46, 126, 7.3 million, 17.3
    billion."""
    if not math.isfinite(x):
        return str(x)
    if abs(x) >= 1e6:
        return times(x)
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}"


# ---- depth ---------------------------------------------------------------------------------


def depth_claim(sweep: Sweep) -> Claim:
    """Without residual connections, is the deep model's final validation loss worse than the
    shallow one's beyond MARGIN, while with them it is not?"""
    depths = sorted({n_layer(r) for r in sweep.runs})
    if len(depths) < 2:
        return _missing("two depths")
    lo, hi = depths[0], depths[-1]
    found = {
        (n, res): _find(sweep.runs, n_layer=n, residual=res)
        for n in (lo, hi)
        for res in (True, False)
    }
    if any(r is None or r.final_val is None for r in found.values()):
        return _missing(f"runs of {lo} and {hi} layers with and without residual connections")
    v = {k: r.final_val for k, r in found.items()}
    worse_without = v[hi, False] - v[lo, False]
    worse_with = v[hi, True] - v[lo, True]
    numbers = {
        "shallow_with": v[lo, True],
        "deep_with": v[hi, True],
        "shallow_without": v[lo, False],
        "deep_without": v[hi, False],
        "margin": MARGIN,
    }
    steps = found[hi, False].steps
    said = (
        f"After {steps:,} steps, **without** residual connections the {hi}-layer model ends at "
        f"{v[hi, False]:.2f} nats on held-out text and the {lo}-layer one at {v[lo, False]:.2f}; "
        f"**with** them, {v[hi, True]:.2f} and {v[lo, True]:.2f}."
    )
    if worse_without > MARGIN and worse_with <= MARGIN:
        with_words = (
            f"the deeper model is {-worse_with:.2f} nats better"
            if worse_with < -MARGIN
            else f"the two are within {MARGIN} nats"
        )
        return Claim(
            f"{said} Without them, {hi - lo} more layers cost {worse_without:.2f} nats; with "
            f"them, {with_words}. Each block then adds to the stream instead of replacing it, "
            "so stacking more does not make the model harder to train.",
            True,
            numbers,
        )
    return Claim(
        f"{said} The lecture's pattern (more layers worse only without residual connections, "
        f"beyond {MARGIN} nats) does not show in these runs.",
        False,
        numbers,
    )


def _near(v: float, ref: float, name: str) -> str:
    """ "within 0.05 nats of the bigram's (0.04 below)": v against a reference it is within
    MARGIN of, the direction read from the two numbers as printed (two decimals)."""
    d = round(v, 2) - round(ref, 2)
    way = f"{abs(d):.2f} below" if d < 0 else f"{d:.2f} above" if d > 0 else "the same as printed"
    return f"within {MARGIN} nats of the {name}'s ({way})"


def baseline_claim(r: Run) -> Claim:
    """Where the run's final validation loss sits against each n-gram baseline on the same
    held-out text, each compared on its own with MARGIN: above the unigram's (letter
    frequencies), about it, below it and about the bigram's (the previous character), below
    both, or between the two."""
    uni, bi = r.baselines.get("unigram"), r.baselines.get("bigram")
    if uni is None or bi is None or r.final_val is None:
        return Claim(f"**{r.name}**: no baselines to compare with.", False, {})
    v = r.final_val
    numbers = {"val": v, "unigram": uni, "bigram": bi, "margin": MARGIN}
    said = (
        f"**{r.name}** ends at {v:.2f} nats; predicting each character by its frequency alone "
        f"(unigram) scores {uni:.2f}, by the one before it (bigram) {bi:.2f}"
    )
    if v > uni + MARGIN:
        return Claim(
            f"{said}: above the unigram's, it predicts **worse** than the letter frequencies "
            "alone.",
            True,
            numbers,
        )
    if v >= uni - MARGIN:
        return Claim(
            f"{said}: {_near(v, uni, 'unigram')}, it learned the letter frequencies and "
            "**nothing more**.",
            True,
            numbers,
        )
    if v < bi - MARGIN:
        return Claim(
            f"{said}: below both, it uses more than the previous character.", True, numbers
        )
    if v <= bi + MARGIN:
        return Claim(
            f"{said}: below the unigram's and {_near(v, bi, 'bigram')}, about what the previous "
            "character alone predicts.",
            False,
            numbers,
        )
    return Claim(
        f"{said}: below the unigram's and above the bigram's, between the two.", False, numbers
    )


def depth_gradient_claim(r: Run) -> Claim:
    """Block 0's median gradient norm over the run against the top block's, beyond
    grad_health.DEPTH_RATIO either way (the blocks have the same shape, so their norms compare
    like for like): the Training page's reading (grad_health.across_depth) of a sweep's run."""
    blocks = [i for i, name in enumerate(r.grad_layers) if name.startswith("blocks.")]
    if len(blocks) < 2 or not np.all(np.isfinite(r.grad_median[blocks])):
        return Claim(f"**{r.name}**: no gradient norms of two blocks were recorded.", False, {})
    bottom, top = float(r.grad_median[blocks[0]]), float(r.grad_median[blocks[-1]])
    top_name = layer_label(r.grad_layers[blocks[-1]])
    over = (
        f"**{r.name}**: over the run, the gradient reaching block 0 has a median norm of "
        f"{bottom:.3g} and {top_name}'s {top:.3g}"
    )
    return across_depth(over, bottom, top, top_name, {})


# ---- LayerNorm across learning rates ----------------------------------------------------------


def lr_claim(sweep: Sweep) -> Claim:
    """Is there a learning rate at which the run without normalization diverged while the
    LayerNorm run trained? Said at the lowest such rate, with where each kind diverged."""
    rates = sorted({lr(r) for r in sweep.runs})
    pairs = [
        (
            x,
            _find(sweep.runs, lr=x, norm_kind="layernorm"),
            _find(sweep.runs, lr=x, norm_kind="none"),
        )
        for x in rates
    ]
    pairs = [(x, ln, no) for x, ln, no in pairs if ln is not None and no is not None]
    if not pairs:
        return _missing("runs with and without LayerNorm at the same learning rate")
    diverged = {
        kind: [x for x, ln, no in pairs if outcome(ln if kind == "ln" else no) == "diverged"]
        for kind in ("ln", "none")
    }

    def rates_words(xs: list[float]) -> str:
        return ", ".join(f"{x:g}" for x in xs) if xs else "none of the rates tried"

    numbers = {f"diverged_{k}": float(len(v)) for k, v in diverged.items()}
    summary = (
        f"Learning rates tried: {', '.join(f'{x:g}' for x, _, _ in pairs)}, no warm-up. "
        f"Diverged with LayerNorm: {rates_words(diverged['ln'])}; without normalization: "
        f"{rates_words(diverged['none'])}."
    )
    for x, ln, no in pairs:
        if outcome(no) == "diverged" and outcome(ln) == "trained":
            how = (
                f"stopped on a NaN at step {no.steps:,}"
                if no.nonfinite
                else f"its training loss ended at {big(no.final_train)} nats, above the untrained "
                f"model's {no.initial_loss:.2f}"
            )
            numbers |= {
                "lr": x,
                "ln_val": ln.final_val,
                "none_train": no.final_train,
                "initial": no.initial_loss,
            }
            return Claim(
                f"{summary} At learning rate {x:g} the model **without normalization diverged** "
                f"({how}) where the LayerNorm model trained, to {_nats(ln.final_val)} nats on "
                "held-out text.",
                True,
                numbers,
            )
    return Claim(
        f"{summary} At no rate tried did the run without normalization diverge where the "
        "LayerNorm one trained.",
        False,
        numbers,
    )


SPIKE = 2.0  # a training loss above this many times the untrained model's is a spike


def lr_trained_claim(sweep: Sweep) -> Claim:
    """Where both kinds trained: at which rates each ended lower than the other beyond MARGIN,
    and the largest spike (a training loss above SPIKE times the untrained one) of a run that
    still trained. Stops a reader from taking "LayerNorm allows higher rates" for "LayerNorm is
    better at every rate"."""
    both = [
        (x, ln, no)
        for x in sorted({lr(r) for r in sweep.runs})
        if (ln := _find(sweep.runs, lr=x, norm_kind="layernorm")) is not None
        and (no := _find(sweep.runs, lr=x, norm_kind="none")) is not None
        and outcome(ln) == "trained" == outcome(no)
    ]
    if not both:
        return Claim("At no rate tried did both kinds train.", False, {})
    ln_lower = [x for x, ln, no in both if ln.final_val < no.final_val - MARGIN]
    no_lower = [x for x, ln, no in both if no.final_val < ln.final_val - MARGIN]
    numbers = {"ln_lower": float(len(ln_lower)), "none_lower": float(len(no_lower))}

    def listed(xs: list[float]) -> str:
        return ", ".join(f"{x:g}" for x in xs)

    parts = []
    if ln_lower:
        parts.append(f"LayerNorm ended lower at {listed(ln_lower)}")
    if no_lower:
        parts.append(f"no normalization ended lower at {listed(no_lower)}")
    rates = listed([x for x, _, _ in both])
    text = f"Where both trained ({rates}): " + (
        "; ".join(parts) + f" (by more than {MARGIN} nats on held-out text)."
        if parts
        else f"their held-out losses are within {MARGIN} nats of each other."
    )
    spikes = [
        (r.peak_train, lr(r), r)
        for _, ln, no in both
        for r in (ln, no)
        if r.peak_train > SPIKE * r.initial_loss
    ]
    if spikes:
        peak, x, r = max(spikes, key=lambda t: t[0])
        kind = "LayerNorm" if norm_kind(r) == "layernorm" else "no normalization"
        text += (
            f" On the way, one step's training loss with {kind} at {x:g} was {big(peak)} nats, "
            f"{peak / r.initial_loss:,.0f} times the untrained model's, before the loss came "
            "down."
        )
        numbers["spike"] = peak
    return Claim(text, bool(parts or spikes), numbers)


# ---- dropout -----------------------------------------------------------------------------------


def final_gap(r: Run) -> tuple[float, float, float] | None:
    """(training-split loss, validation loss, their gap) at the last kept weights, both measured
    without dropout; None when the run has no such measurements."""
    if r.eval_train is None or r.eval_val is None or not r.eval_train.loss.size:
        return None
    t, v = float(r.eval_train.loss[-1]), float(r.eval_val.loss[-1])
    return t, v, v - t


def gap_claim(sweep: Sweep) -> Claim:
    """Is the train/validation gap at the end larger without dropout than with it, beyond
    MARGIN?"""
    without = _find(sweep.runs, dropout=0.0)
    with_ = next((r for r in sweep.runs if dropout(r) > 0), None)
    if without is None or with_ is None or final_gap(without) is None or final_gap(with_) is None:
        return _missing("a run with dropout and one without, both measured on both splits")
    (t0, v0, g0), (t1, v1, g1) = final_gap(without), final_gap(with_)
    step = int(without.eval_train.step[-1])
    numbers = {"gap_without": g0, "gap_with": g1, "margin": MARGIN}
    said = (
        f"At step {step:,}, measured without dropout on both: **dropout 0** scores {t0:.2f} nats "
        f"on the text it trained on and {v0:.2f} on held-out text, a gap of {g0:.2f}; **dropout "
        f"{dropout(with_):g}** scores {t1:.2f} and {v1:.2f}, a gap of {g1:.2f}."
    )
    if g0 > g1 + MARGIN:
        return Claim(
            f"{said} Without dropout the model has memorised more of its training text than "
            "carries over to new text.",
            True,
            numbers,
        )
    return Claim(
        f"{said} The gap without dropout is not larger by more than {MARGIN} nats.", False, numbers
    )


def overfit_claim(r: Run) -> Claim:
    """Did the validation loss rise from its lowest point by the end, beyond MARGIN, while the
    training-split loss went on falling (overfitting)?"""
    if r.eval_val is None or r.eval_train is None or r.eval_val.loss.size < 2:
        return Claim(f"**{r.name}**: no validation curve to read.", False, {})
    i = int(np.argmin(r.eval_val.loss))
    best, last = float(r.eval_val.loss[i]), float(r.eval_val.loss[-1])
    best_step, last_step = int(r.eval_val.step[i]), int(r.eval_val.step[-1])
    train_then, train_last = float(r.eval_train.loss[i]), float(r.eval_train.loss[-1])
    numbers = {"best": best, "last": last, "train_then": train_then, "train_last": train_last}
    if last > best + MARGIN and train_last < train_then - MARGIN:
        return Claim(
            f"**{r.name}**: the held-out loss was lowest at step {best_step:,} ({best:.2f}) and "
            f"rose to {last:.2f} by step {last_step:,}, while the training text's fell from "
            f"{train_then:.2f} to {train_last:.2f}: past step {best_step:,} it **overfits**.",
            True,
            numbers,
        )
    if best_step == last_step:
        text = (
            f"**{r.name}**: the held-out loss was at its lowest at the last step, "
            f"{last_step:,} ({last:.2f}): it had not begun to rise."
        )
    else:
        text = (
            f"**{r.name}**: the held-out loss was lowest at step {best_step:,} ({best:.2f}) and "
            f"{last:.2f} at step {last_step:,}: it did not rise by more than {MARGIN} nats "
            "while the training text's fell."
        )
    return Claim(text, False, numbers)


# ---- optimisers --------------------------------------------------------------------------------

OPTIMIZER_NAMES = {"adamw": "AdamW", "sgd": "SGD with momentum"}


def warmup_claim(sweep: Sweep, opt: str) -> Claim:
    """For one optimiser: is the final validation loss with warm-up lower (or higher) than
    without it, beyond MARGIN? And did the run without warm-up blow up early (a step's training
    loss above SPIKE times the untrained model's), what a warm-up is meant to prevent?"""
    name = OPTIMIZER_NAMES.get(opt, opt)
    runs = [r for r in sweep.runs if optimizer(r) == opt]
    warm = next((r for r in runs if warmup(r) > 0), None)
    cold = next((r for r in runs if warmup(r) == 0), None)
    if warm is None or cold is None or warm.final_val is None or cold.final_val is None:
        return _missing(f"{name} runs with and without warm-up")
    d = cold.final_val - warm.final_val
    spiked = cold.peak_train > SPIKE * cold.initial_loss
    numbers = {
        "warm": warm.final_val,
        "cold": cold.final_val,
        "cold_peak": cold.peak_train,
        "margin": MARGIN,
        "spike": SPIKE,
    }
    said = (
        f"**{name}** ends at {warm.final_val:.2f} nats with a {warmup(warm)}-step warm-up and "
        f"{cold.final_val:.2f} without"
    )
    if cold.nonfinite:
        return Claim(
            f"{said}; without warm-up it stopped on a NaN at step {cold.steps:,}.", True, numbers
        )
    if d > MARGIN:
        said += f": warm-up helped, by {d:.2f} nats."
    elif d < -MARGIN:
        said += f": warm-up cost {-d:.2f} nats here."
    else:
        said += f": within {MARGIN} nats, so in the end warm-up made no difference here."
    if spiked:
        said += (
            f" Without it one step's training loss reached {big(cold.peak_train)}, "
            f"{cold.peak_train / cold.initial_loss:,.0f} times the untrained model's."
        )
    else:
        said += (
            f" Without it no step's training loss rose past {SPIKE:g} times the untrained "
            f"model's (highest {cold.peak_train:.2f}, untrained {cold.initial_loss:.2f}): "
            "there was no early blow-up for a warm-up to prevent."
        )
    return Claim(said, abs(d) > MARGIN or spiked, numbers)


def optimizer_claim(sweep: Sweep) -> Claim:
    """With warm-up, is AdamW's final validation loss lower than SGD's beyond MARGIN (or
    higher)?"""
    a = next((r for r in sweep.runs if optimizer(r) == "adamw" and warmup(r) > 0), None)
    s = next((r for r in sweep.runs if optimizer(r) == "sgd" and warmup(r) > 0), None)
    if a is None or s is None or a.final_val is None or s.final_val is None:
        return _missing("AdamW and SGD runs with warm-up")
    d = s.final_val - a.final_val
    numbers = {"adamw": a.final_val, "sgd": s.final_val, "margin": MARGIN}
    said = (
        f"With warm-up and {a.steps:,} steps, AdamW (lr {lr(a):g}) ends at {a.final_val:.2f} nats "
        f"on held-out text and SGD with momentum (lr {lr(s):g}) at {s.final_val:.2f}"
    )
    if d > MARGIN:
        return Claim(f"{said}: AdamW is {d:.2f} nats ahead.", True, numbers)
    if d < -MARGIN:
        return Claim(f"{said}: SGD is {-d:.2f} nats ahead.", True, numbers)
    return Claim(f"{said}: within {MARGIN} nats of each other.", False, numbers)
