"""Inside a block's gradient and probe charts: what a student sees (the loss along the gradient
beside its first-order line; probe panels on one shared scale with the noise band)."""

from __future__ import annotations

import numpy as np
import pytest

from ui.charts.block.gradient import loss_along_gradient
from ui.charts.block.probes import probe_accuracy


def test_the_loss_along_the_gradient_is_drawn_beside_its_first_order_line():
    etas = np.array([1e-4, 2e-4, 5e-4, 1e-3, 2e-3])
    losses = np.array([2.05, 2.0, 1.9, 2.2, 3.0])
    fig = loss_along_gradient(etas, losses, 2.1, 2000.0, 5e-4)
    traces = {t.name: t for t in fig.data}
    np.testing.assert_allclose(traces["loss after one step"].y, losses)
    line = traces["first order: L − η‖g‖²"]
    np.testing.assert_allclose(line.y, 2.1 - np.array(line.x) * 2000.0)
    assert len(line.x) == 4 and min(line.y) > 0  # drawn while it stays above zero
    assert list(traces["this η"].x) == [5e-4] and list(traces["this η"].y) == [1.9]
    assert fig.layout.xaxis.type == "log"
    low, high = fig.layout.yaxis.range
    assert low <= 1.9 and high >= 3.0


def test_probe_panels_share_one_scale_from_fifty_percent_with_a_noise_band():
    stations = ["embed", "after block 0"]
    results = {
        "vowel": (np.array([1.0, 0.99]), np.array([1.0, 1.0]), 0.71, 0.027),
        "speaker name": (np.array([0.96, 0.97]), np.array([0.97, 0.98]), 0.956, 0.012),
    }
    fig = probe_accuracy(stations, results)
    assert list(fig.layout.xaxis.categoryarray) == stations  # in the stream's order
    ranges = [fig.layout[k].range for k in fig.layout if k.startswith("yaxis")]
    assert len(ranges) == 2 and all(tuple(r) == tuple(ranges[0]) for r in ranges)
    assert ranges[0][0] == pytest.approx(0.5) and ranges[0][1] >= 1.0
    bands = [t for t in fig.data if t.name == "within the noise of the baseline"]
    assert [b.y[0] for b in bands] == pytest.approx([0.71 + 0.027, 0.956 + 0.012])
    low = probe_accuracy(stations, {"x": (np.array([0.3, 0.6]), np.array([0.6, 0.6]), 0.5, 0.03)})
    assert low.layout.yaxis.range[0] == pytest.approx(
        0.3
    )  # a worse-than-chance probe stays visible
    blank = {"vowel": np.array([0.99, 0.2]), "speaker name": np.array([0.95, 0.96])}
    with_blank = probe_accuracy(stations, results, untrained=blank)
    grey = [t for t in with_blank.data if t.name == "random weights (learned nothing)"]
    assert [list(t.y) for t in grey] == [[0.99, 0.2], [0.95, 0.96]]  # one per panel, its own
    assert [t.showlegend for t in grey] == [True, False]
    assert with_blank.layout.yaxis.range[0] == pytest.approx(0.2)  # the low random one shows
