"""The block's matrices side by side, one row per token (attention weights on the sequential
scale, the others diverging), and a head's circuits: W_QK's and W_OV's singular values and a
token-by-token map.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ui.charts.block.shared import (
    OV_COLOUR,
    QK_COLOUR,
    symmetric_bound,
)
from ui.charts.common import (
    ACCENT,
    COLUMN_TICKS_MAX_T,
    DIVERGING,
    SEQUENTIAL,
    SMALL_HEIGHT,
    base_layout,
    every_tick,
    plotly_labels,
)


def matrices(
    panels: list[tuple[str, np.ndarray, bool, list[str] | None]],
    row_labels: list[str],
    title: str = "",
) -> go.Figure:
    """Matrices side by side, one row per token: (title, array (T, n), is_weights, column labels).

    Weights (a pattern) use the sequential 0..1 scale with the masked cells left blank; other
    matrices the diverging scale, each on its own range (hover for the numbers)."""
    labels = plotly_labels(row_labels)
    widths = [a.shape[1] for _, a, _, _ in panels]
    fig = make_subplots(
        rows=1,
        cols=len(panels),
        shared_yaxes=True,
        column_widths=[w / sum(widths) for w in widths],
        horizontal_spacing=0.02,
        subplot_titles=[p[0] for p in panels],
    )
    for i, (_, values, weights, cols) in enumerate(panels, start=1):
        values = np.asarray(values, dtype=float)
        x = plotly_labels(cols) if cols is not None else np.arange(values.shape[1])
        scale = (
            dict(colorscale=SEQUENTIAL, zmin=0, zmax=1)
            if weights
            else dict(
                colorscale=DIVERGING,
                reversescale=True,
                zmid=0,
                zmin=-symmetric_bound(values),
                zmax=symmetric_bound(values),
            )
        )
        shown = np.where(np.isfinite(values), values, np.nan)
        fig.add_trace(
            go.Heatmap(
                z=np.where(weights & (shown == 0), np.nan, shown) if weights else shown,
                x=x,
                y=labels,
                showscale=False,
                hovertemplate="token %{y}<br>column %{x}: %{z:.3f}<extra></extra>",
                **scale,
            ),
            row=1,
            col=i,
        )
        fig.update_xaxes(type="category", showticklabels=cols is not None, row=1, col=i)
        if cols is not None:
            fig.update_xaxes(tickangle=-90, **every_tick(x, max_t=COLUMN_TICKS_MAX_T), row=1, col=i)
    T = len(labels)
    base_layout(fig, title, height=int(np.clip(10 * T + 180, 300, 760)))
    fig.update_yaxes(autorange="reversed", type="category", **every_tick(labels, max_t=40))
    fig.update_layout(plot_bgcolor="white")
    return fig


def singular_values(qk: np.ndarray, ov: np.ndarray, d_head: int, title: str = "") -> go.Figure:
    """The singular values of W_QK and W_OV, largest first, with the head's width d_head marked:
    past it they are zero (up to rounding), so the rank is at most d_head."""
    n = np.arange(1, len(qk) + 1)
    fig = go.Figure(
        [
            go.Bar(x=n, y=qk, name="W_QK = W_Q W_Kᵀ", marker_color=QK_COLOUR),
            go.Bar(x=n, y=ov, name="W_OV = W_V W_O", marker_color=OV_COLOUR),
        ]
    )
    fig.add_vline(
        x=d_head + 0.5,
        line=dict(color=ACCENT, dash="dash"),
        annotation_text=f"d_head = {d_head}",
        annotation_position="top right",
    )
    base_layout(fig, title, height=SMALL_HEIGHT + 40)
    fig.update_layout(barmode="group", legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0.3))
    fig.update_xaxes(title="singular value number", range=[0.5, min(len(n), 2 * d_head) + 0.5])
    fig.update_yaxes(title="size")
    return fig


def token_map(
    table: np.ndarray,
    row_labels: list[str],
    col_labels: list[str],
    *,
    row_name: str,
    col_name: str,
    title: str = "",
) -> go.Figure:
    """A token-by-token map (rows x columns) on the diverging scale, each row's mean subtracted
    (a softmax ignores it), so a cell says how much more than usual the row token favours it."""
    values = np.asarray(table, dtype=float)
    values = values - values.mean(1, keepdims=True)
    rows, cols = plotly_labels(row_labels), plotly_labels(col_labels)
    bound = symmetric_bound(values)
    fig = go.Figure(
        go.Heatmap(
            z=values,
            x=cols,
            y=rows,
            colorscale=DIVERGING,
            reversescale=True,
            zmid=0,
            zmin=-bound,
            zmax=bound,
            colorbar=dict(thickness=12, len=0.8),
            hovertemplate=f"{row_name} %{{y}}<br>{col_name} %{{x}}<br>%{{z:.3f}}<extra></extra>",
            xgap=1,
            ygap=1,
        )
    )
    base_layout(fig, title, height=int(np.clip(16 * len(rows) + 200, 320, 900)))
    fig.update_xaxes(
        title=col_name, type="category", tickangle=-90, **every_tick(cols, COLUMN_TICKS_MAX_T)
    )
    fig.update_yaxes(title=row_name, type="category", autorange="reversed", **every_tick(rows))
    fig.update_layout(plot_bgcolor="white")
    return fig
