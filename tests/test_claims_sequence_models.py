"""The Sequence models page's "X reaches farthest back" on every claim model (tests/claims_models.py):
each reach stands beside the same measurement on random weights of the model's shape (a model
that learned nothing, analysis/untrained.py), the claim is made only beyond it, and a reach at the
end of the window is called the limit of the test."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
import torch

from tests.claims_models import ASSETS, CLAIM_MODELS, claim_bundle
from viz_model.analysis import sequence_models as sm
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
    assert f"{name} {own} (random weights: {chance})" in claim.text
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
