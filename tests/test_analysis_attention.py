"""Attention analyses, checked against the model's own recordings and hand-made patterns."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.conftest import tiny_model
from viz_model.analysis.attention import (
    attention_run,
    head_scores,
    head_W_O,
    induction_targets,
    induction_test,
    looks_back_scores,
    ordinary_tokens,
    pattern_entropy,
    query_arithmetic,
    recorded_differences,
    repeated_random_tokens,
    run_query_arithmetic,
)
from viz_model.analysis.head_roles import head_roles
from viz_model.bundles.load import load_bundle
from viz_model.text.tokenization import UNK, Tokenizer

INDUCTION_2L = Path(__file__).resolve().parent.parent / "assets" / "models" / "induction-2l"

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


@pytest.mark.parametrize(
    "overrides", [{}, {"bias": False}, {"norm": "post"}, {"n_head": 2}, {"causal": False}]
)
def test_query_arithmetic_matches_the_recorded_activations(overrides, ids):
    """Also without the mask, where hand arithmetic that hid the future differed by 0.34."""
    model = tiny_model(**overrides)
    _, cache = model.run_with_cache(ids)
    for layer in range(2):
        a = f"blocks.{layer}.attn."
        q, k, v = (cache.numpy(a + n) for n in ("hook_q", "hook_k", "hook_v"))
        W_O = head_W_O(model, layer).detach().numpy()
        for head in range(model.cfg.n_head):
            for query in (0, 5, len(ids) - 1):
                arith = query_arithmetic(
                    q[:, head], k[:, head], v[:, head], W_O[head], query, model.cfg
                )
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
        query_arithmetic(x, x, x, np.zeros((2, 4)), 3, True)


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
    per_query = [  # the copy's successor s + 1, unless it is t itself or t - 1 (trivial)
        sum(p[t, s + 1] for s in range(t - 2) if ids_[s] == ids_[t])
        for t in range(T)
        if ids_[t] in ids_[: max(t - 2, 0)]
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
    induction = next(t for t in rows[0]["tests"] if t.role == "induction")
    assert math.isnan(induction.score) and induction.eligible == 0 and not induction.passed
    assert rows[1]["entropy (nats)"] > 0
    assert rows[0]["claim"].made and not rows[1]["claim"].made


def _looks_back(T: int, k: int) -> np.ndarray:
    """Each query t >= k looks exactly k back; earlier queries rest on position 0."""
    p = np.zeros((T, T))
    p[np.arange(T), np.where(np.arange(T) >= k, np.arange(T) - k, 0)] = 1
    return p


def test_looks_back_scores_find_the_offset_and_agree_with_previous_and_self():
    T = 10
    back = looks_back_scores(_stack(_looks_back(T, 3), _previous_token(T)))[0]  # (H, T)
    assert back[0, 3] == pytest.approx(1) and np.nanmax(np.delete(back[0], 3)) < 0.2
    assert back[1, 1] == pytest.approx(1) and back[1, 0] == 0
    assert np.isnan(back[:, (T + 1) // 2 + 1 :]).all()  # too few queries reach that far
    scores = head_scores(_stack(_looks_back(T, 3), _uniform_causal(T)), list(range(T)))
    np.testing.assert_allclose(scores.previous_token, scores.looks_back[..., 1])
    np.testing.assert_allclose(scores.self_, scores.looks_back[..., 0])


def test_a_fixed_offset_head_is_labelled_looks_k_back():
    T = 24  # long enough that the 5 rows too early to look 5 back (on position 0) are no sink
    rows = head_roles(head_scores(_stack(_looks_back(T, 2), _looks_back(T, 5)), list(range(T))))
    assert [r["role"] for r in rows] == ["looks 2 back", "looks 5 back"]
    assert rows[0]["role score"] == pytest.approx(1)
    assert all(r["entropy (nats)"] == 0 for r in rows)
    assert "5 positions before" in rows[1]["claim"].text


def test_only_a_spread_head_is_mixed_and_a_sharp_head_without_a_role_is_sharp_other():
    T = 12
    fixed_key = np.zeros((T, T))
    fixed_key[np.arange(T), np.minimum(np.arange(T), 4)] = 1  # everyone looks at token 4
    rows = head_roles(head_scores(_stack(_uniform_causal(T), fixed_key), list(range(T))))
    assert [r["role"] for r in rows] == ["mixed", "sharp, other"]
    assert math.isnan(rows[0]["role score"]) and rows[0]["entropy (nats)"] > 1


def test_a_named_role_beats_the_offset_it_implies_on_a_repeated_prompt():
    """An induction head on "abcdefabcdef" also looks 5 back; it is still called induction."""
    ids = [1, 2, 3, 4, 5, 6] * 2
    p = induction_targets(ids).astype(float)
    p[~p.any(-1), 0] = 1  # the first copy rests on position 0, which row 5 reaches 5 back
    rows = head_roles(head_scores(_stack(p), ids))
    tests = {t.role: t for t in rows[0]["tests"]}
    assert tests["looks 5 back"].score > tests["induction"].score - 0.01
    assert tests["looks 5 back"].passed and tests["induction"].passed
    assert rows[0]["role"] == "induction" and tests["induction"].eligible == 6


def test_repeated_random_tokens_repeat_draw_from_the_given_tokens_and_are_seeded():
    pool = np.array([3, 5, 8, 13])
    a = repeated_random_tokens(pool, 10, seed=3)
    assert a.shape == (20,) and a.dtype == np.int64
    assert (a[:10] == a[10:]).all() and set(a.tolist()) <= set(pool.tolist())
    assert (a == repeated_random_tokens(pool, 10, seed=3)).all()
    assert not (a == repeated_random_tokens(pool, 10, seed=4)).all()
    assert len(repeated_random_tokens(pool, 4, repeats=3)) == 12


TEXT = "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n" * 20


@pytest.mark.parametrize("kind", ["char", "bpe", "word"])
def test_ordinary_tokens_exclude_unk_line_breaks_and_special_tokens(kind):
    tok = Tokenizer.train(TEXT, kind, vocab_size={"char": None, "bpe": 300, "word": 40}[kind])
    ids, what = ordinary_tokens(tok)
    shown = [tok.id_to_token(int(i)) for i in ids]
    assert len(ids) >= 2 and str(len(ids)) in what
    assert tok.unk_id not in ids and not set(ids.tolist()) & tok.special_ids
    assert not any("\n" in s or s == UNK for s in shown)
    if kind == "char":  # every printable character of the text, and nothing else
        assert sorted(shown) == sorted(set(TEXT) - {"\n"})
    elif kind == "bpe":  # whole words: a space, then letters
        assert all(s[0] == " " and s[1:].isalpha() for s in shown) and " speak" in shown
    else:
        assert all(s.isalpha() for s in shown) and "Citizen" in shown


def test_the_induction_test_of_induction_2l_uses_its_training_alphabet_and_copy_lengths():
    """induction-2l was trained on a-z copies of 4..16 letters, one example per line."""
    bundle = load_bundle(INDUCTION_2L)
    test = induction_test(bundle.tokenizer, bundle.meta, bundle.config.n_ctx)
    letters = sorted(bundle.tokenizer.id_to_token(int(i)) for i in test.token_ids)
    assert "".join(letters) == "abcdefghijklmnopqrstuvwxyz" and "a-z" in test.drawn_from
    assert test.trained_copy == (4, 16) and test.default_length == 16
    assert test.max_length == bundle.config.n_ctx // 2


def test_induction_2l_l1h2_is_an_induction_head_on_the_default_test():
    bundle = load_bundle(INDUCTION_2L)
    test = induction_test(bundle.tokenizer, bundle.meta, bundle.config.n_ctx)
    ids = repeated_random_tokens(test.token_ids, test.default_length, seed=0)
    scores = head_scores(attention_run(bundle.model, ids).pattern, ids)
    role = {r["head"]: r for r in head_roles(scores, induction=scores)}["L1 H2"]
    assert role["role"] == "induction" and role["role score"] > 0.5
    assert "the repeated random sequence" in role["claim"].text
    assert np.nanargmax(scores.induction) == 1 * 4 + 2  # the strongest induction head of all
