"""Invariants of the instrumented GPT (docs/ARCHITECTURE.md, Hook names), on a seeded tiny model per config option."""

from __future__ import annotations

import copy

import pytest
import torch

from tests.conftest import VOCAB, tiny_model
from viz_model.model.config import GPTConfig
from viz_model.model.gpt import GPT, KVCache
from viz_model.model.hooks import hook_context
from viz_model.model.mask import attention_mask

ATOL = 1e-5


def test_recording_changes_no_output(variant_model: GPT, ids):
    plain = variant_model(ids)
    cached, cache = variant_model.run_with_cache(ids)
    assert len(cache) == len(variant_model.hook_names())
    torch.testing.assert_close(cached, plain, atol=ATOL, rtol=0)


def test_fused_and_explicit_attention_give_the_same_logits(variant_model: GPT, ids):
    fused = variant_model(ids)
    patterns = [f"blocks.{i}.attn.hook_pattern" for i in range(variant_model.cfg.n_layer)]
    with hook_context(record=patterns) as ctx:
        explicit = variant_model(ids)
    assert set(ctx.store) == set(patterns)  # the explicit path really ran
    torch.testing.assert_close(explicit, fused, atol=ATOL, rtol=0)


def test_pattern_rows_sum_to_one_and_are_zero_exactly_where_the_mask_hides(variant_model, ids):
    """Causal: zeros above the diagonal, weight everywhere else. No mask: weight everywhere."""
    _, cache = variant_model.run_with_cache(ids)
    T = len(ids)
    visible = torch.from_numpy(attention_mask(variant_model.cfg, T))
    assert bool(visible.all()) == (not variant_model.cfg.causal)
    for layer in range(variant_model.cfg.n_layer):
        pattern = cache[f"blocks.{layer}.attn.hook_pattern"]
        assert pattern.shape == (variant_model.cfg.n_head, T, T)
        torch.testing.assert_close(pattern.sum(-1), torch.ones(pattern.shape[:2]))
        assert (pattern[:, ~visible] == 0).all()
        assert (pattern[:, visible] > 0).all()


def test_scores_are_scaled_dot_products_and_pattern_is_their_softmax(model: GPT, ids):
    _, cache = model.run_with_cache(ids)
    q, k = cache["blocks.1.attn.hook_q"], cache["blocks.1.attn.hook_k"]  # (T, H, E)
    scores = cache["blocks.1.attn.hook_attn_scores"]  # (H, T, T)
    t = 5
    expected = torch.einsum("he,khe->hk", q[t], k[: t + 1]) / model.cfg.d_head**0.5
    torch.testing.assert_close(scores[:, t, : t + 1], expected)
    assert torch.isinf(scores[:, t, t + 1 :]).all()
    torch.testing.assert_close(cache["blocks.1.attn.hook_pattern"], torch.softmax(scores, -1))


@pytest.mark.parametrize("variant", ["default", "no_pos", "tied", "relu_nobias"])
def test_residual_stream_is_the_sum_of_what_each_component_wrote(variant, ids):
    from tests.conftest import VARIANTS

    model = tiny_model(**VARIANTS[variant])
    _, cache = model.run_with_cache(ids)
    total = sum(t for _, t in cache.layer_outputs())
    torch.testing.assert_close(total, cache["blocks.1.hook_resid_post"], atol=ATOL, rtol=0)


def test_attn_only_residual_has_no_mlp_terms(ids):
    model = tiny_model(attn_only=True)
    _, cache = model.run_with_cache(ids)
    names = [n for n, _ in cache.layer_outputs()]
    assert names == ["embed", "pos", "attn 0", "attn 1"]
    total = sum(t for _, t in cache.layer_outputs())
    torch.testing.assert_close(total, cache["blocks.1.hook_resid_post"], atol=ATOL, rtol=0)


def test_head_results_sum_with_bias_to_attn_out(variant_model: GPT, ids):
    _, cache = variant_model.run_with_cache(ids)
    for layer, block in enumerate(variant_model.blocks):
        result = cache[f"blocks.{layer}.attn.hook_result"]  # (T, H, D)
        bias = block.attn.out.bias if block.attn.out.bias is not None else 0.0
        attn_out = cache[f"blocks.{layer}.hook_attn_out"]
        torch.testing.assert_close(result.sum(1) + bias, attn_out, atol=ATOL, rtol=0)
        # and z projected through the full W_O gives the same thing
        z = cache[f"blocks.{layer}.attn.hook_z"].reshape(len(ids), -1)
        torch.testing.assert_close(block.attn.out(z), attn_out, atol=ATOL, rtol=0)


def test_logit_lens_at_the_last_layer_equals_the_logits(variant_model: GPT, ids):
    logits, cache = variant_model.run_with_cache(ids)
    last = cache[f"blocks.{variant_model.cfg.n_layer - 1}.hook_resid_post"]
    lens = variant_model.unembed(variant_model.final_norm(last))
    torch.testing.assert_close(lens, logits, atol=ATOL, rtol=0)


