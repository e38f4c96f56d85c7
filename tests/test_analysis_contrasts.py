"""Architecture contrasts: the loss read with the whole window against the loss as generated, and
the per-position loss on repeated random sequences."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.conftest import VOCAB, tiny_model
from viz_model.analysis import contrasts as ct
from viz_model.analysis.dynamics import measure

IDS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]


@pytest.mark.parametrize("causal", [True, False])
def test_generated_loss_never_reads_the_future_and_seen_does_only_without_a_mask(causal):
    model = tiny_model(causal=causal)
    before = ct.look_ahead(model, IDS)
    changed = ct.look_ahead(model, [*IDS[:-1], (IDS[-1] + 1) % VOCAB])  # only the last token
    # position t predicts t+1: positions 0..T-3 never have the last token as their answer
    np.testing.assert_allclose(changed.generated[:-1], before.generated[:-1], atol=1e-6)
    moved = np.abs(changed.seen[:-1] - before.seen[:-1]).max()
    assert (moved > 1e-6) == (not causal), moved


def test_a_causal_model_loses_the_same_both_ways():
    la = ct.look_ahead(tiny_model(), IDS)
    assert la.seen.shape == la.generated.shape == (len(IDS) - 1,)
    np.testing.assert_allclose(la.seen, la.generated, atol=1e-5)
    assert la.mean_seen == pytest.approx(la.mean_generated, abs=1e-5)


@pytest.mark.parametrize("n", [0, 1, 17])
def test_look_ahead_refuses_sequences_it_cannot_score(n):
    with pytest.raises(ValueError, match="look_ahead needs 2 to 16 tokens"):
        ct.look_ahead(tiny_model(), list(range(n)))


def test_copy_profile_agrees_with_the_training_dynamics_measures():
    model = tiny_model(attn_only=True)
    rng = np.random.default_rng(0)
    half = rng.integers(1, VOCAB, size=(5, 6))
    ids = np.concatenate([half, half], axis=1)  # (B, 2k), k = 6
    profile = ct.copy_profile(model, ids)
    assert profile.k == 6 and profile.loss.shape == (11,)
    m = measure(model, ids)
    assert profile.loss[6:11].mean() == pytest.approx(m.loss_second, rel=1e-5)
    assert profile.loss[:5].mean() == pytest.approx(m.loss_first, rel=1e-5)
    assert profile.measures.copy_accuracy == m.copy_accuracy


def test_next_token_weight_is_zero_under_the_mask_and_one_for_a_head_looking_ahead():
    T = 5
    ahead = np.eye(T, k=1)
    ahead[-1, -1] = 1.0  # the last query has no next token: it looks at itself
    causal = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
    w = ct.next_token_weight(np.stack([np.stack([ahead, causal])]))  # (1, 2, T, T)
    np.testing.assert_allclose(w, [[1.0, 0.0]])
    _, cache = tiny_model(causal=False).run_with_cache(torch.tensor(IDS))
    patterns = np.stack([cache.numpy(f"blocks.{i}.attn.hook_pattern") for i in range(2)])
    assert (ct.next_token_weight(patterns) > 0.01).all()  # unmasked: every head sees ahead


def test_closest_twin_prefers_the_same_shape_and_needs_the_field_to_differ():
    own = {"norm": "pre", "d_model": 64, "n_layer": 2}
    others = {
        "big-post": {"norm": "post", "d_model": 128, "n_layer": 4},
        "twin-post": {"norm": "post", "d_model": 64, "n_layer": 2},
        "same-pre": {"norm": "pre", "d_model": 64, "n_layer": 2},
    }
    assert ct.closest_twin(own, others, "norm") == "twin-post"
    assert ct.closest_twin(own, {"big-post": others["big-post"]}, "norm") == "big-post"
    assert ct.closest_twin(own, {"same-pre": others["same-pre"]}, "norm") is None
