"""The sentences the SAE page prints (what resampling did, what splicing costs, dead features,
steering, features shared across training), each a Claim decided on the numbers it states as
printed. Apart from the measuring, so that every sentence and its threshold is in one place.
"""

from __future__ import annotations

import numpy as np

from viz_model.analysis.claims import Claim, as_printed
from viz_model.analysis.labs.sae.matching import MATCH_CORR, Matches
from viz_model.analysis.labs.sae.metrics import SAEMetrics
from viz_model.analysis.labs.sae.training import RESAMPLE_UNTIL, TrainLog

GOOD_RECOVERY = 0.8  # a reconstruction "keeps most of what the layer is worth" above this


def resampling_note(log: TrainLog) -> str:
    """What resampling did, in words (a fact about this run, not a finding about the model)."""
    if log.resampled:
        return "Resampled: " + ", ".join(f"{n} at step {s}" for s, n in log.resampled) + "."
    if not log.checks:
        return (
            f"Resampling never ran: it looks for dead features every {log.resample_every} steps "
            f"in the first {RESAMPLE_UNTIL:.0%} of training, and this run had {len(log.mse)}."
        )
    return f"Resampling looked {log.checks} time{'s' * (log.checks > 1)} and found no dead feature."


def _moved(what: str, before: float, after: float) -> str:
    """'raises the loss from 4.358 to 4.401': the verb as the change reads printed to 3 decimals
    (on a model that learned nothing a splice can lower the loss, or leave it)."""
    shown = float(f"{after:.3f}") - float(f"{before:.3f}")
    if shown == 0:
        return f"leaves {what} at {after:.3f}"
    verb = "raises" if shown > 0 else "lowers"
    start = f" from {before:.3f}" if what == "the loss" else ""
    return f"{verb} {what}{start} to {after:.3f}"


def splice_claim(m: SAEMetrics, l1: bool = False) -> Claim:
    """What splicing the reconstruction in costs, against what mean-ablating the hook costs;
    l1: the SAE's sparsity is an L1 penalty (the remedy then is a smaller coefficient)."""
    cost, worth = m.spliced_loss - m.clean_loss, m.ablated_loss - m.clean_loss
    # the differences the sentence states are those of the losses it prints (3 decimals)
    clean, spliced, ablated = (
        as_printed(x, 3) for x in (m.clean_loss, m.spliced_loss, m.ablated_loss)
    )
    cost_shown, worth_shown = round(spliced - clean, 3) + 0.0, round(ablated - clean, 3) + 0.0
    numbers = {
        "cost": cost,
        "worth": worth,
        "recovered": m.loss_recovered,
        "threshold": GOOD_RECOVERY,
    }
    measured = (
        f"Splicing the SAE's reconstruction in {_moved('the loss', m.clean_loss, m.spliced_loss)} "
        "nats per "
        f"token ({cost_shown:+.3f}); replacing the activation by its mean "
        f"{_moved('it', m.clean_loss, m.ablated_loss)} ({worth_shown:+.3f})"
    )
    if worth <= 0:
        return Claim(
            f"{measured}: this hook carries nothing the loss can see, so the comparison says "
            "nothing about the SAE.",
            False,
            numbers,
        )
    remedy = "a smaller L1 coefficient" if l1 else "a larger k"
    if m.spliced_loss > m.ablated_loss:
        return Claim(
            f"{measured}. The reconstruction does worse than the mean activation: it keeps none "
            f"of what this activation is worth; train on more tokens or with {remedy}.",
            False,
            numbers,
        )
    share = f"{m.loss_recovered:.0%}"
    if m.loss_recovered >= GOOD_RECOVERY:
        return Claim(
            f"{measured}. The reconstruction keeps {share} of what this activation is worth to "
            f"the loss: it costs {cost_shown:.3f} of the {worth_shown:.3f} nats the activation is "
            "worth.",
            True,
            numbers,
        )
    return Claim(
        f"{measured}. The reconstruction keeps only {share} of what this activation is worth "
        f"(below {GOOD_RECOVERY:.0%}): too rough to stand in for it; train on more tokens or "
        f"with {remedy}.",
        False,
        numbers,
    )


def dead_claim(m: SAEMetrics, window_tokens: int) -> Claim:
    """How many features are dead, and what that means for the dictionary's real size."""
    numbers = {"dead": m.n_dead, "features": m.n_features, "window": window_tokens}
    if m.n_dead == 0:
        return Claim(
            f"All {m.n_features:,} features fired during the last {window_tokens:,} training "
            "tokens: none is dead.",
            False,
            numbers,
        )
    return Claim(
        f"{m.n_dead:,} of {m.n_features:,} features did not fire once on the last "
        f"{window_tokens:,} training tokens (dead): the dictionary in use has "
        f"{m.n_alive:,} directions.",
        True,
        numbers,
    )


