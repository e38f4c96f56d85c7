"""ActivationCache as a dict, and its TransformerLens-style stacks checked against our own analyses."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import VARIANTS, tiny_model
from viz_model.analysis.residual import direct_logit_attribution, lens_logits, residual_names
from viz_model.model.cache import ActivationCache

ATOL = 1e-5


def close(a: torch.Tensor, b: torch.Tensor) -> None:
    torch.testing.assert_close(a.detach(), b.detach(), atol=ATOL, rtol=1e-5)


def last_resid(cache: ActivationCache) -> torch.Tensor:
    return cache[f"blocks.{cache.n_layer - 1}.hook_resid_post"]  # (T, D)


# ---- a dict ---------------------------------------------------------------------------------


def test_dict_of_the_cache_has_every_name(variant_model, ids):
    _, cache = variant_model.run_with_cache(ids)
    d = dict(cache)
    assert list(d) == list(cache.keys()) == variant_model.hook_names()
    assert d["hook_embed"].shape == (len(ids), variant_model.cfg.d_model)  # batch dropped
    for (name, value), again in zip(cache.items(), cache.values(), strict=True):
        assert torch.equal(value, again)
        assert torch.equal(d[name], cache[name])


def test_a_batched_cache_keeps_the_batch_dimension(model, ids):
    _, cache = model.run_with_cache(torch.stack([ids, ids.flip(0)]))
    assert dict(cache)["hook_embed"].shape == (2, len(ids), model.cfg.d_model)
    assert cache.accumulated_resid().shape == (3, 2, len(ids), model.cfg.d_model)


# ---- accumulated_resid ----------------------------------------------------------------------


def test_accumulated_resid_is_our_resid_stack(variant_model, ids):
    _, cache = variant_model.run_with_cache(ids)
    stack, labels = cache.accumulated_resid(return_labels=True)
    close(stack, cache.resid_stack())
    close(stack[-1], last_resid(cache))
    assert labels == ["0_pre", "1_pre", "final_post"]
    mid, mid_labels = cache.accumulated_resid(layer=1, incl_mid=True, return_labels=True)
    if variant_model.cfg.attn_only:
        assert mid_labels == ["0_pre", "1_pre"]
    else:
        assert mid_labels == ["0_pre", "0_mid", "1_pre"]
        close(mid[1], cache["blocks.0.hook_resid_mid"])


def test_accumulated_resid_through_the_final_ln_unembeds_to_the_logits(variant_model, ids):
    logits, cache = variant_model.run_with_cache(ids)
    stack = cache.accumulated_resid(apply_ln=True)
    model = variant_model
    close(model.unembed(stack[-1]) + model.b_U, logits)
    close(model.unembed(stack[-1]) + model.b_U, lens_logits(model, cache)[-1])
    if model.ln_final is None or model.ln_final.bias is None:  # no beta: the unembedding alone
        assert not model.b_U.any()
    else:  # the test would mean nothing if beta . W_U were zero
        assert model.b_U.abs().max() > 1e-3


# ---- decompose_resid ------------------------------------------------------------------------


def test_decompose_resid_sums_to_the_final_residual(variant_model, ids):
    _, cache = variant_model.run_with_cache(ids)
    if variant_model.cfg.norm == "post":
        with pytest.raises(ValueError, match="pre-LN"):
            cache.decompose_resid()
        return
    if not variant_model.cfg.residual:  # each block replaced the stream: nothing to sum
        with pytest.raises(ValueError, match="residual connections"):
            cache.decompose_resid()
        return
    stack, labels = cache.decompose_resid(return_labels=True)
    close(stack.sum(0), last_resid(cache))
    ours = cache.layer_outputs()  # the same pieces under our labels
    assert len(labels) == len(ours)
    for piece, (_, out) in zip(stack, ours, strict=True):
        close(piece, out)
    close(cache.decompose_resid(layer=1).sum(0), cache["blocks.1.hook_resid_pre"])
    attn = cache.decompose_resid(mode="attn", incl_embeds=False)
    close(attn.sum(0), sum(cache[f"blocks.{i}.hook_attn_out"] for i in range(2)))
    if not variant_model.cfg.attn_only:
        close(
            cache.decompose_resid(layer=1, mlp_input=True).sum(0), cache["blocks.1.hook_resid_mid"]
        )


# ---- stack_head_results ---------------------------------------------------------------------


def test_head_results_plus_the_out_bias_sum_to_attn_out(variant_model, ids):
    _, cache = variant_model.run_with_cache(ids)
    heads, labels = cache.stack_head_results(return_labels=True)
    H, T, D = variant_model.cfg.n_head, len(ids), variant_model.cfg.d_model
    assert heads.shape == (2 * H, T, D) and labels[:2] == ["L0H0", "L0H1"] and labels[-1] == "L1H3"
    for i, block in enumerate(variant_model.blocks):
        bias = block.attn.out.bias if block.attn.out.bias is not None else torch.zeros(D)
        close(heads[i * H : (i + 1) * H].sum(0) + bias, cache[f"blocks.{i}.hook_attn_out"])
    if variant_model.cfg.norm == "pre" and variant_model.cfg.residual:
        close(cache.stack_head_results(incl_remainder=True).sum(0), last_resid(cache))
    elif not variant_model.cfg.residual:
        with pytest.raises(ValueError, match="residual connections"):
            cache.stack_head_results(incl_remainder=True)


def test_stack_head_results_says_when_hook_result_was_not_recorded(model, ids):
    _, cache = model.run_with_cache(ids, names=residual_names(model))
    with pytest.raises(KeyError, match=r"blocks\.0\.attn\.hook_result.*names="):
        cache.stack_head_results()
    _, full = model.run_with_cache(ids)
    with pytest.raises(ValueError, match="no heads"):
        full.stack_head_results(layer=0)


# ---- apply_ln_to_stack ----------------------------------------------------------------------


def test_apply_ln_to_the_final_residual_is_ln_finals_output(variant_model, ids):
    _, cache = variant_model.run_with_cache(ids)
    final = last_resid(cache)
    out = cache.apply_ln_to_stack(final[None])[0]
    if variant_model.ln_final is None:  # post-LN (the last block ended in one) or no norms
        close(out, final)
        if variant_model.cfg.norm == "post":
            with pytest.raises(ValueError, match="post-LN"):
                cache.apply_ln_to_stack(final[None], layer=1)
        else:  # no normalization anywhere: every piece passes unchanged
            close(cache.apply_ln_to_stack(final[None], layer=1)[0], final)
        return
    ln = variant_model.ln_final
    beta = ln.bias if ln.bias is not None else torch.zeros_like(ln.weight)
    close(out + beta, ln(final))
    close(out, cache["ln_final.hook_normalized"] * ln.weight)
    if variant_model.cfg.residual:  # Linear: the pieces' images sum to the image of the whole.
        close(cache.apply_ln_to_stack(cache.decompose_resid()).sum(0), out)


def test_apply_ln_inside_a_block_uses_that_blocks_layernorm(model, ids):
    _, cache = model.run_with_cache(ids)
    ln1, ln2 = model.blocks[1].ln1, model.blocks[1].ln2
    pre = cache.apply_ln_to_stack(cache["blocks.1.hook_resid_pre"][None], layer=1)[0]
    close(pre + ln1.bias, ln1(cache["blocks.1.hook_resid_pre"]))
    mid = cache.apply_ln_to_stack(cache["blocks.1.hook_resid_mid"][None], 1, mlp_input=True)[0]
    close(mid + ln2.bias, ln2(cache["blocks.1.hook_resid_mid"]))


@pytest.mark.parametrize("pos_slice", [-1, (2, 5), [0, 7, -1]])
def test_pos_slice_picks_the_same_positions_and_sigmas(model, ids, pos_slice):
    _, cache = model.run_with_cache(ids)
    full = cache.accumulated_resid(apply_ln=True)  # (3, T, D)
    cut = cache.accumulated_resid(apply_ln=True, pos_slice=pos_slice)
    if isinstance(pos_slice, int):
        expected = full[:, pos_slice]
    elif isinstance(pos_slice, tuple):
        expected = full[:, slice(*pos_slice)]
    else:
        expected = full[:, [p % len(ids) for p in pos_slice]]
    close(cut, expected)


# ---- logit_attrs ----------------------------------------------------------------------------


# decompose_resid refuses post-LN models and models without residual connections (tested
# above), so they have no decomposition to sum.
SUMMABLE = [
    name
    for name, options in VARIANTS.items()
    if options.get("norm") != "post" and options.get("residual", True)
]


@pytest.mark.parametrize("variant", SUMMABLE)
def test_logit_attrs_of_the_decomposition_sum_to_the_logit(variant, ids):
    model = tiny_model(**VARIANTS[variant])
    logits, cache = model.run_with_cache(ids)
    T = len(ids)
    tokens, wrong = ids.roll(-1), ids  # one target per position
    attrs = cache.logit_attrs(cache.decompose_resid(), tokens)  # (pieces, T)
    close(attrs.sum(0) + model.b_U[tokens], logits[torch.arange(T), tokens])
    diff = cache.logit_attrs(cache.decompose_resid(), tokens, incorrect_tokens=wrong)
    expected = logits[torch.arange(T), tokens] - logits[torch.arange(T), wrong]
    close(diff.sum(0) + model.b_U[tokens] - model.b_U[wrong], expected)


@pytest.mark.parametrize("position", [0, 5, 11])
def test_logit_attrs_match_our_direct_logit_attribution(model, ids, position):
    _, cache = model.run_with_cache(ids)
    token = int(ids[(position + 1) % len(ids)])
    att = direct_logit_attribution(model, cache, position, token)
    pieces = cache.logit_attrs(cache.decompose_resid(pos_slice=position), token, pos_slice=position)
    torch.testing.assert_close(pieces, torch.from_numpy(att.values), atol=ATOL, rtol=0)
    heads = cache.logit_attrs(cache.stack_head_results(), token)[:, position]  # (L * H,)
    torch.testing.assert_close(
        heads.view(2, -1), torch.from_numpy(att.head_values), atol=ATOL, rtol=0
    )
    assert att.ln_bias == pytest.approx(float(model.b_U[token]), abs=ATOL)


def test_logit_attrs_refuse_unknown_tokens_and_need_the_model(model, ids):
    _, cache = model.run_with_cache(ids)
    with pytest.raises(ValueError, match="token ids"):
        cache.logit_attrs(cache.decompose_resid(), model.cfg.vocab_size)
    bare = ActivationCache({n: t[None] for n, t in cache.items()}, cache.n_layer)  # no model
    with pytest.raises(ValueError, match="without"):
        bare.apply_ln_to_stack(bare.accumulated_resid())
    close(bare.accumulated_resid(), cache.accumulated_resid())  # no weights needed for this


def test_post_ln_logit_attrs_of_the_last_residual_are_the_logits(ids):
    model = tiny_model(norm="post")
    logits, cache = model.run_with_cache(ids)
    attrs = cache.logit_attrs(cache.accumulated_resid(), ids)  # (n_layer + 1, T)
    close(attrs[-1], logits[torch.arange(len(ids)), ids])
