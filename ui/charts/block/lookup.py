"""Attention as a look-up: the weight each key gets from an exact, a nearest and a soft look-up,
how the spread of q . k grows with the width unless divided by sqrt(d), and this head's scores
unscaled and scaled.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ui.charts.block.shared import (
    STEP_COLOUR,
)
from ui.charts.common import (
    ACCENT,
    COLUMN_TICKS_MAX_T,
    SMALL_HEIGHT,
    base_layout,
    every_tick,
    plotly_labels,
)

LOOKUP_COLOURS = {
    "exact": "#9467bd",
    "nearest": "#ff7f0e",
    "soft": "#1f77b4",
    "soft, unscaled": "#17becf",
}


def lookup_weights(
    weights: dict[str, np.ndarray], labels: list[str], titles: dict[str, str]
) -> go.Figure:
    """One row of bars per way of looking up: the weight each key gets (keys across)."""
    names = list(weights)
    x = plotly_labels(labels)
    fig = make_subplots(
        rows=len(names),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.09,
        subplot_titles=[titles[n] for n in names],
    )
    fig.add_traces(
        [
            go.Bar(
                x=x,
                y=weights[n],
                name=n,
                marker_color=LOOKUP_COLOURS.get(n, STEP_COLOUR),
                hovertemplate="key %{x}<br>weight %{y:.3f}<extra>" + n + "</extra>",
            )
            for n in names
        ],
        rows=list(range(1, len(names) + 1)),
        cols=[1] * len(names),
    )
    base_layout(fig, "", height=90 + 120 * len(names))
    fig.update_layout(showlegend=False, margin=dict(l=10, r=10, t=30, b=10))
    fig.update_yaxes(range=[0, 1.05], nticks=3)
    fig.update_xaxes(type="category", tickangle=-90, **every_tick(x, COLUMN_TICKS_MAX_T))
    for annotation in fig.layout.annotations:
        annotation.update(x=0, xanchor="left", font=dict(size=13))
    return fig


def spread_by_width(
    ds: list[int], raw: np.ndarray, scaled: np.ndarray, d_head: int, title: str = ""
) -> go.Figure:
    """The spread (standard deviation) of q . k for random vectors, as the width d grows:
    unscaled it grows like sqrt(d); divided by sqrt(d) it stays at 1. The model's d_head marked."""
    fig = go.Figure(
        [
            go.Scatter(
                x=ds,
                y=raw,
                mode="lines+markers",
                name="q · k",
                line=dict(color=LOOKUP_COLOURS["soft, unscaled"]),
            ),
            go.Scatter(
                x=ds,
                y=scaled,
                mode="lines+markers",
                name="q · k / √d",
                line=dict(color=LOOKUP_COLOURS["soft"]),
            ),
        ]
    )
    # A line trace, not add_vline: on a log axis a shape's x is read as log10(x).
    fig.add_trace(
        go.Scatter(
            x=[d_head, d_head],
            y=[0, float(max(raw))],
            mode="lines",
            line=dict(color=ACCENT, dash="dash"),
            name=f"this model: d_head = {d_head}",
        )
    )
    base_layout(fig, title, height=SMALL_HEIGHT + 60)
    fig.update_xaxes(title="width d (numbers per vector)", type="log")
    fig.update_yaxes(title="spread of the score (std)")
    fig.update_layout(legend=dict(x=0.02, y=0.98, bgcolor="rgba(255,255,255,0.7)"))
    return fig


def score_histograms(raw: np.ndarray, scaled: np.ndarray, title: str = "") -> go.Figure:
    """This head's q . k over every visible pair, unscaled and divided by sqrt(d_head)."""
    fig = go.Figure(
        [
            go.Histogram(
                x=raw,
                name="q · k",
                opacity=0.6,
                nbinsx=50,
                marker_color=LOOKUP_COLOURS["soft, unscaled"],
            ),
            go.Histogram(
                x=scaled,
                name="q · k / √d_head",
                opacity=0.6,
                nbinsx=50,
                marker_color=LOOKUP_COLOURS["soft"],
            ),
        ]
    )
    base_layout(fig, title, height=SMALL_HEIGHT + 60)
    fig.update_layout(
        barmode="overlay",
        legend=dict(x=0.02, y=0.98, bgcolor="rgba(255,255,255,0.7)"),
    )
    fig.update_xaxes(title="score")
    fig.update_yaxes(title="pairs")
    return fig