def test_layernorm_hooks_hold_mean_scale_and_normalized(model: GPT, ids):
    _, cache = model.run_with_cache(ids)
    x = cache["blocks.0.hook_resid_pre"]
    mean, scale = cache["blocks.0.ln1.hook_mean"], cache["blocks.0.ln1.hook_scale"]
    normalized = cache["blocks.0.ln1.hook_normalized"]
    assert mean.shape == scale.shape == (len(ids), 1)
    torch.testing.assert_close(mean[:, 0], x.mean(-1))
    torch.testing.assert_close(scale[:, 0], (x.var(-1, unbiased=False) + 1e-5).sqrt())
    torch.testing.assert_close(normalized.mean(-1), torch.zeros(len(ids)), atol=1e-5, rtol=0)
    ln = model.blocks[0].ln1
    torch.testing.assert_close(
        normalized * ln.weight + ln.bias,
        torch.nn.functional.layer_norm(x, x.shape[-1:], ln.weight, ln.bias),
    )


def test_causal_model_ignores_future_tokens(variant_model: GPT, ids):
    """A causal model's logits at t ignore token t+1; without the mask every position reads it;
    at t+1 the logits always depend on token t+1.

    Measured in float64: without residual connections the later token moves the logits at t+1 by
    only ~3e-7 of their size (the stacked attention averages tokens away), which is float32's
    rounding (eps 1.2e-7) but a billion times float64's (2.2e-16)."""
    model = copy.deepcopy(variant_model).double()
    t = 6
    changed = ids.clone()
    changed[t + 1] = (changed[t + 1] + 1) % VOCAB
    before, after = model(ids), model(changed)
    # far above float64's rounding of these sums, far below any real dependence
    noise = 1e6 * torch.finfo(torch.float64).eps * before.abs().max()
    moved = (before[: t + 1] - after[: t + 1]).abs().amax(-1)
    if model.cfg.causal:
        assert (moved <= noise).all(), moved
    else:
        assert (moved > 1e-4).all(), moved
    moved_next = (before[t + 1] - after[t + 1]).abs().max()
    assert moved_next > noise, (moved_next, noise)


@pytest.mark.parametrize("causal", [True, False])
def test_only_the_unmasked_model_sees_the_future(causal: bool, ids):
    """Changing token t+1 moves the logits at t exactly when there is no causal mask."""
    model, t = tiny_model(causal=causal), 6
    changed = ids.clone()
    changed[t + 1] = (changed[t + 1] + 1) % VOCAB
    moved = (model(ids)[t] - model(changed)[t]).abs().max().item()
    assert (moved > 1e-3) == (not causal), moved


def test_unmasked_attention_is_the_same_on_both_paths_and_looks_ahead(ids):
    model = tiny_model(causal=False)
    with hook_context(record=["blocks.0.attn.hook_pattern"]) as ctx:
        explicit = model(ids)
    torch.testing.assert_close(explicit, model(ids), atol=ATOL, rtol=0)
    pattern = ctx.store["blocks.0.attn.hook_pattern"][0]  # (H, T, T)
    above = torch.triu(torch.ones(len(ids), len(ids), dtype=torch.bool), diagonal=1)
    assert pattern[:, above].sum() > 1.0  # weight on later positions
    torch.testing.assert_close(pattern.sum(-1), torch.ones(pattern.shape[:2]))


def test_kv_cache_forward_equals_full_forward(variant_model: GPT, ids):
    """Caching the past is exact under a causal mask. Without one the past would also read the
    new tokens, so a cached run differs (which is why sampling.py caches only causal models)."""
    full = variant_model(ids)
    kv = KVCache(variant_model.cfg.n_layer)
    first = variant_model(ids[:5], kv)
    rest = [variant_model(ids[i : i + 1], kv) for i in range(5, 8)]
    chunk = variant_model(ids[8:], kv)  # several new tokens at once after a past
    got = torch.cat([first, *rest, chunk])
    if variant_model.cfg.causal:
        torch.testing.assert_close(got, full, atol=ATOL, rtol=0)
    else:
        assert not torch.allclose(got, full, atol=1e-3)


def test_batched_cache_keeps_batch_and_matches_single_runs(model: GPT, ids):
    other = torch.flip(ids, [0])
    _, batch_cache = model.run_with_cache(torch.stack([ids, other]))
    _, single = model.run_with_cache(other)
    assert batch_cache.batched and not single.batched
    name = "blocks.1.attn.hook_pattern"
    torch.testing.assert_close(batch_cache[name][1], single[name], atol=ATOL, rtol=0)


