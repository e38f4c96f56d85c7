"""viz_model/model/scale.py: how much of a big model the pages look at at once."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import tiny_model
from viz_model.model.config import GPTConfig
from viz_model.model.scale import MIN_VIEW_TOKENS, cache_bytes, grid_layers, view_tokens

GPT2_SMALL = GPTConfig(vocab_size=50257, n_ctx=1024, d_model=768, n_layer=12, n_head=12)


@pytest.mark.parametrize("overrides", [{}, {"attn_only": True}, {"n_head": 2, "d_mlp": 40}])
@pytest.mark.parametrize("T", [3, 16])
def test_cache_bytes_is_what_a_full_cache_holds(overrides, T):
    model = tiny_model(**overrides)
    _, cache = model.run_with_cache(torch.arange(T) % model.cfg.vocab_size)
    held = sum(cache[n].numel() * cache[n].element_size() for n in cache)
    # The estimate leaves out LayerNorms' mean and scale (T x 1 each): a few percent at most.
    assert 0.95 * held <= cache_bytes(model.cfg, T) <= held


def test_view_tokens_is_the_most_that_fits_the_budget():
    n = view_tokens(GPT2_SMALL)
    assert n == 128 and n % 32 == 0
    assert cache_bytes(GPT2_SMALL, n) <= 192 * 2**20 < cache_bytes(GPT2_SMALL, n + 32)
    assert view_tokens(GPT2_SMALL, budget=cache_bytes(GPT2_SMALL, 300)) == 288


def test_small_models_keep_their_context_and_nothing_drops_below_the_floor():
    small = GPTConfig(vocab_size=2000, n_ctx=256, d_model=256, n_layer=6, n_head=8)
    assert view_tokens(small) == 256
    assert view_tokens(GPT2_SMALL, budget=1) == MIN_VIEW_TOKENS
    assert view_tokens(GPTConfig(vocab_size=9, n_ctx=16), budget=1) == 16  # the floor: n_ctx


def test_grid_layers_keeps_whole_layers_under_the_panel_cap():
    assert grid_layers(GPT2_SMALL) == 4  # 48 maps of 144
    assert grid_layers(GPTConfig(vocab_size=9, n_layer=6, n_head=8)) == 6  # 48: all of them
    assert grid_layers(GPTConfig(vocab_size=9, n_layer=2, n_head=64, d_model=128)) == 1
