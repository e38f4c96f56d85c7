"""Architecture contrast figures: the two ways per model (one colour a model, one dash a way), and
the line where copying becomes possible."""

from __future__ import annotations

import numpy as np

from ui.charts import contrasts as charts
from viz_model.analysis.contrasts import LookAhead


def test_look_ahead_lines_draw_both_ways_per_model_told_apart():
    a = LookAhead(np.array([1.0, 2.0]), np.array([1.0, 2.0]))
    b = LookAhead(np.array([0.0, 0.1]), np.array([5.0, 6.0]))
    fig = charts.look_ahead_lines([("A", a), ("B", b)], ["x", " "])
    names = [t.name for t in fig.data]
    assert names == ["A: whole window", "A: as generated", "B: whole window", "B: as generated"]
    colours = [t.line.color for t in fig.data]  # one colour a model
    assert colours[0] == colours[1] != colours[2] == colours[3]
    dashes = [t.line.dash for t in fig.data]  # one dash a way, the same for both models
    assert dashes[0] == dashes[2] != dashes[1] == dashes[3]
    np.testing.assert_array_equal(fig.data[0].y, [1.0, 2.0])
    np.testing.assert_array_equal(fig.data[3].y, [5.0, 6.0])
    assert list(fig.data[0].customdata) == ["1:x", "2:␣"]


def test_copy_lines_mark_the_first_copyable_position():
    fig = charts.copy_lines([("two", np.arange(7.0)), ("one", np.ones(7))], k=4)
    assert [t.name for t in fig.data] == ["two", "one"]
    assert fig.layout.shapes[0].x0 == 3.5
