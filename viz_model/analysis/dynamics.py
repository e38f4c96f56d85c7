"""Training dynamics: how each head's role and the model's copying change over its training, read
from the snapshots a bundle keeps (weights at log-spaced steps, plus any asked for).

- `probe(tokenizer, meta, n_ctx)`: the fixed input every snapshot is measured on: a few repeated
  random sequences, the Attention page's induction test (same tokens, same copy length), (B, 2k).
- `measure(model, ids)`: one model's numbers on that input: the head-role scores of
  analysis/attention.py averaged over the sequences, and the loss and copy accuracy on the first
  copy (unpredictable) and the second (predictable only by copying).
- `dynamics(steps, load, ids, chance)`: `measure` for every step's model, stacked by step.
- Claims (analysis/claims.py) computed from a Dynamics: `copying_claim` (did the model learn to
  copy, and by which step half of it), `phase_change_claim` (does the loss itself fall abruptly),
  `sharper_metric_claim` (does whole-copy accuracy rise over a clearly narrower window than the
  loss falls: Schaeffer et al.'s mirage), `whole_copy_drop_claim` (why whole-copy accuracy can
  fall while per-token accuracy barely moves).

Not here: charts (charts/dynamics.py), streamlit, caching (the page caches by bundle id).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from viz_model.analysis.attention import (
    HeadScores,
    head_scores,
    induction_test,
    ordinary_tokens,
    repeated_random_tokens,
)
from viz_model.analysis.claims import Claim
from viz_model.analysis.training import final_step, training_steps
from viz_model.bundles.checkpoint import Bundle
from viz_model.model.gpt import GPT
from viz_model.text.tokenization import Tokenizer

N_PROBES = 32  # sequences whose head-role scores are averaged: one sequence is a noisy measurement
# Losses and accuracies are cheap (one forward pass), so they are averaged over more sequences,
# about COPY_TOKENS tokens in all (at least N_PROBES, at most MAX_COPY_PROBES sequences).
COPY_TOKENS, MAX_COPY_PROBES = 8192, 256
# The four scores drawn against step: the named roles of the Attention page, then "looks k back"
# (the best fixed offset k >= 2; on a repeated sequence an induction head also looks k-1 back).
ROLES = ("previous-token", "induction", "first-token sink", "looks k back")


def probe(tokenizer: Tokenizer, meta: dict, n_ctx: int, n: int = N_PROBES) -> np.ndarray:
    """(n, 2k) int64: sequence i is k random ordinary tokens written twice, seed i; k is the
    Attention page's default copy length (the longest copy a repeat-task model trained on)."""
    test = induction_test(tokenizer, meta, n_ctx)
    rows = [repeated_random_tokens(test.token_ids, test.default_length, seed=i) for i in range(n)]
    return np.stack(rows)