def test_a_batch_of_one_keeps_its_batch_dimension_unless_asked(model: GPT, ids):
    """TransformerLens's rule: ids (1, T) give (1, ...) tensors; remove_batch_dim drops it."""
    name = "blocks.0.attn.hook_pattern"
    logits, one = model.run_with_cache(ids[None], names=[name])
    _, dropped = model.run_with_cache(ids[None], names=[name], remove_batch_dim=True)
    _, plain = model.run_with_cache(ids, names=[name])
    T, H = len(ids), model.cfg.n_head
    assert logits.shape == (1, T, model.cfg.vocab_size) and one.batched
    assert one[name].shape == (1, H, T, T) and dict(one)[name].shape == (1, H, T, T)
    assert dropped[name].shape == plain[name].shape == (H, T, T)
    torch.testing.assert_close(one[name][0], plain[name], atol=ATOL, rtol=0)
    with pytest.raises(ValueError, match="one sequence"):
        model.run_with_cache(torch.stack([ids, ids]), remove_batch_dim=True)


def test_torchs_own_hooks_run_on_a_hook_point(model: GPT, ids):
    """register_forward_hook on a HookPoint sees (and may replace) what passes through, beside
    the HookContext's functions; without it the point stays an identity."""
    point = model.get_submodule("blocks.0.hook_resid_pre")
    seen = []
    handle = point.register_forward_hook(lambda mod, args, out: seen.append(out.shape))
    _, cache = model.run_with_cache(ids, names=["blocks.0.hook_resid_pre"])
    handle.remove()
    assert seen == [(1, len(ids), model.cfg.d_model)]  # the point sees the batched (B, T, D)
    clean = model(ids)
    handle = point.register_forward_hook(lambda mod, args, out: torch.zeros_like(out))
    zeroed = model(ids)
    handle.remove()
    assert not torch.allclose(zeroed, clean, atol=1e-3)
    torch.testing.assert_close(model(ids), clean, atol=ATOL, rtol=0)  # removed: as before


def test_names_filter_keeps_only_what_was_asked(model: GPT, ids):
    names = ["blocks.0.attn.hook_pattern", "unembed.hook_out"]
    logits, cache = model.run_with_cache(ids, names=names)
    assert cache.names == names
    torch.testing.assert_close(cache["unembed.hook_out"], logits)
    with pytest.raises(KeyError, match="no hook"):
        model.run_with_cache(ids, names=["blocks.0.attn.hook_nonsense"])
    with pytest.raises(KeyError, match="not in this cache"):
        cache["blocks.0.hook_resid_pre"]


def test_too_long_input_is_refused_with_a_clear_message(model: GPT):
    with pytest.raises(ValueError, match="context of 16"):
        model(torch.zeros(17, dtype=torch.long))


def test_param_counts_add_up(variant_model: GPT):
    counts = variant_model.param_counts()
    assert sum(counts.values()) == variant_model.n_params()
    cfg = variant_model.cfg
    assert counts["embed"] == cfg.vocab_size * cfg.d_model
    assert counts["unembed"] == (0 if cfg.tie_embeddings else cfg.vocab_size * cfg.d_model)
    assert counts["pos_embed"] == (cfg.n_ctx * cfg.d_model if cfg.pos == "learned" else 0)
    assert (counts["mlp"] == 0) == cfg.attn_only


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("n_head", 5, "divisible by n_head"),
        ("d_model", 0, "d_model"),
        ("n_layer", -1, "n_layer"),
        ("act", "swish", "act must be one of"),
        ("pos", "rotary", "pos must be one of"),
        ("norm", "middle", "norm must be one of"),
        ("dropout", 1.5, "dropout"),
        ("causal", "no", "causal must be true or false"),
        ("vocab_size", 10**9, "vocab_size"),
    ],
)
def test_config_validation_names_the_field(field, value, message):
    with pytest.raises(ValueError, match=message):
        GPTConfig(**{"vocab_size": 10, "d_model": 32, "n_head": 4, field: value})


def test_config_round_trips_through_a_dict():
    cfg = GPTConfig(vocab_size=10, d_model=32, n_head=4, pos="sinusoidal", attn_only=True)
    assert GPTConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.d_mlp == 128 and cfg.d_head == 8
    with pytest.raises(ValueError, match="unknown model config fields: colour"):
        GPTConfig.from_dict({**cfg.to_dict(), "colour": "red"})


def test_training_works_after_a_run_in_inference_mode(model: GPT, ids):
    """Masks are cached per shape; one first built under inference_mode must not break autograd."""
    with torch.inference_mode():
        model.run_with_cache(ids[:9])
    model.train()
    loss = model(ids[None, :9]).logsumexp(-1).mean()
    with hook_context(record=["blocks.0.attn.hook_pattern"]):
        loss = loss + model(ids[None, :9]).logsumexp(-1).mean()  # explicit path uses the mask
    loss.backward()
    assert model.embed.weight.grad is not None
