"""Contextual embeddings: a token's occurrences in their contexts, projected by each station's own
PCA and coloured by group, and how alike they stay from station to station (cosines).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ui.charts.block.shared import (
    OV_COLOUR,
    STEP_COLOUR,
)
from ui.charts.common import (
    SMALL_HEIGHT,
    base_layout,
    plotly_labels,
)

GROUP_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#bbbbbb"]


def context_projections(
    points: np.ndarray,
    shares: np.ndarray,
    stations: list[str],
    groups: list[str],
    snippets: list[str],
    title: str = "",
    legend_title: str = "before it:",
) -> go.Figure:
    """Small multiples, one per station: the occurrences (S, n, 2) by that station's own PCA,
    coloured by group (e.g. the token before), the context in the hover."""
    S = len(stations)
    cols = min(S, 3)
    rows = -(-S // cols)
    fig = make_subplots(
        rows=rows,
        cols=cols,
        horizontal_spacing=0.04,
        vertical_spacing=0.12,
        subplot_titles=[f"{s} · {shares[i].sum():.0%}" for i, s in enumerate(stations)],
    )
    names = list(dict.fromkeys(groups))
    hover = plotly_labels([s.replace("\n", "↵") for s in snippets])
    for i in range(S):
        for g, name in enumerate(names):
            mask = np.array([x == name for x in groups])
            fig.add_trace(
                go.Scatter(
                    x=points[i, mask, 0],
                    y=points[i, mask, 1],
                    mode="markers",
                    name=name,
                    legendgroup=name,
                    showlegend=i == 0,
                    marker=dict(color=GROUP_COLOURS[g % len(GROUP_COLOURS)], size=7),
                    text=[hover[j] for j in np.flatnonzero(mask)],
                    hovertemplate="…%{text}<extra>" + plotly_labels([name])[0] + "</extra>",
                ),
                row=i // cols + 1,
                col=i % cols + 1,
            )
    base_layout(fig, title, height=60 + 250 * rows)
    fig.update_annotations(font=dict(size=12))
    fig.update_xaxes(showticklabels=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, zeroline=False)
    fig.update_layout(legend=dict(orientation="h", y=-0.02, yanchor="top", x=0, title=legend_title))
    return fig


def context_similarity(
    stations: list[str],
    to_layer0: np.ndarray,
    to_layer0_min: np.ndarray,
    between: np.ndarray,
    title: str = "",
    baseline: np.ndarray | None = None,
) -> go.Figure:
    """By station: the mean (and least) cosine of each occurrence to its own layer-0 vector, the
    mean cosine between two different occurrences, and (baseline) between two different tokens."""
    fig = go.Figure(
        [
            go.Scatter(
                x=stations,
                y=to_layer0,
                mode="lines+markers",
                name="to its own layer-0 vector",
                line=dict(color=STEP_COLOUR),
            ),
            go.Scatter(
                x=stations,
                y=to_layer0_min,
                mode="lines",
                name="… the least similar context",
                line=dict(color=STEP_COLOUR, dash="dot"),
            ),
            go.Scatter(
                x=stations,
                y=between,
                mode="lines+markers",
                name="between two contexts",
                line=dict(color=OV_COLOUR),
            ),
        ]
    )
    if baseline is not None:
        fig.add_trace(
            go.Scatter(
                x=stations,
                y=baseline,
                mode="lines",
                name="any two different tokens",
                line=dict(color="#7f7f7f", dash="dash"),
            )
        )
    base_layout(fig, title, height=SMALL_HEIGHT + 80)
    low = min(
        [0.0, float(to_layer0_min.min())]
        + ([float(baseline.min())] if baseline is not None else [])
    )
    fig.update_yaxes(title="cosine similarity", range=[low - 0.02, 1.02])
    fig.update_xaxes(type="category")
    fig.update_layout(legend=dict(orientation="h", y=-0.22))  # below: the lines reach every corner
    return fig
