"""LayerNorm figures, each built alone from arrays."""

from __future__ import annotations

import numpy as np

from ui.charts.layernorm import ln_histograms, ln_stats_per_token, ln_steps, norm_profiles


def _vectors(D=16):
    rng = np.random.default_rng(0)
    x = rng.normal(2.0, 3.0, D)
    mu, sigma = x.mean(), np.sqrt(x.var() + 1e-5)
    n = (x - mu) / sigma
    gamma, beta = rng.normal(1, 0.1, D), rng.normal(0, 0.1, D)
    return x, mu, sigma, n, gamma, beta, n * gamma + beta


def test_ln_steps_draws_each_stage_and_the_mean_lines():
    x, mu, sigma, n, gamma, beta, y = _vectors()
    fig = ln_steps(x, mu, sigma, n, gamma, beta, y)
    by_name = {t.name: t for t in fig.data}
    assert set(by_name) == {"x", "normalized", "γ", "β", "y"}
    np.testing.assert_allclose(by_name["normalized"].y, n)
    np.testing.assert_allclose(by_name["y"].y, y)
    lines = sorted(s.y0 for s in fig.layout.shapes)
    np.testing.assert_allclose(lines, [mu - sigma, mu, mu + sigma])


def test_stats_per_token_highlights_the_chosen_token():
    fig = ln_stats_per_token(
        np.array([0.1, 0.2, 0.3]), np.array([1.0, 2.0, 3.0]), ["a", "b", "c"], 1
    )
    mean, sigma = fig.data
    np.testing.assert_allclose(mean.y, [0.1, 0.2, 0.3])
    colours = list(mean.marker.color)  # the chosen token's bar stands out, the others alike
    assert colours[0] == colours[2] != colours[1]
    np.testing.assert_allclose(sigma.y, [1, 2, 3])


def test_histograms_hold_every_value():
    before, after = np.ones((3, 4)), np.zeros((3, 4))
    fig = ln_histograms(before, after)
    assert [len(t.x) for t in fig.data] == [12, 12]


def test_norm_profiles_one_line_per_model():
    fig = norm_profiles(
        {"pre": np.array([1.0, 2.0, 4.0]), "post": np.array([1.0, 7.0, 7.0])},
        {"pre": ["e", "b0", "b1"], "post": ["e", "b0", "b1"]},
    )
    assert [t.name for t in fig.data] == ["pre", "post"]
    np.testing.assert_allclose(fig.data[1].y, [1, 7, 7])
    assert list(fig.data[0].x) == ["e", "b0", "b1"]
