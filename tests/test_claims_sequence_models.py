"""The Sequence models page's "X reaches farthest back" on every claim model (tests/claims_models.py):
each reach stands beside the same measurement on random weights of the model's shape (a model
that learned nothing, analysis/untrained.py), the claim is made only beyond it, models tied for
the farthest are each held to that rule, and a reach at the end of the window is called the limit
of the test. And the model on screen at each of its saved steps is described by that step's
records, not its final step's."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
import torch

from tests.claims_models import ASSETS, CLAIM_MODELS, claim_bundle
from viz_model.analysis import sequence_models as sm
from viz_model.analysis.ngrams import LN2
from viz_model.analysis.untrained import untrained_twin
from viz_model.analysis.variants import windows as val_windows
from viz_model.bundles.load import load_bundle
from viz_model.text.data import load_corpus

WINDOWS = 8  # fewer than the page's 32: the claim is a function of the profiles either way
PEER = "shakespeare-rnn"  # the second model of the comparison: a short reach


@cache
def _text() -> str:
    return load_corpus("shakespeare")[-40_000:]


def profiles(bundle) -> tuple[np.ndarray, np.ndarray]:
    """The model's and its random-weights twin's sensitivity on the same validation windows."""
    ids = torch.tensor(bundle.tokenizer.encode(_text()))
    windows = val_windows(ids, bundle.config.n_ctx, WINDOWS)
    twin = untrained_twin(bundle).model
    return sm.sensitivity(bundle.model, windows), sm.sensitivity(twin, windows)


@cache
def _peer() -> tuple[np.ndarray, np.ndarray]:
    return profiles(load_bundle(ASSETS / PEER))


@pytest.mark.parametrize("name", CLAIM_MODELS)
def test_farthest_reach_is_claimed_only_beyond_random_weights_and_the_limit_is_said(
    name, claim_bundles
):
    bundle = claim_bundle(claim_bundles, name)
    trained, untrained = profiles(bundle)
    peer, peer_untrained = _peer()
    window = min(len(trained), len(peer))
    field = bundle.config.receptive_field if bundle.family == "cnn" else None
    rows = [
        sm.ReachRow(name, trained[:window], untrained[:window], field),
        sm.ReachRow(f"{PEER} (peer)", peer[:window], peer_untrained[:window]),
    ]
    claim = sm.reach_claim(rows, window)
    own, chance = sm.reach(trained[:window]), sm.reach(untrained[:window])
    assert f"{own} for {name} (random weights: {chance})" in claim.text
    if own >= window - 1:
        assert "the limit of this test" in claim.text
    if claim.made:
        far = max(rows, key=lambda r: sm.reach(r.profile))
        far_reach, far_chance = sm.reach(far.profile), sm.reach(far.untrained)
        assert far_reach >= sm.REACH_RATIO * max(far_chance, 1)
        assert f"{far.name} reaches farthest back" in claim.text
        assert f"against {far_chance} with random weights" in claim.text
    elif own > sm.reach(peer[:window]):
        assert f"{name} reaches farthest back" not in claim.text


@pytest.mark.parametrize("name", CLAIM_MODELS)
def test_models_tied_for_the_farthest_reach_are_each_held_to_their_random_weights(
    name, claim_bundles
):
    """Issue 36: 'our-model and shakespeare-tiny reach equally far (63)' where our-model's random
    weights reached 63 too. Tied with a model whose reach is its own by construction (the same
    profile, random weights that reach nothing), each claim model is said to reach that far as
    its own only at twice its random weights' reach."""
    bundle = claim_bundle(claim_bundles, name)
    trained, untrained = profiles(bundle)
    blind = np.r_[1.0, np.zeros(len(trained) - 1)]  # reaches k = 0, as do its random weights
    rows = [
        sm.ReachRow(name, trained, untrained),
        sm.ReachRow("learned", trained, blind),
        sm.ReachRow("nothing", blind, blind),
    ]
    claim = sm.reach_claim(rows, len(trained))
    top, chance = sm.reach(trained), sm.reach(untrained)
    if not top >= sm.REACH_RATIO:  # no model reaches twice as far as another: no tie is said
        assert "reach equally far" not in claim.text
        return
    assert f"{name} and learned reach equally far ({top})" in claim.text
    assert not claim.made
    if top >= sm.REACH_RATIO * max(chance, 1):
        assert "reach at least twice as far as their random weights" in claim.text
        assert "not something it learned" not in claim.text
    else:
        assert "only learned reaches at least twice as far as its random weights (0)" in claim.text
        assert (
            f"with random weights of its shape {name} reaches {chance}, and {top} is not twice "
            "that, so that distance is not something it learned" in claim.text
        )


@pytest.mark.parametrize("name", CLAIM_MODELS)
def test_the_model_on_screen_at_each_saved_step_is_described_by_that_step(name, claim_bundles):
    """Issue 36: at a step before the last the page gave the final step's loss and tokens. At every
    snapshot the sidebar offers, the sentence names the step and gives the last evaluation by it
    (or says there is none), never a later one."""
    from viz_model.analysis.training import final_step, training_steps

    bundle = claim_bundle(claim_bundles, name)
    final = final_step(bundle.history, bundle.meta)
    steps = training_steps(bundle.snapshot_steps(), final)
    if not steps:
        pytest.skip(f"{name} keeps no snapshot before its final step: the sidebar has no slider")
    evals = [(r["step"], r["val_loss"]) for r in bundle.history if r.get("val_loss") is not None]
    for step in steps[:-1]:
        score = sm.score_at(
            bundle.history, bundle.meta, bundle.train_config, bundle.config.n_ctx, step
        )
        by_then = [(s, v) for s, v in evals if s <= step]
        bits = None if score.val_loss is None else score.val_loss / LN2
        text = sm.on_screen_claim(name, "m", 1, score, bits).text
        if bundle.meta.get("step") == final:
            assert f"{name} at training step {step:,} of {final:,}" in text
        if not by_then:
            assert score.val_loss is None and "no validation loss" in text
            continue
        at, loss = max(by_then)
        assert (score.evaluated, score.val_loss) == (at, loss)
        assert f"{loss / LN2:.3f} bits per character" in text
        if at < step:
            assert f"at its last evaluation by then, at step {at:,}" in text
        if score.tokens_evaluated is not None:
            per_step = bundle.train_config["batch_size"] * bundle.config.n_ctx
            assert score.tokens_evaluated == bundle.meta["tokens_seen"] - (final - at) * per_step
            assert f"after {score.tokens_evaluated:,} training tokens" in text
