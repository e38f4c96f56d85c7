"""Attention analyses, checked against the model's own recordings and hand-made patterns."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tests.conftest import tiny_model
from viz_model.analysis.attention import (
    attention_run,
    head_roles,
    head_scores,
    head_W_O,
    induction_targets,
    pattern_entropy,
    query_arithmetic,
    recorded_differences,
    repeated_random_tokens,
    run_query_arithmetic,
)

# ---- the forward pass --------------------------------------------------------------------


def test_attention_run_shapes_and_pattern_invariants(model, ids):
    run = attention_run(model, ids)
    L, H, E, D, T = 2, 4, 8, 32, len(ids)
    assert run.pattern.shape == run.scores.shape == (L, H, T, T)
    assert run.q.shape == run.k.shape == run.v.shape == run.z.shape == (L, T, H, E)
    assert run.result.shape == (L, T, H, D) and run.W_O.shape == (L, H, E, D)
    np.testing.assert_allclose(run.pattern.sum(-1), 1.0, atol=1e-5)
    upper = np.triu(np.ones((T, T), dtype=bool), k=1)
    assert (run.pattern[..., upper] == 0).all()
    assert np.isneginf(run.scores[..., upper]).all()
    assert np.isfinite(run.scores[..., ~upper]).all()


def test_head_W_O_splits_the_output_projection_into_heads(model, ids):
    """Each head's z @ W_O[h], summed over heads plus the bias, is the attention output."""
    _, cache = model.run_with_cache(ids)
    for layer in range(2):
        z = cache[f"blocks.{layer}.attn.hook_z"]  # (T, H, E)
        w = head_W_O(model, layer)  # (H, E, D)
        out = torch.einsum("the,hed->td", z, w) + model.blocks[layer].attn.out.bias
        torch.testing.assert_close(out, cache[f"blocks.{layer}.hook_attn_out"], atol=1e-5, rtol=0)


# ---- one query row by hand ------------------------------------------------------------------


@pytest.mark.parametrize("overrides", [{}, {"bias": False}, {"norm": "post"}, {"n_head": 2}])
def test_query_arithmetic_matches_the_recorded_activations(overrides, ids):
    model = tiny_model(**overrides)
    _, cache = model.run_with_cache(ids)
    for layer in range(2):
        a = f"blocks.{layer}.attn."
        q, k, v = (cache.numpy(a + n) for n in ("hook_q", "hook_k", "hook_v"))
        W_O = head_W_O(model, layer).detach().numpy()
        for head in range(model.cfg.n_head):
            for query in (0, 5, len(ids) - 1):
                arith = query_arithmetic(q[:, head], k[:, head], v[:, head], W_O[head], query)
                t = query
                np.testing.assert_allclose(
                    arith.pattern, cache.numpy(a + "hook_pattern")[head, t], atol=1e-6
                )
                np.testing.assert_allclose(arith.z, cache.numpy(a + "hook_z")[t, head], atol=1e-6)
                np.testing.assert_allclose(
                    arith.result, cache.numpy(a + "hook_result")[t, head], atol=1e-6
                )
                scores = cache.numpy(a + "hook_attn_scores")[head, t]
                np.testing.assert_allclose(arith.masked, scores, atol=1e-5)


def test_query_arithmetic_steps_are_consistent(model, ids):
    run = attention_run(model, ids)
    arith = run_query_arithmetic(run, layer=1, head=2, query=6)
    E = arith.d_head
    np.testing.assert_allclose(arith.dots, arith.k @ arith.q)
    np.testing.assert_allclose(arith.scaled, arith.dots / math.sqrt(E))
    assert arith.visible.tolist() == [True] * 7 + [False] * (len(ids) - 7)
    assert np.isneginf(arith.masked[~arith.visible]).all()
    assert (arith.pattern[~arith.visible] == 0).all() and arith.pattern.sum() == pytest.approx(1)
    np.testing.assert_allclose(arith.z, arith.weighted_v.sum(0))
    diffs = recorded_differences(arith, run, 1, 2)
    assert set(diffs) == {"hook_attn_scores", "hook_pattern", "hook_z", "hook_result"}
    assert max(diffs.values()) < 1e-5


def test_recorded_differences_notice_a_wrong_head(model, ids):
    run = attention_run(model, ids)
    arith = run_query_arithmetic(run, layer=0, head=1, query=8)
    assert recorded_differences(arith, run, 0, 2)["hook_z"] > 1e-3


def test_query_arithmetic_rejects_a_query_outside_the_prompt():
    x = np.zeros((3, 2))
    with pytest.raises(IndexError):
        query_arithmetic(x, x, x, np.zeros((2, 4)), 3)


# ---- head roles -------------------------------------------------------------------------------


