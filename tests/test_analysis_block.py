"""The block walk-through and the matrix form, each against what the model itself recorded."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.conftest import VARIANTS, tiny_model
from viz_model.analysis import attention as attn
from viz_model.analysis.labs import block as blk
from viz_model.model.hooks import hook_context

IDS = [3, 7, 1, 3, 7, 1, 9, 4, 3, 7, 12, 0]


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("layer", [0, 1])
def test_every_hooked_step_equals_what_the_model_recorded(variant, layer):
    model = tiny_model(**VARIANTS[variant])
    walk = blk.block_walk(model, IDS, layer)
    _, cache = model.run_with_cache(torch.tensor(IDS))
    hooked = [s for s in walk.steps if s.hook is not None]
    assert walk.steps[-1].symbol == "h" and walk.steps[-1].hook.endswith("hook_resid_post")
    assert len(hooked) >= 3
    for step in hooked:
        recorded = cache[step.hook].double().numpy()
        np.testing.assert_allclose(step.vectors, recorded, atol=1e-5, err_msg=step.symbol)


def test_pre_ln_steps_are_the_lectures_t1_to_h():
    walk = blk.block_walk(tiny_model(), IDS, 0)
    assert [s.symbol for s in walk.steps] == ["x", "t1", "t2", "t3", "t4", "t5", "h"]
    x, t2, t3, t5, h = (walk.step(s).vectors for s in ("x", "t2", "t3", "t5", "h"))
    np.testing.assert_allclose(t3, x + t2)
    np.testing.assert_allclose(h, t3 + t5)
    # t1 is LayerNorm(x): gamma * normalized + beta, with normalized as the hook recorded it
    model = tiny_model()
    _, cache = model.run_with_cache(torch.tensor(IDS))
    ln = model.blocks[0].ln1
    t1 = cache["blocks.0.ln1.hook_normalized"] * ln.weight + ln.bias
    np.testing.assert_allclose(walk.step("t1").vectors, t1.detach().double().numpy(), atol=1e-5)


def test_matrix_form_matches_the_recorded_pattern_and_each_row_by_hand():
    model = tiny_model()
    walk = blk.block_walk(model, IDS, 1)
    run = attn.attention_run(model, IDS)
    np.testing.assert_allclose(walk.pattern, run.pattern[1], atol=1e-5)
    np.testing.assert_allclose(walk.z, run.z[1].transpose(1, 0, 2), atol=1e-5)
    np.testing.assert_allclose(walk.head_out, run.result[1].transpose(1, 0, 2), atol=1e-5)
    # every row of the matrix form is the Attention page's one-row arithmetic
    for t in (0, 5, len(IDS) - 1):
        row = attn.run_query_arithmetic(run, 1, 2, t)
        np.testing.assert_allclose(walk.pattern[2, t], row.pattern, atol=1e-5)
        np.testing.assert_allclose(walk.head_out[2, t], row.result, atol=1e-5)
    assert np.isneginf(walk.scores[0, 0, 1:]).all()


def _head_result_on(model, layer: int, x: torch.Tensor) -> torch.Tensor:
    """Block `layer`'s attention run directly on vectors x (T, D): each head's write (T, H, D)."""
    name = f"blocks.{layer}.attn.hook_result"
    with torch.no_grad(), hook_context(record=[name]) as ctx:
        model.blocks[layer].attn(x[None])
    return ctx.store[name][0]


def test_ov_circuit_is_the_heads_write_on_a_one_hot_input():
    model = tiny_model()
    w = blk.head_weights(model, 1)
    for head in range(model.cfg.n_head):
        c = blk.circuits(model, 1, head)
        for token in (0, 5, 22):
            x = model.W_E[token].detach()[None]  # one token: the head attends to it fully
            result = _head_result_on(model, 1, x)[0, head].double().numpy()
            e = model.W_E[token].detach().double().numpy()
            expected = e @ c.W_OV + w["b_V"][head] @ w["W_O"][head]
            np.testing.assert_allclose(result, expected, atol=1e-5)
    assert c.ov_rank <= model.cfg.d_head and c.qk_rank <= model.cfg.d_head
    assert c.ov_rank == model.cfg.d_head  # random weights: full rank through the head


def test_qk_circuit_gives_the_score_between_two_one_hot_tokens():
    model = tiny_model(act="relu", bias=False)
    c = blk.circuits(model, 0, 3)
    a, b = 4, 9
    x = model.W_E[[b, a]].detach()  # key token b at 0, query token a at 1
    name = "blocks.0.attn.hook_attn_scores"
    with torch.no_grad(), hook_context(record=[name]) as ctx:
        model.blocks[0].attn(x[None])
    score = float(ctx.store[name][0, 3, 1, 0])
    e = model.W_E.detach().double().numpy()
    assert score == pytest.approx(e[a] @ c.W_QK @ e[b] / np.sqrt(model.cfg.d_head), abs=1e-5)


def test_token_maps_read_the_circuits_through_the_vocabulary():
    model = tiny_model()
    c = blk.circuits(model, 0, 1)
    X = blk.direct_tokens(model, 0)
    V = model.cfg.vocab_size
    assert c.qk_tokens.shape == c.ov_tokens.shape == (V, V)
    np.testing.assert_allclose(c.ov_tokens[5], X[5] @ c.W_OV @ model.W_U.detach().double().numpy())
    pairs = blk.top_pairs(c.ov_tokens, n=4)
    centred = c.ov_tokens - c.ov_tokens.mean(1, keepdims=True)
    assert pairs[0][2] == pytest.approx(centred.max())
    assert [p[2] for p in pairs] == sorted((p[2] for p in pairs), reverse=True)
    top = blk.row_top(c.ov_tokens, [5], n=2)[5]
    assert top[0][0] == int(np.argmax(c.ov_tokens[5]))


def test_recorded_differences_are_small_and_would_catch_a_wrong_step():
    model = tiny_model()
    walk = blk.block_walk(model, IDS, 0)
    diffs = blk.recorded_differences(model, IDS, walk)
    assert set(diffs) == {"x", "t2", "t3", "t5", "h"}
    assert max(diffs.values()) < 1e-5
    wrong = blk.block_walk(tiny_model(seed=1), IDS, 0)  # another model's numbers
    assert blk.recorded_differences(model, IDS, wrong)["h"] > 1e-2


def test_a_large_vocabulary_is_mapped_on_a_subset_with_the_prompts_tokens(monkeypatch):
    model = tiny_model()
    full = blk.circuits(model, 0, 2)
    assert full.token_ids == list(range(model.cfg.vocab_size))
    monkeypatch.setattr(blk, "MAX_VOCAB_MAP", 8)
    ids = blk.map_tokens(model.cfg.vocab_size, [20, 3])
    assert ids == [0, 1, 2, 3, 4, 5, 6, 7, 20]
    part = blk.circuits(model, 0, 2, ids)
    assert part.ov_tokens.shape == part.qk_tokens.shape == (9, 9)
    np.testing.assert_allclose(part.ov_tokens, full.ov_tokens[np.ix_(ids, ids)])
    np.testing.assert_allclose(part.qk_tokens, full.qk_tokens[np.ix_(ids, ids)])
