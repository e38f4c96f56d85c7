"""LayerNorm statistics against a direct computation from the vector that enters the LayerNorm."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.conftest import tiny_model
from viz_model.analysis.layernorm import (
    describe,
    input_names,
    layernorm_names,
    layernorm_stats,
    resid_norm_profile,
    stats_names,
    title,
)

EPS32 = torch.finfo(torch.float32).eps  # 1.2e-7, float32's rounding step at 1


def test_names_follow_the_architecture():
    assert layernorm_names(tiny_model()) == [
        "blocks.0.ln1",
        "blocks.0.ln2",
        "blocks.1.ln1",
        "blocks.1.ln2",
        "ln_final",
    ]
    assert layernorm_names(tiny_model(norm="post")) == [
        "blocks.0.ln1",
        "blocks.0.ln2",
        "blocks.1.ln1",
        "blocks.1.ln2",
    ]
    assert layernorm_names(tiny_model(attn_only=True))[-1] == "ln_final"
    assert "blocks.0.ln2" not in layernorm_names(tiny_model(attn_only=True))
    assert "before attention" in describe(tiny_model(), "blocks.0.ln1")
    assert "after the MLP" in describe(tiny_model(norm="post"), "blocks.1.ln2")
    assert title(tiny_model(), "blocks.1.ln2") == "the LayerNorm of block 1, before the MLP"
    assert title(tiny_model(), "ln_final") == "the final LayerNorm, before the unembedding"


def test_recorded_mean_scale_normalized_match_a_direct_computation(variant_model, ids):
    model = variant_model
    for ln in layernorm_names(model):
        _, cache = model.run_with_cache(ids, names=stats_names(model, ln))
        s = layernorm_stats(model, cache, ln)
        mu = s.x.mean(-1)
        sigma = np.sqrt(((s.x - mu[:, None]) ** 2).mean(-1) + s.eps)
        np.testing.assert_allclose(s.mean, mu, atol=1e-5)
        np.testing.assert_allclose(s.sigma, sigma, rtol=1e-5)
        np.testing.assert_allclose(s.normalized, (s.x - mu[:, None]) / sigma[:, None], atol=1e-4)
        # The normalized vector has mean 0 and variance var / (var + eps), just under 1.
        np.testing.assert_allclose(s.normalized.mean(-1), 0, atol=1e-5)
        var = sigma**2 - s.eps
        np.testing.assert_allclose(s.normalized.var(-1), var / (var + s.eps), rtol=1e-4)
        # After LN: mean(y) = mean(gamma * normalized) + mean(beta), exactly mean(beta) when gamma is 1.
        np.testing.assert_allclose(
            s.y.mean(-1), (s.gamma * s.normalized).mean(-1) + s.beta.mean(), atol=1e-5
        )
        # And the output is what torch's own LayerNorm gives.
        module = model.get_submodule(ln)
        with torch.no_grad():
            ref = torch.nn.functional.layer_norm(
                torch.from_numpy(s.x), (s.x.shape[-1],), module.weight, module.bias, module.eps
            )
        np.testing.assert_allclose(s.y, ref.numpy(), atol=1e-5)


def test_after_ln_mean_is_beta_mean_when_gamma_is_one(ids):
    model = tiny_model()
    with torch.no_grad():
        model.blocks[0].ln1.weight.fill_(1.0)
    _, cache = model.run_with_cache(ids, names=stats_names(model, "blocks.0.ln1"))
    s = layernorm_stats(model, cache, "blocks.0.ln1")
    np.testing.assert_allclose(s.y.mean(-1), s.beta.mean(), atol=1e-5)
    var = s.sigma**2 - s.eps  # std(y - beta) is 1 up to eps: sqrt(var / (var + eps))
    np.testing.assert_allclose((s.y - s.beta).std(-1), np.sqrt(var / (var + s.eps)), rtol=1e-4)
    assert s.beta.std() > 0  # the fixture's beta is not zero, so the check is not vacuous


def test_post_ln_output_is_the_next_residual(ids):
    model = tiny_model(norm="post")
    names = stats_names(model, "blocks.0.ln1") + ["blocks.0.hook_resid_mid"]
    _, cache = model.run_with_cache(ids, names=names)
    s = layernorm_stats(model, cache, "blocks.0.ln1")
    assert input_names(model, "blocks.0.ln1") == [
        "blocks.0.hook_resid_pre",
        "blocks.0.hook_attn_out",
    ]
    np.testing.assert_allclose(s.y, cache.numpy("blocks.0.hook_resid_mid"), atol=1e-5)


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_resid_norm_profile(norm, ids):
    model = tiny_model(norm=norm)
    profile = resid_norm_profile(model, ids)
    assert profile.shape == (model.cfg.n_layer + 1,)
    _, cache = model.run_with_cache(ids, names=["blocks.1.hook_resid_post"])
    direct = cache["blocks.1.hook_resid_post"].norm(dim=-1).mean()
    assert profile[-1] == pytest.approx(float(direct), rel=1e-5)


def test_stats_for_runs_the_prompt(model, ids):
    from viz_model.analysis.layernorm import stats_for

    s = stats_for(model, ids.tolist(), "ln_final")
    logits = model(ids).detach().numpy()
    np.testing.assert_allclose(s.y @ model.W_U.detach().numpy(), logits, atol=1e-4)


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_all_stats_agrees_with_one_layernorm_at_a_time(norm, ids):
    from viz_model.analysis.layernorm import all_stats, layernorm_names, stats_for

    model = tiny_model(norm=norm)
    every = all_stats(model, ids.tolist())
    assert list(every) == layernorm_names(model)
    for ln, s in every.items():
        one = stats_for(model, ids.tolist(), ln)
        # the same forward pass recorded twice: equal to a few of float32's rounding steps at
        # the largest value (post-LN y reaches 3, where a step is 2.4e-7; 3 steps apart here)
        for field in ("x", "y", "sigma"):
            got, want = getattr(s, field), getattr(one, field)
            atol = 16 * EPS32 * np.abs(want).max()
            np.testing.assert_allclose(got, want, rtol=0, atol=atol, err_msg=f"{ln}.{field}")
