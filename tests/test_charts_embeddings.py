"""Embedding charts: points and labels where the arrays say, the chosen token highlighted."""

from __future__ import annotations

import numpy as np

from viz_model.charts.embeddings import (
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


def test_heatmaps_centre_their_scale_on_zero():
    table = np.array([[0.5, -2.0], [1.0, 0.0]])
    fig = position_heatmap(table, "positions")
    assert (fig.data[0].zmin, fig.data[0].zmax) == (-2.0, 2.0)
    sim = similarity_heatmap(np.eye(3), "sim")
    assert (sim.data[0].zmin, sim.data[0].zmax) == (-1, 1)
    assert np.array_equal(np.asarray(sim.data[0].z), np.eye(3))


def test_swap_chart_draws_the_difference_on_a_shared_scale():
    a, b = np.ones(4), np.array([1.0, 1.5, 1.0, 0.0])
    fig = swap_chart(a, b, "swap", ymax=2.0)
    assert list(fig.data[0].y) == [0.0, 0.5, 0.0, -1.0]
    assert list(fig.layout.yaxis.range) == [-2.1, 2.1]
    assert list(swap_chart(a, b, "swap").layout.yaxis.range) == [-1.05, 1.05]
