"""ui/charts/sae.py: what a student sees in the SAE page's figures."""

from __future__ import annotations

import numpy as np
import pytest

from ui.charts import sae as charts
from ui.charts.common import TICK_FONT


def test_the_training_curve_shows_variance_explained_smoothed_and_the_resamples():
    mse = np.linspace(1.0, 0.1, 100)
    fig = charts.training_curve(mse, (30, 60))
    y = np.array(fig.data[0].y)
    assert len(y) == 100 - charts.SMOOTH + 1
    assert y[0] == pytest.approx(1 - mse[: charts.SMOOTH].mean())
    assert y[-1] == pytest.approx(1 - mse[-charts.SMOOTH :].mean())
    assert [s["x0"] for s in fig.layout.shapes] == [30, 60]


def test_a_short_training_curve_still_draws():
    assert len(charts.training_curve([0.5, 0.4]).data[0].y) == 1


def test_the_prompt_bars_have_one_bar_a_token_with_readable_labels():
    fig = charts.along_prompt([0.0, 1.5, 0.2], ["0:a", "1:<b>", "2:c"], 7)
    assert list(fig.data[0].y) == [0.0, 1.5, 0.2]
    assert len(fig.data[0].x) == 3 and "<b>" not in "".join(fig.data[0].x)  # never markup
    assert "Feature 7" in fig.layout.title.text
    assert fig.layout.xaxis.tickfont.size >= TICK_FONT
