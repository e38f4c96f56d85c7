"""The sentences the Interventions page prints about its numbers, each decided on the numbers it
states and made only beyond noise or chance: an ablation's loss change, the head sweep, the
steering push, what a corruption did to the prediction, and where the patching says the
information travels.
"""

from __future__ import annotations

import numpy as np

from viz_model.analysis.claims import Claim, as_printed, md_escape
from viz_model.analysis.labs.interventions.ablation import NOISE_SE, Effect, HeadSweep, top_heads
from viz_model.analysis.labs.interventions.activation_patching import Patching
from viz_model.analysis.labs.interventions.steering import SteeringPush
from viz_model.analysis.labs.interventions.suggest import MIN_SPAN


def loss_change_claim(eff: Effect, what: str) -> Claim:
    """ "<what> raises the held-out loss by d nats", only when d is beyond NOISE_SE standard
    errors across stretches of the text; a neutral sentence otherwise."""
    d, se = eff.loss_change, eff.change_se
    numbers = {"change": d, "se": se, "n_chunks": eff.n_chunks, "noise_se": NOISE_SE}
    # the change as the two printed losses give it (2.537 to 2.553 is +0.016, whatever the
    # unrounded difference)
    shown = as_printed(eff.loss_after, 3) - as_printed(eff.loss_before, 3)
    fig = f"from {eff.loss_before:.3f} to {eff.loss_after:.3f} nats per token ({shown:+.3f})"
    if not np.isfinite(se):
        return Claim(
            f"{what} changes the loss {fig}; the text is too short to tell that from noise.",
            False,
            numbers,
        )
    noise = (
        f"noise: {NOISE_SE:g} standard errors = {NOISE_SE * se:.3f}, from how the change varies "
        f"over {eff.n_chunks} stretches of the text"
    )
    if abs(d) > NOISE_SE * se:
        verb = "raises" if d > 0 else "lowers"
        return Claim(f"{what} {verb} the loss {fig}, beyond noise ({noise}).", True, numbers)
    return Claim(
        f"{what} changes the loss {fig}, within noise ({noise}): no effect can be claimed.",
        False,
        numbers,
    )


def head_sweep_claim(sweep: HeadSweep, k: int = 3, untrained: HeadSweep | None = None) -> Claim:
    """Every head whose ablation raises the loss beyond NOISE_SE standard errors across stretches
    of the text, largest first, each with its noise; past 2k heads, the top k with their noise
    and the rest by name and increase (a sentence names every head it counts). With `untrained`
    (the same sweep on the model's shape with random weights, analysis/untrained.py), a head is
    one the model relies on only when it also beats the most any head of random weights raises
    the loss by its noise: ablating a head of a model that learned nothing moves the loss too."""
    inc, se = sweep.increase, sweep.se
    noisy = np.isfinite(se) & (inc > NOISE_SE * np.nan_to_num(se, nan=np.inf))
    measured = untrained is not None and bool(np.isfinite(untrained.increase).any())
    blank = float(np.nanmax(untrained.increase)) if measured else -np.inf
    beyond = noisy & (inc - blank > NOISE_SE * np.nan_to_num(se, nan=np.inf))
    named = top_heads(np.where(beyond, inc, -np.inf), int(beyond.sum()))
    numbers = {
        "n_beyond": int(beyond.sum()),
        "n_beyond_noise": int(noisy.sum()),
        "n_chunks": sweep.n_chunks,
        "noise_se": NOISE_SE,
        "max_noise": float(np.nanmax(NOISE_SE * se)) if np.isfinite(se).any() else float("nan"),
        **{f"L{a}H{b}": float(inc[a, b]) for a, b in named},
    }
    if measured:
        numbers["untrained_max"] = blank
    if not np.isfinite(se).any():
        return Claim(
            "The text is too short to tell a head's effect from noise, so no head is named.",
            False,
            numbers,
        )
    noise = (
        f"beyond noise (more than {NOISE_SE:g} standard errors of its increase over "
        f"{sweep.n_chunks} stretches of the text)"
    )
    if untrained is not None:
        ((a0, b0),) = top_heads(np.nan_to_num(untrained.increase, nan=-np.inf), 1)
        noise += (
            f" and beyond the most a head of the same shape with random weights raises it "
            f"({blank:+.3f}, its L{a0}H{b0})"
        )
    also = ""
    if measured and noisy.sum() > beyond.sum():
        rest = top_heads(np.where(noisy & ~beyond, inc, -np.inf), int((noisy & ~beyond).sum()))
        also = (
            " Beyond noise but no further than a head of random weights: "
            + ", ".join(f"L{a}H{b} ({inc[a, b]:+.3f})" for a, b in rest)
            + "."
        )
    if not named:
        return Claim(
            f"No head's ablation raises the loss {noise}; none stands out here.{also}",
            False,
            numbers,
        )
    shown = named if len(named) <= 2 * k else named[:k]  # a short list in full
    top = ", ".join(
        f"L{a}H{b} ({inc[a, b]:+.3f}; noise {NOISE_SE * se[a, b]:.3f})" for a, b in shown
    )
    verb = "raises" if len(named) == 1 else "raise"
    text = f"Ablated one at a time, {len(named)} of the {inc.size} heads {verb} the loss {noise}"
    if shown == named:
        text += f": {top}."
    else:
        most = "The one that raises" if k == 1 else f"The {k} that raise"
        rest = ", ".join(f"L{a}H{b} ({inc[a, b]:+.3f})" for a, b in named[k:])
        text += f". {most} it most: {top}; the other {len(named) - k}: {rest}."
    return Claim(text + also, True, numbers)


