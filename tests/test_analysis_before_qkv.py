"""viz_model/analysis/before_qkv.py on tiny seeded models: what attention reads is what W_Q, W_K
and W_V multiply (every block variant), softmax(x·xᵀ/√d) is a pattern that keeps the mask, and
the comparison with the heads measures what it says."""

from __future__ import annotations

import math

import numpy as np
import torch

from tests.conftest import tiny_model
from viz_model.analysis.attention import attention_run
from viz_model.analysis.before_qkv import (
    attention_inputs,
    compare,
    query_rows,
    self_is_top,
    top_key,
    xx_patterns,
)
from viz_model.model.mask import attention_mask

IDS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]


def test_the_inputs_are_what_w_q_multiplies_in_every_block_variant(variant_model):
    cfg = variant_model.cfg
    x = attention_inputs(variant_model, IDS)
    assert x.shape == (cfg.n_layer, len(IDS), cfg.d_model)
    names = [f"blocks.{layer}.attn.hook_q" for layer in range(cfg.n_layer)]
    _, cache = variant_model.run_with_cache(torch.tensor(IDS), names=names)
    H, E = cfg.n_head, cfg.d_head
    with torch.no_grad():
        for layer, block in enumerate(variant_model.blocks):
            q = block.attn.qkv(torch.from_numpy(x[layer]))[:, : H * E].view(len(IDS), H, E)
            assert torch.allclose(q, cache[names[layer]], atol=1e-5), layer


def test_x_dot_x_rows_are_weights_that_keep_the_mask():
    for causal in (True, False):
        model = tiny_model(causal=causal)
        xx = xx_patterns(attention_inputs(model, IDS), causal)
        assert xx.shape == (model.cfg.n_layer, len(IDS), len(IDS))
        assert np.allclose(xx.sum(axis=-1), 1)
        hidden = ~attention_mask(causal, len(IDS))
        assert (xx[:, hidden] == 0).all() and (xx[:, ~hidden] > 0).all()
        assert hidden.any() == causal


def test_x_dot_x_is_the_head_formula_with_q_and_k_both_x():
    x = np.random.default_rng(0).normal(size=(1, 5, 8))
    scores = x[0] @ x[0].T / math.sqrt(8)
    scores[np.triu_indices(5, 1)] = -np.inf
    expected = torch.softmax(torch.from_numpy(scores), dim=-1).numpy()
    assert np.allclose(xx_patterns(x, True)[0], expected)


def test_a_pattern_compared_with_itself_is_zero_apart_and_counts_the_same():
    model = tiny_model()
    xx = xx_patterns(attention_inputs(model, IDS), True)
    same = np.repeat(xx[:, None], 3, axis=1)  # three "heads" that are x·x itself
    c = compare(xx, same, True)
    assert np.allclose(c.tv, 0) and (c.self_head == c.self_xx[:, None]).all()
    assert c.n_rows == len(IDS) - 1  # row 0 reads only itself


def test_the_comparison_counts_rows_and_measures_distance_in_0_to_1():
    model = tiny_model()
    run = attention_run(model, IDS)
    xx = xx_patterns(attention_inputs(model, IDS), True)
    c = compare(xx, run.pattern, True)
    rows = query_rows(len(IDS), True)
    for layer in range(model.cfg.n_layer):
        for head in range(model.cfg.n_head):
            p = run.pattern[layer, head]
            mine = sum(p[t].argmax() == t or p[t, t] == p[t].max() for t in rows)
            assert c.self_head[layer, head] == mine
            tv = np.mean([0.5 * np.abs(xx[layer, t] - p[t]).sum() for t in rows])
            assert math.isclose(c.tv[layer, head], tv, rel_tol=1e-5)
    assert ((c.tv >= 0) & (c.tv <= 1)).all()
    assert math.isclose(c.chance_self, sum(1 / (t + 1) for t in rows))
    no_mask = compare(xx, run.pattern, False)  # every row counts, each reads every key
    assert no_mask.n_rows == len(IDS) and math.isclose(no_mask.chance_self, 1.0)


def test_a_tie_with_the_diagonal_counts_as_self_and_top_key_takes_the_first():
    p = np.array([[1.0, 0.0], [0.5, 0.5]])
    assert self_is_top(p).tolist() == [True, True]
    assert top_key(p[1]) == 0
