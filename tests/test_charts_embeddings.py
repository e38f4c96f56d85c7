"""Embedding charts: points and labels where the arrays say, the chosen token highlighted."""

from __future__ import annotations

import numpy as np

from ui.charts.embeddings import (
    CHAR_PX,
    LABEL_PX,
    PLOT_PX,
    pca_scatter,
    position_heatmap,
    similarity_heatmap,
    swap_chart,
)


def test_pca_scatter_labels_every_token_and_highlights_the_chosen_one():
    xy = np.arange(20, dtype=float).reshape(10, 2)
    labels = [f"t{i}" for i in range(9)] + [" x"]
    fig = pca_scatter(xy, labels, [0.5, 0.2], chosen=9, neighbours=[1, 2])
    assert len(fig.data) == 3
    assert list(fig.data[0].text) == labels[:9] + ["␣x"]
    assert list(fig.data[1].customdata) == [1, 2] and list(fig.data[2].customdata) == [9]
    assert list(fig.data[2].x) == [18.0]
    assert "50%" in fig.layout.xaxis.title.text and "20%" in fig.layout.yaxis.title.text
    assert len(pca_scatter(xy, labels, [0.5, 0.2]).data) == 1


def _labelled(fig) -> dict[int, str]:
    """id -> label text of every point drawn with a label."""
    return {
        int(i): t
        for trace in fig.data[1:]
        for i, t in zip(trace.customdata, trace.text, strict=True)
        if t
    }


def test_pca_labels_in_a_cluster_do_not_overlap_and_the_chosen_one_is_labelled():
    rng = np.random.default_rng(0)
    far = rng.uniform(-1, 1, size=(40, 2))
    cluster = 0.02 * rng.normal(size=(10, 2))  # ten neighbours within a few pixels
    xy = np.vstack([far, cluster])
    labels = [f"tok{i}" for i in range(len(xy))]
    neighbours = list(range(41, 50))
    fig = pca_scatter(xy, labels, [0.3, 0.2], chosen=40, neighbours=neighbours)
    shown = _labelled(fig)
    assert 40 in shown and 0 < len(shown) < 10  # the chosen one, not all ten of the cluster
    px = (xy - xy.min(0)) / np.ptp(xy, 0) * np.array(PLOT_PX)  # on the narrowest plot
    for a in shown:
        for b in shown:
            if a < b:
                dx, dy = np.abs(px[a] - px[b])
                width = (len(shown[a]) + len(shown[b])) * CHAR_PX / 2
                assert dx >= width or dy >= LABEL_PX, (a, b)
    hover = [t for trace in fig.data[1:] for t in trace.hovertext]
    assert sorted(hover) == sorted(labels[i] for i in neighbours + [40])  # all still hover


def test_pca_labels_far_apart_neighbours_all():
    xy = np.array([[0.0, 0.0], [1.0, 1.0], [-1.0, 1.0], [1.0, -1.0], [-1.0, -1.0]])
    fig = pca_scatter(xy, list("abcde"), [0.5, 0.2], chosen=0, neighbours=[1, 2, 3, 4])
    assert _labelled(fig) == dict(enumerate("abcde"))


def test_heatmaps_centre_their_scale_on_zero():
    table = np.array([[0.5, -2.0], [1.0, 0.0]])
    fig = position_heatmap(table, "positions")
    assert (fig.data[0].zmin, fig.data[0].zmax) == (-2.0, 2.0)
    sim = similarity_heatmap(np.eye(3), "sim")
    assert (sim.data[0].zmin, sim.data[0].zmax) == (-1, 1)
    assert np.array_equal(np.asarray(sim.data[0].z), np.eye(3))


def test_position_heatmaps_leave_the_width_to_the_plot():
    # In half a 1024 px column a colour bar beside the plot left it ~100 px wide.
    figs = [position_heatmap(np.ones((4, 3)), "p"), similarity_heatmap(np.eye(4), "s")]
    assert all(f.data[0].colorbar.orientation == "h" for f in figs)
    # Square cells (y anchored to x) showed a y range of -150..250 around positions 0..127.
    assert figs[1].layout.yaxis.scaleanchor is None


def test_swap_chart_draws_the_difference_on_a_shared_scale():
    a, b = np.ones(4), np.array([1.0, 1.5, 1.0, 0.0])
    fig = swap_chart(a, b, "swap", ymax=2.0)
    assert list(fig.data[0].y) == [0.0, 0.5, 0.0, -1.0]
    assert list(fig.layout.yaxis.range) == [-2.1, 2.1]
    assert list(swap_chart(a, b, "swap").layout.yaxis.range) == [-1.05, 1.05]