def steering_claim(result: SteeringPush, alpha: float) -> Claim:
    """Claim a push towards A (alpha > 0) or B (alpha < 0) only when the measured push has the
    sign of alpha and is larger than every random direction of the same length moves it."""
    push, chance = result.at(alpha)
    numbers = {"alpha": alpha, "push": push, "chance": chance, "n_random": len(result.random)}
    if alpha == 0:
        return Claim("With α = 0 nothing is added: the two texts are the same.", False, numbers)
    towards, away = ("A", "B") if alpha > 0 else ("B", "A")
    measured = (
        f"At α = {alpha:g} the A texts' log-probability per token, minus the B texts', moves by "
        f"{push:+.3f} nats (a random direction of the same length moves it by at most "
        f"{chance:.3f}, over {len(result.random)} tries)"
    )
    if np.sign(push) == np.sign(alpha) and abs(push) > chance:
        return Claim(
            f"{measured}: steering pushes the model towards the {towards} texts, beyond chance.",
            True,
            numbers,
        )
    why = (
        f"it moves towards {away}, the wrong way"
        if np.sign(push) == -np.sign(alpha) and abs(push) > chance
        else "no more than chance"
    )
    return Claim(
        f"{measured}: {why}, so this setting shows no push towards {towards}; any change in "
        "the text is the damage of adding a vector, not the direction.",
        False,
        numbers,
    )


def patching_claim(result: Patching, label) -> Claim:
    """What the change did to the prediction, from both runs' own distributions: a flip is
    claimed only when the corrupted run's favourite differs from the clean run's and LD moves
    by MIN_SPAN at least. `label(id)` gives a token's text as the page shows it."""
    a, w, top = result.answer, result.wrong, result.corrupt_top
    pa, pc = result.p_clean, result.p_corrupt
    numbers = {
        "answer": a,
        "wrong": w,
        "corrupt_top": top,
        "p_clean_answer": float(pa[a]),
        "p_corrupt_answer": float(pc[a]),
        "p_corrupt_top": float(pc[top]),
        "span": result.ld_clean - result.ld_corrupt,
        "min_span": MIN_SPAN,
    }
    qa, qw, qt = (f"“{md_escape(label(i))}”" for i in (a, w, top))
    if top != a:
        said = (
            f"The change flips the prediction: the clean run's favourite is {qa} "
            f"(p = {pa[a]:.2f}); the corrupted run's is {qt} (p = {pc[top]:.2f}), and {qa} "
            f"falls to {pc[a]:.2f}. The maps score each patch by the logit difference "
            f"logit({qa}) − logit({qw})."
        )
        if numbers["span"] >= MIN_SPAN:
            return Claim(said, True, numbers)
        return Claim(
            f"{said} But it moves that difference by only {numbers['span']:.2f} (less than "
            f"{MIN_SPAN:g}), so the shares below are mostly noise.",
            False,
            numbers,
        )
    return Claim(
        f"The change does not flip the prediction: both runs prefer {qa} (p = {pa[a]:.2f} clean, "
        f"{pc[a]:.2f} corrupted). The maps compare it with the clean run's second choice {qw}, "
        "so they show what makes the model more or less sure, not what it predicts: change "
        "another token, or predict after another one.",
        False,
        numbers,
    )


HALF = 0.5  # a patch "restores the answer" when it brings back at least half of LD


def route_claim(result: Patching, position: int) -> Claim:
    """Where the information travels, read off the residual map: the rows (entering block l)
    where patching the changed token alone restores at least HALF of the answer, and those
    where the last position alone does. Claimed when both happen and the hand-over is inside
    the model (the changed token is not the last one)."""
    R, T = result.resid, result.resid.shape[1]
    at_changed = [int(i) for i in np.flatnonzero(R[:, position] >= HALF)]
    at_last = [int(i) for i in np.flatnonzero(R[:, T - 1] >= HALF)]
    numbers = {
        "position": position,
        "half": HALF,
        "last_row_at_changed": max(at_changed) if at_changed else -1,
        "first_row_at_last": min(at_last) if at_last else -1,
        "max_restored": float(np.nanmax(R)) if np.isfinite(R).any() else float("nan"),
    }
    if position == T - 1:
        return Claim(
            "The changed token is the last one, so there is nowhere for the information to "
            "travel: only the last column can restore anything.",
            False,
            numbers,
        )
    if not at_changed or not at_last:
        return Claim(
            f"No single position restores half of the answer in every layer here: the "
            f"information is spread over several positions or heads (the largest share one "
            f"patch restores is {numbers['max_restored']:.2f}).",
            False,
            numbers,
        )
    k, m = numbers["last_row_at_changed"], numbers["first_row_at_last"]
    if m <= k:
        return Claim(
            f"At “{row_name(m, R.shape[0] - 1)}” the changed token and the last position each "
            "restore half of the answer alone: the information is in both places at once.",
            False,
            numbers,
        )
    blocks = f"block {k}" if m == k + 1 else f"blocks {k}–{m - 1}"
    return Claim(
        f"Patching the changed token alone restores at least half of the answer up to "
        f"“{row_name(k, R.shape[0] - 1)}”; patching the last position alone does from "
        f"“{row_name(m, R.shape[0] - 1)}” on: the information moves from the changed token to "
        f"the last position in {blocks}, through attention.",
        True,
        numbers,
    )


def row_name(row: int, n_layer: int) -> str:
    """The residual map's row names: "into block l" for l < L, then "after block L-1"."""
    return f"into block {row}" if row < n_layer else f"after block {n_layer - 1}"
