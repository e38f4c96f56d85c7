"""Exact, nearest and soft look-up against the model's own attention; the spread of q . k."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.conftest import tiny_model
from viz_model.analysis.labs import block as blk
from viz_model.analysis.labs import lookup as lk

IDS = [3, 7, 1, 3, 7, 1, 9, 4, 3, 7, 12, 0]


def _walk():
    return blk.block_walk(tiny_model(), IDS, 1)


def test_soft_lookup_is_the_heads_pattern_row_and_its_output_is_z():
    walk = _walk()
    for head, query in [(0, 4), (2, 11), (3, 0)]:
        found = lk.lookup(walk.q[head], walk.k[head], walk.v[head], IDS, query, True)
        np.testing.assert_allclose(found.weights["soft"], walk.pattern[head, query, : query + 1])
        np.testing.assert_allclose(found.outputs["soft"], walk.z[head, query])


def test_nearest_is_the_argmax_key_and_exact_the_earlier_copies():
    walk = _walk()
    found = lk.lookup(walk.q[1], walk.k[1], walk.v[1], IDS, 9, True)  # token 7, earlier at 1 and 4
    best = int(np.argmax(walk.k[1, :10] @ walk.q[1, 9]))
    assert found.weights["nearest"][best] == 1 and found.weights["nearest"].sum() == 1
    np.testing.assert_allclose(found.outputs["nearest"], walk.v[1, best])
    assert found.matches == [1, 4]
    np.testing.assert_allclose(found.outputs["exact"], walk.v[1, [1, 4]].mean(0))
    alone = lk.lookup(walk.q[1], walk.k[1], walk.v[1], IDS, 6, True)  # token 9: no earlier copy
    assert alone.matches == [] and alone.outputs["exact"] is None


def test_unscaled_softmax_is_sharper_and_spread_grows_with_sqrt_d():
    walk = _walk()
    s = lk.spread(walk.scores[0], walk.q.shape[-1])
    E = walk.q.shape[-1]
    assert s.std_raw == pytest.approx(s.std_scaled * math.sqrt(E))
    assert s.max_weight_raw > s.max_weight_scaled and s.entropy_raw < s.entropy_scaled
    T = len(IDS)
    assert len(s.raw) == len(s.scaled) == T * (T + 1) // 2
    raw, scaled = lk.random_spread([4, 64, 1024], n=3000)
    np.testing.assert_allclose(raw, np.sqrt([4, 64, 1024]), rtol=0.1)
    np.testing.assert_allclose(scaled, 1.0, rtol=0.1)


def test_default_query_is_the_last_token_seen_before():
    assert lk.default_query([3, 7, 1, 3, 9]) == 3
    assert lk.default_query([1, 2, 3]) == 2
    assert lk.default_query([5]) == 0


def test_without_the_mask_a_query_reads_every_key_and_matches_later_copies_too():
    """shakespeare-nomask's heads read the whole window: the look-up must too."""
    model = tiny_model(causal=False)
    walk = blk.block_walk(model, IDS, 1)
    found = lk.lookup(walk.q[1], walk.k[1], walk.v[1], IDS, 4, model.cfg)  # token 7 at 1, 4, 9
    assert found.keys.tolist() == list(range(len(IDS)))
    np.testing.assert_allclose(found.weights["soft"], walk.pattern[1, 4])
    np.testing.assert_allclose(found.outputs["soft"], walk.z[1, 4])
    assert found.matches == [1, 9]
    causal = lk.lookup(walk.q[1], walk.k[1], walk.v[1], IDS, 4, True)
    assert causal.keys.tolist() == [0, 1, 2, 3, 4] and causal.matches == [1]
