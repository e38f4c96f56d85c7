"""Residual norms, the logit lens and direct logit attribution, checked against direct computations."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.conftest import tiny_model
from viz_model.analysis.residual import (
    attribution_names,
    direct_logit_attribution,
    layer_labels,
    logit_lens,
    residual_names,
    residual_norms,
    supports_attribution,
)


def test_residual_norms_match_the_stack(variant_model, ids):
    _, cache = variant_model.run_with_cache(ids, names=residual_names(variant_model))
    norms = residual_norms(cache)
    n = variant_model.cfg.n_layer
    assert norms.shape == (n + 1, len(ids))
    assert len(layer_labels(n)) == n + 1
    direct = cache[f"blocks.{n - 1}.hook_resid_post"].norm(dim=-1).numpy()
    np.testing.assert_allclose(norms[-1], direct, rtol=1e-6)


def test_lens_at_the_last_layer_equals_the_real_logits(variant_model, ids):
    logits, cache = variant_model.run_with_cache(ids, names=residual_names(variant_model))
    lens = logit_lens(variant_model, cache)
    probs = torch.softmax(logits, -1)
    np.testing.assert_array_equal(lens.top_ids[-1], logits.argmax(-1).numpy())
    np.testing.assert_array_equal(lens.final_ids, logits.argmax(-1).numpy())
    np.testing.assert_allclose(lens.top_probs[-1], probs.max(-1).values.numpy(), atol=1e-6)
    np.testing.assert_allclose(lens.final_probs[-1], lens.top_probs[-1], atol=1e-6)
    # Earlier stations give the final prediction at most their own top probability.
    assert (lens.final_probs <= lens.top_probs + 1e-6).all()


def test_lens_of_the_first_station_reads_the_embeddings(model, ids):
    _, cache = model.run_with_cache(ids, names=residual_names(model))
    lens = logit_lens(model, cache)
    x = model.W_E[ids] + model.position_embeddings(0, len(ids))[0]
    direct = torch.softmax(model.unembed(model.final_norm(x)), -1).argmax(-1)
    np.testing.assert_array_equal(lens.top_ids[0], direct.detach().numpy())


PRE_LN = ["default", "sinusoidal", "no_pos", "tied", "attn_only", "relu_nobias"]


@pytest.mark.parametrize("variant", PRE_LN)
@pytest.mark.parametrize("position", [0, 5, 11])
def test_attribution_sums_to_the_logit_minus_the_ln_bias(variant, position, ids):
    from tests.conftest import VARIANTS

    model = tiny_model(**VARIANTS[variant])
    _, cache = model.run_with_cache(ids, names=attribution_names(model))
    token = int(cache["unembed.hook_out"][position].argmax())
    att = direct_logit_attribution(model, cache, position, token)
    # embed + pos + each attn (heads + bias) + each mlp, each centred / final sigma * gamma . W_U[:, t]
    assert att.values.sum() + att.ln_bias == pytest.approx(att.logit, abs=1e-4)
    expected = ["embed"] + (["pos"] if model.cfg.pos != "none" else [])
    for i in range(model.cfg.n_layer):
        expected += [f"attn {i}"] + ([] if model.cfg.attn_only else [f"mlp {i}"])
    assert att.labels == expected
    if not model.cfg.bias:
        assert att.ln_bias == 0.0 and (att.attn_bias == 0).all()


@pytest.mark.parametrize("position", [2, 11])
def test_heads_sum_to_the_attention_layer_minus_its_bias(model, ids, position):
    _, cache = model.run_with_cache(ids, names=attribution_names(model))
    att = direct_logit_attribution(model, cache, position, token=4)
    for i in range(model.cfg.n_layer):
        layer = att.values[att.labels.index(f"attn {i}")]
        assert att.head_values[i].sum() == pytest.approx(layer - att.attn_bias[i], abs=1e-5)
    assert att.attn_bias.any()  # the fixture's biases are non-zero, so the test means something


def test_attribution_matches_a_direct_recomputation(model, ids):
    """One component by hand: the MLP of layer 1 through the linearised final LN."""
    _, cache = model.run_with_cache(ids, names=attribution_names(model))
    t, tok = 7, 13
    att = direct_logit_attribution(model, cache, t, tok)
    c = cache["blocks.1.hook_mlp_out"][t]
    sigma = cache["ln_final.hook_scale"][t, 0]
    with torch.no_grad():
        direct = ((c - c.mean()) / sigma * model.ln_final.weight) @ model.W_U[:, tok]
    assert att.values[att.labels.index("mlp 1")] == pytest.approx(float(direct), abs=1e-6)


def test_post_ln_models_are_refused(ids):
    model = tiny_model(norm="post")
    assert not supports_attribution(model)
    _, cache = model.run_with_cache(ids)
    with pytest.raises(ValueError, match="post-LN"):
        direct_logit_attribution(model, cache, 0, 0)


def test_models_without_residual_connections_are_refused_and_rmsnorm_ones_attributed(ids):
    model = tiny_model(residual=False)
    assert not supports_attribution(model)
    _, cache = model.run_with_cache(ids)
    with pytest.raises(ValueError, match="residual connections"):
        direct_logit_attribution(model, cache, 0, 0)
    for kind in ("rmsnorm", "none"):  # no centring, or no final norm at all: still exact
        model = tiny_model(norm_kind=kind)
        logits, cache = model.run_with_cache(ids)
        att = direct_logit_attribution(model, cache, 3, 5)
        assert sum(att.values) + att.ln_bias == pytest.approx(float(logits[3, 5]), abs=1e-4)


def test_page_helpers_agree_with_the_parts(model, ids):
    from viz_model.analysis.residual import attribution_for, lens_report

    report = lens_report(model, ids.tolist())
    logits = model(ids).detach().numpy()
    np.testing.assert_allclose(report.logits, logits, atol=1e-5)
    np.testing.assert_array_equal(report.lens.final_ids, logits.argmax(-1))
    assert report.norms.shape == (3, len(ids)) and report.stations[0] == "embed"
    att = attribution_for(model, ids.tolist(), 3, 5)
    assert att.values.sum() + att.ln_bias == pytest.approx(float(logits[3, 5]), abs=1e-4)


def test_attribution_from_recorded_activations_matches_a_fresh_pass(model, ids):
    from viz_model.analysis.residual import attribution_for, attribution_from_activations

    _, cache = model.run_with_cache(ids, names=attribution_names(model))
    acts = {name: cache.numpy(name) for name in attribution_names(model)}
    for position, token in [(0, 2), (5, 9), (len(ids) - 1, 4)]:
        fresh = attribution_for(model, ids.tolist(), position, token)
        again = attribution_from_activations(model, acts, position, token)
        np.testing.assert_allclose(again.values, fresh.values, atol=1e-6)
        np.testing.assert_allclose(again.head_values, fresh.head_values, atol=1e-6)
        assert again.logit == pytest.approx(fresh.logit) and again.labels == fresh.labels
