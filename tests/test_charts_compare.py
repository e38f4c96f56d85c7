"""Comparison figures: bars with the most likely token on top, a half-width heatmap with its
colour bar below, and two models' curves on one axis, each model's two curves told apart from the
other's."""

from __future__ import annotations

import numpy as np

from ui.charts.compare import MODEL_COLOURS, half_width_pattern, next_token_bars, overlaid_curves
from viz_model.analysis.training import curves


def test_bars_put_the_most_likely_token_on_top_and_escape_markup():
    fig = next_token_bars(["a", "<b>", " "], np.array([0.6, 0.3, 0.1]), "top", MODEL_COLOURS[1])
    (bar,) = fig.data
    assert list(bar.x) == [0.1, 0.3, 0.6]  # plotly draws the first category at the bottom
    assert list(bar.y) == ["␣ ", "&lt;b&gt; ", "a "]
    assert list(bar.text) == ["10%", "30%", "60%"]  # each bar says its probability
    assert fig.layout.title.text == "top"
    assert fig.layout.xaxis.title.text == "probability of the next token"


def test_half_width_pattern_moves_the_colour_bar_below():
    pattern = np.tril(np.ones((3, 3))) / np.arange(1, 4)[:, None]
    fig = half_width_pattern(pattern, ["0:a", "1:b", "2:c"], "m: L0 H0")
    (shown,) = [t for t in fig.data if t.name == "pattern"]
    assert shown.colorbar.orientation == "h"
    np.testing.assert_allclose(np.nan_to_num(shown.z), pattern)  # masked cells are NaN


def test_two_models_curves_share_one_axis_and_each_model_keeps_one_colour():
    a = curves([{"step": s, "train_loss": 3.0 / s, "val_loss": 3.0 / s} for s in range(1, 4)])
    b = curves([{"step": s, "train_loss": 2.0 / s} for s in range(1, 6)])
    fig = overlaid_curves([("A", a), ("B<i>", b)], "bits per character")
    assert [t.name for t in fig.data] == [
        "A: training",
        "A: validation",
        "B&lt;i&gt;: training",
        "B&lt;i&gt;: validation",
    ]
    colours = [t.line.color for t in fig.data]  # a model's two curves read as one model's
    assert colours[0] == colours[1] != colours[2] == colours[3]
    assert fig.layout.yaxis.title.text == "loss (bits per character)"
    np.testing.assert_allclose(fig.data[2].y, b.train_loss)