def steering_claim(plain: list[int], pushed: list[int], alpha: float) -> Claim:
    """Where the steered text first leaves the plain one (same seed, so only the push differs)."""
    n = min(len(plain), len(pushed))
    first = next((i for i in range(n) if plain[i] != pushed[i]), None)
    numbers = {"alpha": alpha, "first_difference": -1 if first is None else first, "tokens": n}
    if first is None:
        return Claim(
            f"With strength {alpha:g} the {n} generated tokens are the same with and without "
            "the push: at this strength the feature does not change what is sampled.",
            False,
            numbers,
        )
    shared = (
        "differ from the first generated token"
        if first == 0
        else f"share their first {first} generated token{'' if first == 1 else 's'} and then part"
    )
    return Claim(
        f"With strength {alpha:g} the two texts {shared}: from there on, every difference comes "
        "from the added feature direction (the sampling seed is the same).",
        True,
        numbers,
    )


def feature_match_claim(feature: int, m: Matches, step: int) -> Claim:
    """Whether one feature of the SAE on screen has a counterpart in the other SAE, decided on
    the correlation as printed; with `m.untrained`, also said against the SAE on random weights
    of the same shape: a feature that one has too is what any model of this shape has (such as
    which token is here), not something learned."""
    j, r = int(m.best[feature]), float(m.r[feature])
    numbers = {"feature": feature, "match": j, "r": r, "threshold": MATCH_CORR}
    said = (
        f"Feature {feature} here is closest to feature {j} of the step-{step:,} SAE "
        f"(correlation {r:.2f})"
    )
    if as_printed(r) < MATCH_CORR:
        return Claim(f"{said}: below {MATCH_CORR}, so it has no counterpart there.", False, numbers)
    if m.untrained is None:
        return Claim(f"{said}: at or above {MATCH_CORR}, the same feature.", True, numbers)
    blank = float(m.untrained[feature])
    numbers["untrained"] = blank
    if as_printed(blank) < MATCH_CORR:
        return Claim(
            f"{said}: at or above {MATCH_CORR}, the same feature; the SAE on random weights of "
            f"the same shape has none that close ({blank:.2f}).",
            True,
            numbers,
        )
    return Claim(
        f"{said}: at or above {MATCH_CORR}, but the SAE on random weights of the same shape, a "
        f"model that learned nothing, also has one at or above {MATCH_CORR} ({blank:.2f}): a "
        "feature any model of this shape has (such as which token is here), not one this model "
        "learned.",
        False,
        numbers,
    )


def _do(n: int) -> str:
    return "does" if n == 1 else "do"


def match_claim(
    r: np.ndarray,
    chance: np.ndarray,
    alive: np.ndarray,
    step: int,
    tokens: int = 0,
    *,
    untrained: np.ndarray,
    later: bool = False,
) -> Claim:
    """How many alive features of the SAE on screen have a counterpart in the SAE of the snapshot
    at `step` (correlation >= MATCH_CORR), against two controls: the same count with the tokens
    shuffled, and with an SAE trained the same way on random weights of the same shape (a model
    that learned nothing: token-identity features exist in any embedding). "Already there" only
    beyond both. `tokens`: how many tokens `alive` was measured on (said, so that "fire here" is
    not read as the SAE's alive count, measured on its training tokens). `later`: the snapshot
    at `step` comes after the model on screen, so shared features are still there, not already."""
    alive = np.asarray(alive, bool)
    n, found, by_chance, blank = (
        int(alive.sum()),
        int((r[alive] >= MATCH_CORR).sum()),
        int((chance[alive] >= MATCH_CORR).sum()),
        int((np.asarray(untrained)[alive] >= MATCH_CORR).sum()),
    )
    numbers = {
        "alive": n,
        "matched": found,
        "chance": by_chance,
        "untrained": blank,
        "threshold": MATCH_CORR,
    }
    where = f"on these {tokens:,} tokens" if tokens else "here"
    measured = (
        f"{found:,} of the {n:,} features that fire {where} have a counterpart in the SAE trained on "
        f"the model at step {step:,} (activations correlated at {MATCH_CORR} or more over the same "
        f"tokens); with the tokens shuffled, {by_chance:,} {_do(by_chance)}; in an SAE trained the "
        f"same way on the same shape with random weights, a model that learned nothing, "
        f"{blank:,} {_do(blank)}"
    )
    if found > by_chance and found > blank:
        when = "are still there" if later else "were already there"
        return Claim(
            f"{measured}: those {found:,} {when} at step {step:,}, {found - blank:,} "
            "more than a model that learned nothing gives.",
            True,
            numbers,
        )
    if found > by_chance:
        return Claim(
            f"{measured}: no more than random weights give, so what the two share is what any "
            "model of this shape has (such as which token is here), not something "
            + ("this model learned." if later else f"learned by step {step:,}."),
            False,
            numbers,
        )
    return Claim(
        f"{measured}: no more than chance, so the two dictionaries share no features this test "
        "can see.",
        False,
        numbers,
    )
