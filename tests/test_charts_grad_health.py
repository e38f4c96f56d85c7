"""Gradient-health figures: one line per layer in model order on log axes, the whole gradient,
the clipping cap only when clipping is on, the rule of thumb, and the marked step."""

from __future__ import annotations

import numpy as np

from tests.test_analysis_grad_health import history
from ui.charts.grad_health import gradient_norms, update_ratios
from viz_model.analysis import grad_health as gh


def test_the_gradient_figure_has_a_line_per_layer_the_whole_gradient_and_the_cap():
    h = gh.grad_health(history(n=1000, blocks=(0.01, 0.1, 1.0)), 1.0)
    fig = gradient_norms(h)
    names = [t.name for t in fig.data]
    assert names == [
        "embeddings", "block 0", "block 1", "block 2", "final LN + unembedding", "whole gradient",
    ]  # fmt: skip
    assert fig.layout.yaxis.type == "log"
    assert list(fig.data[1].y) == list(h.grad[:, 1])  # block 0's norms, as recorded
    assert len(fig.data[-1].x) <= 400  # a long run's every-step norm is averaged for drawing
    assert np.mean(fig.data[-1].y) == 0.5
    assert [a.text for a in fig.layout.annotations] == ["clipping cap 1"]
    assert fig.layout.shapes[0].y0 == 1.0
    assert fig.layout.annotations[0].y == 0.0  # log10(1): the label sits on its line
    unclipped = gradient_norms(gh.grad_health(history(), 0.0), marked_step=40)
    assert not unclipped.layout.annotations  # no cap drawn when clipping is off
    assert unclipped.layout.shapes[0].x0 == 40  # the marked step


def test_the_update_figure_draws_each_layers_ratio_and_the_rule_of_thumb():
    h = gh.grad_health(history(update=2e-3), 1.0)
    fig = update_ratios(h)
    assert [t.name for t in fig.data][1] == "block 0" and fig.layout.yaxis.type == "log"
    assert set(fig.data[0].y) == {2e-3}
    assert fig.layout.shapes[0].y0 == gh.RULE_OF_THUMB
    assert "rule of thumb" in fig.layout.annotations[0].text
    assert fig.layout.annotations[0].y == -3.0  # a log axis places labels at log10 of y