def copy_probes(copy_length: int) -> int:
    """How many sequences of two copies the losses are measured on: 256 of 16 + 16 tokens,
    102 of 40 + 40 (about COPY_TOKENS tokens), so their noise is small against what they show."""
    return int(np.clip(COPY_TOKENS // (2 * copy_length), N_PROBES, MAX_COPY_PROBES))


def chance_accuracy(tokenizer: Tokenizer) -> float:
    """How often a model that cannot copy names the next token of the probe: each token is drawn
    uniformly from the N ordinary tokens whatever came before, so any guess is right 1 time in N."""
    ids, _ = ordinary_tokens(tokenizer)
    return 1.0 / len(ids)


def mean_scores(scores: Sequence[HeadScores]) -> HeadScores:
    """The field-by-field mean of head scores on prompts of one length (one per sequence)."""
    first = scores[0]

    def mean(name: str) -> np.ndarray:
        return np.mean([getattr(s, name) for s in scores], axis=0)

    return HeadScores(
        previous_token=mean("previous_token"),
        first_token=mean("first_token"),
        self_=mean("self_"),
        induction=mean("induction"),
        entropy=mean("entropy"),
        n_induction_queries=first.n_induction_queries,
        looks_back=mean("looks_back"),
        even_entropy=first.even_entropy,
    )


@dataclass(frozen=True)
class Measures:
    """One model on the probe (B sequences of 2k tokens, L layers, H heads).

    scores: role -> (L, H) (see ROLES), from the first n_roles sequences; offset_k (L, H): the k
    of "looks k back"; loss_first / loss_second: mean loss in nats per token predicting the first
    copy's tokens 1..k-1 / the second copy's tokens k+1..2k-1 (its first token cannot be known);
    copy_accuracy: share of those second-copy tokens that are the model's top guess;
    exact_copy: share of sequences whose whole second copy (k+1..2k-1) is top guesses.
    Their noise: gap_se, the standard error over the B sequences of each sequence's copying gain
    (first-copy loss minus second-copy loss); accuracy_se, that of each sequence's accuracy.
    position_accuracy (k-1,): the accuracy at each copyable position of the second copy;
    miss_token: the model's most common wrong top guess there (-1: no miss), miss_share: its
    share of the misses. n_sequences: B.
    """

    scores: dict[str, np.ndarray]
    offset_k: np.ndarray
    loss_first: float
    loss_second: float
    copy_accuracy: float
    exact_copy: float
    gap_se: float = 0.0
    accuracy_se: float = 0.0
    position_accuracy: np.ndarray = field(default_factory=lambda: np.zeros(0))
    miss_token: int = -1
    miss_share: float = 0.0
    n_sequences: int = 0


def role_scores(scores: HeadScores) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """(role -> (L, H) in ROLES order, offset k (L, H)) from one HeadScores."""
    offset_k, offset = scores.fixed_offset()
    named = scores.by_role()
    out = {role: named[role] for role in ROLES[:3]}
    return {**out, ROLES[3]: offset}, offset_k


def _standard_error(x: torch.Tensor) -> float:
    """The standard error of the mean of x (B,): its spread over the sequences / sqrt(B)."""
    return float(x.std(unbiased=True) / np.sqrt(len(x))) if len(x) > 1 else 0.0


def measure(model: GPT, ids: np.ndarray, n_roles: int = N_PROBES) -> Measures:
    """Run the model on the probe ids (B, 2k) and measure losses and copying on all B
    sequences, and role scores on the first n_roles of them (the expensive part)."""
    B, T = ids.shape
    k = T // 2
    L = model.cfg.n_layer
    names = [f"blocks.{layer}.attn.hook_pattern" for layer in range(L)]
    x = torch.as_tensor(ids, dtype=torch.long)
    n = min(n_roles, B)
    _, cache = model.run_with_cache(x[:n], names=names)
    patterns = np.stack([cache.numpy(name).reshape(n, -1, T, T) for name in names], axis=1)
    scores, offset_k = role_scores(
        mean_scores([head_scores(p, row) for p, row in zip(patterns, ids[:n], strict=True)])
    )
    with torch.no_grad():
        logits = model(x).reshape(B, T, -1)  # (B, T, V), also when B == 1
    # position i predicts token i+1: the first copy's tokens 1..k-1 from i = 0..k-2, the
    # second copy's tokens k+1..2k-1 from i = k..2k-2
    loss = F.cross_entropy(logits[:, :-1].transpose(1, 2), x[:, 1:], reduction="none")  # (B, T-1)
    first, second = loss[:, : k - 1].mean(1), loss[:, k : 2 * k - 1].mean(1)  # (B,) each
    guess = logits[:, :-1].argmax(-1)[:, k : 2 * k - 1]  # (B, k-1)
    right = guess == x[:, k + 1 : 2 * k]  # (B, k-1)
    misses = guess[~right]
    if misses.numel():
        values, counts = torch.unique(misses, return_counts=True)
        miss_token, miss_share = int(values[counts.argmax()]), float(counts.max() / misses.numel())
    else:
        miss_token, miss_share = -1, 0.0
    return Measures(
        scores=scores,
        offset_k=offset_k,
        loss_first=float(first.mean()),
        loss_second=float(second.mean()),
        copy_accuracy=float(right.float().mean()),
        exact_copy=float(right.all(-1).float().mean()),
        gap_se=_standard_error(first - second),
        accuracy_se=_standard_error(right.float().mean(1)),
        position_accuracy=right.float().mean(0).numpy(),
        miss_token=miss_token,
        miss_share=miss_share,
        n_sequences=B,
    )


@dataclass(frozen=True)
class Dynamics:
    """`measure` at every step (S steps): each array's first axis is the step.

    scores: role -> (S, L, H); offset_k (S, L, H); loss_first, loss_second, copy_accuracy,
    exact_copy, gap_se, accuracy_se, miss_token, miss_share: (S,); position_accuracy (S, k-1);
    copy_length: k, the tokens in each copy of the probe; n_sequences: sequences per step;
    chance: how often a model that cannot copy names the next token (1 / the tokens drawn from).
    """

    steps: np.ndarray
    scores: dict[str, np.ndarray]
    offset_k: np.ndarray
    loss_first: np.ndarray
    loss_second: np.ndarray
    copy_accuracy: np.ndarray
    exact_copy: np.ndarray
    copy_length: int
    gap_se: np.ndarray
    accuracy_se: np.ndarray
    position_accuracy: np.ndarray
    miss_token: np.ndarray
    miss_share: np.ndarray
    n_sequences: int
    chance: float

    @property
    def gap(self) -> np.ndarray:
        """(S,) the copying gain: first-copy loss minus second-copy loss, nats per token."""
        return self.loss_first - self.loss_second

    def head_names(self) -> list[str]:
        """'L0 H0', 'L0 H1', ... in (layer, head) order, as the Attention page names heads."""
        _, L, H = self.offset_k.shape
        return [f"L{layer} H{head}" for layer in range(L) for head in range(H)]


def bundle_dynamics(bundle: Bundle, n_roles: int = N_PROBES) -> Dynamics | None:
    """`dynamics` of a bundle at every step it saved, on the probe the Training dynamics page
    uses (None: no snapshots). Snapshots are read from disk, one at a time."""
    final = final_step(bundle.history, bundle.meta)
    steps = training_steps(bundle.snapshot_steps(), final)
    if not steps:
        return None
    tok, meta, n_ctx = bundle.tokenizer, bundle.meta, bundle.config.n_ctx
    k = probe(tok, meta, n_ctx, n=1).shape[1] // 2
    return dynamics(
        steps,
        lambda s: bundle.model if s == final else bundle.load_snapshot(s),
        probe(tok, meta, n_ctx, n=copy_probes(k)),
        chance_accuracy(tok),
        n_roles,
    )


def dynamics(
    steps: Sequence[int],
    load: Callable[[int], GPT],
    ids: np.ndarray,
    chance: float,
    n_roles: int = N_PROBES,
) -> Dynamics:
    """`measure` the model of every step (load(step) gives it) on the same probe ids (B, 2k);
    chance: `chance_accuracy` of the probe's tokens; n_roles: sequences the role scores use."""
    found = [measure(load(step), ids, n_roles) for step in steps]

    def stacked(name: str) -> np.ndarray:
        return np.array([getattr(m, name) for m in found])

    return Dynamics(
        steps=np.asarray(steps, dtype=np.int64),
        scores={role: np.stack([m.scores[role] for m in found]) for role in ROLES},
        offset_k=np.stack([m.offset_k for m in found]),
        loss_first=stacked("loss_first"),
        loss_second=stacked("loss_second"),
        copy_accuracy=stacked("copy_accuracy"),
        exact_copy=stacked("exact_copy"),
        copy_length=ids.shape[1] // 2,
        gap_se=stacked("gap_se"),
        accuracy_se=stacked("accuracy_se"),
        position_accuracy=np.stack([m.position_accuracy for m in found]),
        miss_token=stacked("miss_token"),
        miss_share=stacked("miss_share"),
        n_sequences=ids.shape[0],
        chance=float(chance),
    )


# ---- claims: what the page may say about this model's training ------------------------------

NOISE_Z = 3.0  # a difference is "beyond the noise" when it exceeds 3 standard errors
ABRUPT_WINDOW = 0.1  # a phase change: half or more of the loss's fall within 10% of training...
ABRUPT_SHARE = 0.5  # ...between two saved steps at most that far apart
SHARPER = 0.5  # the metric is "sharper" when it rises over at most half the loss's window
SEES_AHEAD = 0.5  # nats below a uniform guess on random tokens: only a model that sees ahead


def _nats(x: float) -> str:
    """x to two decimals, never "-0.00"."""
    return f"{round(float(x), 2) + 0.0:.2f}"


def _learned(d: Dynamics) -> np.ndarray:
    """(S,) bool: at which saved steps the model copies, beyond the noise: the copying gain has
    grown past the first saved step's by NOISE_Z standard errors, and the top guess on the second
    copy is right more often than chance by NOISE_Z standard errors."""
    gap = d.gap
    gap_noise = NOISE_Z * np.sqrt(d.gap_se[0] ** 2 + d.gap_se**2)
    accuracy_noise = NOISE_Z * d.accuracy_se
    return (gap - gap[0] > gap_noise) & (d.copy_accuracy - d.chance > accuracy_noise)


def copying_claim(d: Dynamics) -> Claim:
    """Did this model learn to copy by its last saved step, and by which step was half of it
    learned? Half learned: the first saved step where the copying gain has made half of its
    rise from the first saved step to the last."""
    learned = _learned(d)
    gap, final = d.gap, int(d.steps[-1])
    numbers = {
        "loss_first": float(d.loss_first[-1]),
        "loss_second": float(d.loss_second[-1]),
        "gap_start": float(gap[0]),
        "gap_end": float(gap[-1]),
        "gap_noise": float(NOISE_Z * np.hypot(d.gap_se[0], d.gap_se[-1])),
        "accuracy": float(d.copy_accuracy[-1]),
        "chance": d.chance,
        "accuracy_noise": float(NOISE_Z * d.accuracy_se[-1]),
        "noise_z": NOISE_Z,
        "n_sequences": float(d.n_sequences),
        "final_step": float(final),
    }
    both = f"{d.loss_second[-1]:.2f} vs {d.loss_first[-1]:.2f} nats per token at step {final:,}"
    if not learned[-1]:
        if gap[-1] - gap[0] < -numbers["gap_noise"]:
            why = f"the second copy is no easier than the first, it is harder ({both})"
        elif gap[-1] - gap[0] <= numbers["gap_noise"]:
            why = (
                f"the second copy is no easier than the first ({both}; the difference is within "
                f"the noise of {d.n_sequences} sequences, ±{numbers['gap_noise']:.2f} nats)"
            )
        else:
            why = (
                f"the second copy is a little easier than the first ({both}), but its top guess "
                f"there is right {d.copy_accuracy[-1]:.1%} of the time, not beyond chance "
                f"({d.chance:.1%}, one token in {round(1 / d.chance)}, give or take "
                f"{numbers['accuracy_noise']:.1%} of noise)"
            )
        guess = float(np.log(1 / d.chance))  # the loss of a uniform guess among the tokens
        numbers |= {"guess_loss": guess, "sees_ahead_margin": SEES_AHEAD}
        if d.loss_first[-1] < guess - SEES_AHEAD:
            why += (
                f". Yet it predicts even the first copy, random tokens, far better than a guess "
                f"among {round(1 / d.chance)} ({d.loss_first[-1]:.2f} against ln "
                f"{round(1 / d.chance)} = {guess:.2f} nats), which no model reading only earlier "
                "tokens can do: this one sees the tokens it predicts"
            )
        if learned.any():
            earlier = int(d.steps[np.argmax(learned)])
            numbers["earlier_step"] = float(earlier)
            text = f"At its last step this model does not copy (it did at step {earlier:,}): {why}."
        else:
            text = f"This model never learned to copy: {why}."
        return Claim(text, False, numbers)
    target = gap[0] + (gap[-1] - gap[0]) / 2
    i = int(np.argmax(gap >= target))
    half = int(d.steps[i])
    numbers |= {"half_step": float(half), "half_gap": float(target), "gap_at_half": float(gap[i])}
    before = f"; the saved step before it is {int(d.steps[i - 1]):,}" if i > 0 else ""
    text = (
        f"This model learned to copy: at step {final:,} the second copy costs "
        f"{d.loss_second[-1]:.2f} nats per token against {d.loss_first[-1]:.2f} for the first (a "
        f"gain of {_nats(gap[-1])} nats, from {_nats(gap[0])} at step {int(d.steps[0]):,}; the noise is "
        f"±{numbers['gap_noise']:.2f}), and its top guess there is right "
        f"{d.copy_accuracy[-1]:.0%} of the time (chance: {d.chance:.0%}). Copying is half learned "
        f"by step {half:,} (dashed line): the first saved step where the gain reaches half its "
        f"final rise, {target:.2f} nats{before}."
    )
    return Claim(text, True, numbers)


@dataclass(frozen=True)
class Transition:
    """How one curve y(step) changes: from y[0] to its extreme (the largest change from y[0]),
    and the steps where it first makes 10% and 90% of that change (linear between saved steps)."""

    start: float
    extreme: float
    extreme_step: int
    t10: float
    t90: float

    @property
    def width(self) -> float:
        return self.t90 - self.t10


def transition(steps: np.ndarray, y: np.ndarray) -> Transition:
    """The 10%-to-90% window of a curve's change, on the saved steps.

    >>> t = transition(np.array([0, 100, 200]), np.array([0.0, 0.5, 1.0]))
    >>> (t.t10, t.t90, t.width)
    (20.0, 180.0, 160.0)
    """
    steps, y = np.asarray(steps, dtype=float), np.asarray(y, dtype=float)
    i_ext = int(np.argmax(np.abs(y - y[0])))
    change = y[i_ext] - y[0]
    made = (y - y[0]) / change if change else np.zeros_like(y)  # share of the change made

    def first_at(q: float) -> float:
        i = int(np.argmax(made >= q))
        if i == 0:
            return float(steps[0])
        lo, hi = made[i - 1], made[i]
        return float(steps[i - 1] + (q - lo) / (hi - lo) * (steps[i] - steps[i - 1]))

    return Transition(float(y[0]), float(y[i_ext]), int(steps[i_ext]), first_at(0.1), first_at(0.9))


def phase_change_claim(d: Dynamics, copying: Claim) -> Claim:
    """Does the loss on the second copy itself fall abruptly (a phase change in the model)?

    Made when the model learned to copy and ABRUPT_SHARE or more of the loss's whole fall (from
    the first saved step to its lowest) happens between two saved steps at most ABRUPT_WINDOW
    of training apart."""
    steps, loss = d.steps, d.loss_second
    final = int(steps[-1])
    window = ABRUPT_WINDOW * final
    fall = float(loss[0] - loss.min())
    best, pair = 0.0, (0, 0)
    for i in range(len(steps)):
        for j in range(i + 1, len(steps)):
            if steps[j] - steps[i] <= window and loss[i] - loss[j] > best:
                best, pair = float(loss[i] - loss[j]), (i, j)
    share = best / fall if fall > 0 else 0.0
    a, b = (int(steps[i]) for i in pair)
    numbers = {
        "fall": fall,
        "window": window,
        "window_share": ABRUPT_WINDOW,
        "best_fall": best,
        "share": share,
        "threshold": ABRUPT_SHARE,
        "from_step": float(a),
        "to_step": float(b),
    }
    if not copying.made:
        return Claim(
            "No phase change to see: this model did not learn to copy (above).",
            False,
            numbers,
        )
    if share >= ABRUPT_SHARE:
        text = (
            f"**The loss itself changes phase**: {share:.0%} of its whole fall "
            f"({best:.2f} of {fall:.2f} nats) happens between steps {a:,} and {b:,}, from "
            f"{loss[pair[0]]:.2f} to {loss[pair[1]]:.2f} nats, within {b - a:,} steps "
            f"({(b - a) / final:.0%} of training). That jump is in the model, not only in a metric."
        )
        return Claim(text, True, numbers)
    # the widest interval between saved steps while the loss made 10% to 90% of its fall
    t = transition(steps, loss)
    inside = (steps[1:] > t.t10) & (steps[:-1] < t.t90)
    spacing = np.where(inside, np.diff(steps), 0)
    gap_i = int(np.argmax(spacing))
    numbers["largest_spacing"] = float(spacing[gap_i])
    if spacing[gap_i] > window:
        text = (
            f"No window of {window:,.0f} steps (10% of training) between saved steps holds half "
            f"of the loss's fall, but the saved steps are too far apart to tell how fast it "
            f"fell: it was falling between steps {int(steps[gap_i]):,} and "
            f"{int(steps[gap_i + 1]):,}, and no step between them was saved."
        )
    else:
        text = (
            f"The loss falls gradually: no window of {window:,.0f} steps (10% of training) holds "
            f"half of its fall; the most, {share:.0%}, falls between steps {a:,} and {b:,}."
        )
    return Claim(text, False, numbers)


def _binomial_se(p: float, n: int) -> float:
    """The standard error of a share p measured on n sequences."""
    return float(np.sqrt(max(p * (1 - p), 0.0) / n)) if n else 0.0


def sharper_metric_claim(d: Dynamics) -> Claim:
    """Is whole-copy accuracy a sharper curve than the loss on the second copy (Schaeffer et
    al.: a metric that needs every token right can make smooth progress look sudden)?

    Both curves' 10%-to-90% windows (`transition`) on the same saved steps. Made when whole-copy
    accuracy rises beyond the noise and its window is at most SHARPER times the loss's."""
    loss, whole = transition(d.steps, d.loss_second), transition(d.steps, d.exact_copy)
    peak = whole.extreme
    noise = NOISE_Z * _binomial_se(max(peak, 1 / d.n_sequences), d.n_sequences)
    numbers = {
        "loss_t10": loss.t10,
        "loss_t90": loss.t90,
        "loss_width": loss.width,
        "whole_t10": whole.t10,
        "whole_t90": whole.t90,
        "whole_width": whole.width,
        "whole_start": whole.start,
        "whole_peak": peak,
        "whole_noise": noise,
        "ratio": whole.width / loss.width if loss.width > 0 else float("inf"),
        "threshold": SHARPER,
    }
    if peak - whole.start <= noise:
        most = round(max(peak, whole.start) * d.n_sequences)
        where = f"at most {most} of the" if most else "none of the"
        text = (
            f"The whole copy is right in {where} {d.n_sequences} sequences at any saved step: "
            "there is no rise in that metric to compare with the loss."
        )
        return Claim(text, False, numbers)
    windows = (
        f"whole-copy accuracy makes 10% to 90% of its rise ({whole.start:.0%} to {peak:.0%}) "
        f"between steps {whole.t10:,.0f} and {whole.t90:,.0f} ({whole.width:,.0f} steps), the "
        f"loss 10% to 90% of its fall ({loss.start:.2f} to {loss.extreme:.2f} nats) between "
        f"steps {loss.t10:,.0f} and {loss.t90:,.0f} ({loss.width:,.0f} steps)"
    )
    if numbers["ratio"] <= SHARPER:
        text = (
            f"**The metric is sharper than the loss**: {windows}. Counted only when every token "
            "is right, the same progress looks more sudden."
        )
        return Claim(text, True, numbers)
    text = (
        f"Here the metric is not clearly sharper than the loss: {windows} (sharper would mean at "
        f"most {SHARPER:.0%} of the loss's window)."
    )
    return Claim(text, False, numbers)


def whole_copy_drop_claim(d: Dynamics, miss_label: str) -> Claim:
    """Why whole-copy accuracy can fall after its peak while per-token accuracy barely moves.

    A whole copy needs all k-1 copyable tokens right: with per-token accuracy p about p^(k-1)
    of the copies are whole, so a small slip in p is a large one in p^(k-1). Made when the
    fall is beyond the noise of the sequences; the text is empty when there is no fall to
    explain (less than one sequence). miss_label: the most common wrong guess at the last
    step, as the page shows tokens (escaped)."""
    i = int(np.argmax(d.exact_copy))
    n, k1 = d.n_sequences, d.copy_length - 1
    peak, end = float(d.exact_copy[i]), float(d.exact_copy[-1])
    p_peak, p_end = float(d.copy_accuracy[i]), float(d.copy_accuracy[-1])
    noise = NOISE_Z * np.hypot(_binomial_se(peak, n), _binomial_se(end, n))
    numbers = {
        "peak": peak,
        "peak_step": float(d.steps[i]),
        "end": end,
        "noise": float(noise),
        "accuracy_peak": p_peak,
        "accuracy_end": p_end,
        "power": float(k1),
        "predicted_peak": p_peak**k1,
        "predicted_end": p_end**k1,
        "miss_share": float(d.miss_share[-1]),
        "first_position": float(d.position_accuracy[-1][0]),
        "last_position": float(d.position_accuracy[-1][-1]),
    }
    if peak - end < 1 / n:
        return Claim("", False, numbers)
    made = peak - end > noise
    size = "beyond" if made else "within"
    text = (
        f"After step {int(d.steps[i]):,} whole-copy accuracy falls from {peak:.0%} to {end:.0%} "
        f"({size} the noise of {n} sequences, ±{noise:.0%}) while per-token accuracy moves only "
        f"from {p_peak:.1%} to {p_end:.1%}. A whole copy needs all {k1} tokens right: "
        f"{p_peak:.3f}^{k1} = {p_peak**k1:.0%} and {p_end:.3f}^{k1} = {p_end**k1:.0%} (dotted "
        f"line), "
    )
    if p_peak**k1 - p_end**k1 >= (peak - end) / 2:
        text += "so the power that makes the rise look sudden also magnifies a small slip."
    else:
        text += "so the power explains less than half of this fall."
    if d.miss_token[-1] >= 0:
        text += (
            f" At step {int(d.steps[-1]):,} the top guess is right {numbers['first_position']:.0%} "
            f"of the time at the copy's first copyable token and {numbers['last_position']:.0%} "
            f"at its last; {d.miss_share[-1]:.0%} of the misses guess {miss_label}."
        )
    return Claim(text, made, numbers)
