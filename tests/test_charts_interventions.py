"""Intervention figures: the numbers in, the same numbers drawn, token text escaped."""

from __future__ import annotations

import numpy as np

from ui.charts import interventions as charts


def test_before_after_bars_write_the_change_over_the_bars_that_moved():
    fig = charts.before_after_bars(
        ["a", "<b>", "c"], np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.6, 0.2])
    )
    before, after = fig.data
    assert list(before.x) == ["a", "&lt;b&gt;", "c"]  # a student's "<b>" shows as typed
    assert list(after.text) == ["-30", "+30", ""]
    np.testing.assert_allclose(after.customdata, [-0.3, 0.3, 0.0], atol=1e-9)


def test_layer_head_grid_marks_cells_and_never_writes_minus_zero():
    values = np.array([[0.1, -0.00001], [0.0, -0.2]])
    fig = charts.layer_head_grid(values, "t", "loss", marked=[(1, 0)])
    assert fig.data[0].text[0][1] == "0.000" and fig.data[0].text[1][1] == "-0.200"
    (shape,) = fig.layout.shapes
    assert (shape.x0, shape.y0) == (-0.5, 0.5)  # head 0 of layer 1
    assert fig.data[0].zmin == -0.2 and fig.data[0].zmax == 0.2  # symmetric around 0


def test_patching_map_keeps_its_scale_fixed():
    fig = charts.patching_map(np.zeros((3, 2)), ["a", "b", "c"], ["0:x", "1:<y>"], "t")
    assert (fig.data[0].zmin, fig.data[0].zmax) == (-1, 1)
    assert list(fig.data[0].x) == ["0:x", "1:&lt;y&gt;"]