def _stack(*patterns: np.ndarray) -> np.ndarray:
    """One layer whose heads are the given (T, T) patterns."""
    return np.stack(patterns)[None]


def _previous_token(T: int) -> np.ndarray:
    p = np.zeros((T, T))
    p[0, 0] = 1
    p[np.arange(1, T), np.arange(T - 1)] = 1
    return p


def _uniform_causal(T: int) -> np.ndarray:
    p = np.tril(np.ones((T, T)))
    return p / p.sum(-1, keepdims=True)


def test_induction_targets_example():
    target = induction_targets([5, 6, 5, 6])
    assert np.argwhere(target).tolist() == [[2, 1], [3, 2]]
    assert not induction_targets([1, 2, 3]).any()


def test_head_scores_of_hand_made_patterns():
    T = 6
    ids = [1, 2, 3, 1, 2, 3]
    first = np.zeros((T, T))
    first[:, 0] = 1
    induction = induction_targets(ids).astype(float)
    induction[~induction.any(-1), 0] = 1  # queries without an earlier copy rest on position 0
    scores = head_scores(
        _stack(_previous_token(T), first, np.eye(T), induction, _uniform_causal(T)), ids
    )
    uniform_prev = np.mean([1 / (t + 1) for t in range(1, T)])
    np.testing.assert_allclose(scores.previous_token[0], [1, 0.2, 0, 0.2, uniform_prev])
    np.testing.assert_allclose(scores.first_token[0, :3], [0.2, 1, 0])
    np.testing.assert_allclose(scores.self_[0, :3], [0, 0, 1])
    assert scores.induction[0, 3] == pytest.approx(1)
    assert scores.n_induction_queries == 3
    # one-hot rows carry no uncertainty; uniform rows over t+1 keys carry log(t+1) nats.
    np.testing.assert_allclose(scores.entropy[0, :4], 0, atol=1e-12)
    assert scores.entropy[0, 4] == pytest.approx(np.mean(np.log(np.arange(2, T + 1))))


def test_head_scores_match_a_direct_loop_on_a_real_model(model, ids):
    run = attention_run(model, ids)
    scores = head_scores(run.pattern, ids.tolist())
    p = run.pattern[1, 3]
    T = len(ids)
    assert scores.previous_token[1, 3] == pytest.approx(np.mean([p[t, t - 1] for t in range(1, T)]))
    assert scores.first_token[1, 3] == pytest.approx(np.mean([p[t, 0] for t in range(1, T)]))
    assert scores.self_[1, 3] == pytest.approx(np.mean([p[t, t] for t in range(1, T)]))
    ids_ = ids.tolist()
    per_query = [
        sum(p[t, s + 1] for s in range(t) if ids_[s] == ids_[t])
        for t in range(T)
        if ids_[t] in ids_[:t]
    ]
    assert scores.induction[1, 3] == pytest.approx(np.mean(per_query))
    assert scores.n_induction_queries == len(per_query)


def test_induction_is_nan_without_repeats_and_single_token_is_nan():
    scores = head_scores(_stack(_uniform_causal(4)), [1, 2, 3, 4])
    assert np.isnan(scores.induction).all() and scores.n_induction_queries == 0
    assert not np.isnan(scores.previous_token).any()
    one = head_scores(np.ones((2, 3, 1, 1)), [7])
    assert one.previous_token.shape == (2, 3) and np.isnan(one.entropy).all()


def test_pattern_entropy_treats_zeros_as_no_contribution():
    assert pattern_entropy(np.array([1.0, 0.0, 0.0])) == 0
    assert pattern_entropy(np.array([0.5, 0.5])) == pytest.approx(math.log(2))


def test_head_roles_pick_the_highest_score_above_threshold_else_mixed():
    T = 6
    ids = [1, 2, 3, 4, 5, 6]  # no repeats: induction is NaN and must not win
    rows = head_roles(head_scores(_stack(_previous_token(T), _uniform_causal(T)), ids))
    assert [r["head"] for r in rows] == ["L0 H0", "L0 H1"]
    assert rows[0]["role"] == "previous-token" and rows[0]["role score"] == pytest.approx(1)
    assert rows[1]["role"] == "mixed" and math.isnan(rows[1]["role score"])
    assert math.isnan(rows[0]["induction"])
    assert rows[1]["entropy (nats)"] > 0


def test_repeated_random_tokens_repeat_and_are_seeded():
    a = repeated_random_tokens(50, 10, seed=3)
    assert a.shape == (20,) and a.dtype == np.int64
    assert (a[:10] == a[10:]).all() and a.min() >= 0 and a.max() < 50
    assert (a == repeated_random_tokens(50, 10, seed=3)).all()
    assert not (a == repeated_random_tokens(50, 10, seed=4)).all()
    assert len(repeated_random_tokens(50, 4, repeats=3)) == 12
