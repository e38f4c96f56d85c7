"""Pictures of embeddings: token vectors in 2D (PCA), position tables and their similarity, and the
last token's attention output for a prompt and its swapped twin."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ui.charts.common import (
    ACCENT,
    DIVERGING,
    HEIGHT,
    SMALL_HEIGHT,
    base_layout,
    colorbar_below,
    plotly_labels,
    show_whitespace,
)

NEIGHBOUR_COLOUR = "#ff7f0e"
POINT_COLOUR = "#4c78a8"


# The scatter's plot area at its narrowest (a 1024 px projector, beside the neighbours table),
# and the size of one label character there: what decides whether two labels collide.
PLOT_PX = (300, 420)
CHAR_PX, LABEL_PX = 8, 16


def label_box(xy: np.ndarray, i: int, label: str, span: np.ndarray, lo: np.ndarray):
    """Label i's centre (px) and half-size (px) on the narrowest plot; xy spans `span` from `lo`."""
    centre = (xy[i] - lo) / span * np.array(PLOT_PX)
    return centre, np.array([len(label) * CHAR_PX / 2 + 2, LABEL_PX / 2])


def spread_labels(xy: np.ndarray, ids: Sequence[int], labels: Sequence[str]) -> list[int]:
    """The ids (in the given order: most important first) whose labels do not overlap the label
    of an id kept before them; the others are left to the hover. `labels` is indexed by id."""
    lo = xy.min(axis=0)
    span = np.where(np.ptp(xy, axis=0) > 0, np.ptp(xy, axis=0), 1.0)
    kept: list[tuple[int, np.ndarray, np.ndarray]] = []
    for i in ids:
        c, h = label_box(xy, i, labels[i], span, lo)
        if all(np.any(np.abs(c - c2) >= h + h2) for _, c2, h2 in kept):
            kept.append((i, c, h))
    return [i for i, _, _ in kept]


def pca_scatter(
    xy: np.ndarray,
    labels: Sequence[str],
    explained: Sequence[float],
    chosen: int | None = None,
    neighbours: Sequence[int] = (),
    title: str = "Token embeddings, projected<br>onto their two main directions",
    max_points: int | None = None,
) -> go.Figure:
    """Every token as a point (x, y) = its first two principal-component coordinates.

    The chosen token is red and labelled, its neighbours orange; a neighbour is labelled only
    where its label overlaps no label drawn before it (nearest first). Hover shows any token.
    With `max_points`, only ids below it are drawn grey (a BPE's first merges are its commonest
    tokens): GPT-2's 50,257 points are a blur and megabytes; the marked ones are always drawn.
    """
    labels = plotly_labels(labels)  # the student's tokens: never markup
    labels = [show_whitespace(s) for s in labels]
    xy = np.asarray(xy, dtype=float)
    idx = np.arange(min(len(labels), max_points or len(labels)))
    fig = go.Figure(
        go.Scattergl(
            x=xy[idx, 0],
            y=xy[idx, 1],
            mode="markers",
            marker=dict(size=6, color=POINT_COLOUR, opacity=0.55),
            text=labels[: len(idx)],
            customdata=idx,
            hovertemplate="%{text} (id %{customdata})<extra></extra>",
            name="tokens",
        )
    )
    marked = [chosen] if chosen is not None else []
    labelled = set(spread_labels(xy, marked + [i for i in neighbours if i != chosen], labels))
    for ids, colour, size in ((list(neighbours), NEIGHBOUR_COLOUR, 9), (marked, ACCENT, 13)):
        if ids:
            fig.add_trace(
                go.Scatter(
                    x=xy[ids, 0],
                    y=xy[ids, 1],
                    mode="markers+text",
                    marker=dict(size=size, color=colour),
                    text=[labels[i] if i in labelled else "" for i in ids],
                    hovertext=[labels[i] for i in ids],
                    textposition="top center",
                    customdata=ids,
                    hovertemplate="%{hovertext} (id %{customdata})<extra></extra>",
                )
            )
    fig.update_xaxes(title=f"direction 1 ({explained[0]:.0%} of the variance)", zeroline=False)
    fig.update_yaxes(title=f"direction 2 ({explained[1]:.0%} of the variance)", zeroline=False)
    fig.update_layout(showlegend=False)
    base_layout(fig, title, HEIGHT + 80)
    # room for the two-line title, at presenter mode's size too (at t=60 its second line sat on
    # the top tick label at 1024x768)
    fig.update_layout(margin=dict(l=10, r=10, t=76, b=10))
    return fig


def position_heatmap(table: np.ndarray, title: str, zmax: float | None = None) -> go.Figure:
    """A position table (positions x dimensions) as a heatmap, blue negative, red positive."""
    zmax = float(np.abs(table).max()) if zmax is None else zmax
    fig = go.Figure(
        go.Heatmap(
            z=table,
            colorscale=DIVERGING,
            reversescale=True,
            zmin=-zmax,
            zmax=zmax,
            hovertemplate="position %{y}, dimension %{x}: %{z:.3f}<extra></extra>",
            colorbar=colorbar_below(),  # half a 1024 px column: the plot needs the width
        )
    )
    fig.update_xaxes(title="dimension")
    fig.update_yaxes(title="position", autorange="reversed")
    return base_layout(fig, title, HEIGHT)


def similarity_heatmap(sim: np.ndarray, title: str) -> go.Figure:
    """A position x position cosine similarity matrix (-1..1)."""
    fig = go.Figure(
        go.Heatmap(
            z=sim,
            colorscale=DIVERGING,
            reversescale=True,
            zmin=-1,
            zmax=1,
            hovertemplate="positions %{y} and %{x}: cosine %{z:.2f}<extra></extra>",
            colorbar=colorbar_below(),
        )
    )
    # no square cells (scaleanchor): in half a 1024 px column they stretched the y range to
    # -150..250 around 128 positions, or left the matrix small in a box of white
    fig.update_xaxes(title="position")
    fig.update_yaxes(title="position", autorange="reversed")
    return base_layout(fig, title, HEIGHT)


def swap_chart(
    original: np.ndarray, swapped: np.ndarray, title: str, ymax: float | None = None
) -> go.Figure:
    """The difference swapped - original, dimension by dimension, as bars: flat when equal.

    Give two charts the same `ymax` so a tiny difference looks tiny beside a large one.
    """
    diff = np.asarray(swapped, dtype=float) - np.asarray(original, dtype=float)
    ymax = float(np.abs(diff).max()) if ymax is None else ymax
    fig = go.Figure(
        go.Bar(
            x=np.arange(len(diff)),
            y=diff,
            marker_color=ACCENT,
            hovertemplate="dimension %{x}: %{y:.2e}<extra></extra>",
        )
    )
    fig.update_xaxes(title="dimension")
    fig.update_yaxes(
        title="swapped − original", range=[-1.05 * ymax, 1.05 * ymax] if ymax else None
    )
    return base_layout(fig, title, SMALL_HEIGHT)
