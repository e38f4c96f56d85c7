"""Comparison figures: one model's next-token probabilities as bars (drawn once per model, side
by side on the page), and two models' training curves overlaid on one axis.

Arrays in (analysis/labs/compare, analysis/training.Curves), plotly figures out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ui.charts.attention import pattern_heatmap
from ui.charts.common import HEIGHT, colorbar_below, house_layout, plotly_labels, show_whitespace
from viz_model.analysis.training import Curves

MODEL_COLOURS = ("#1f77b4", "#ff7f0e")  # model A, model B: the same in every chart of the page


def next_token_bars(
    labels: Sequence[str], probs: np.ndarray, title: str = "", colour: str = MODEL_COLOURS[0]
) -> go.Figure:
    """Horizontal bars of the top tokens' probabilities, the most likely at the top."""
    shown = plotly_labels(f"{show_whitespace(t)} " for t in labels)  # the space keeps "1" a label
    probs = np.asarray(probs, dtype=float)
    return go.Figure(
        go.Bar(
            x=probs[::-1],
            y=shown[::-1],
            orientation="h",
            marker=dict(color=colour),
            text=[f"{p:.0%}" if p >= 0.005 else "" for p in probs[::-1]],
            textposition="outside",
            cliponaxis=False,
            hovertemplate="%{y}: p = %{x:.3f}<extra></extra>",
        ),
        layout=house_layout(
            title,
            30 * len(shown) + 90,
            xaxis=dict(title="probability of the next token", range=[0, 1.12], tickformat=".0%"),
            yaxis=dict(type="category", automargin=True),
            showlegend=False,
        ),
    )


def half_width_pattern(pattern: np.ndarray, labels: list[str], title: str = "") -> go.Figure:
    """The Attention page's heatmap of one head (T, T) for half a page: its colour bar below the
    plot, where beside it it took a third of the width."""
    fig = pattern_heatmap(pattern, labels, title=title)
    fig.update_traces(colorbar=colorbar_below("weight"), selector=dict(name="pattern"))
    fig.update_layout(margin=dict(b=60))
    return fig


def overlaid_curves(named: Sequence[tuple[str, Curves]], unit: str, title: str = "") -> go.Figure:
    """Each model's training loss (thin) and validation loss (markers) in its colour, on one
    axis in `unit`; the x axis is the curves' own (step, tokens or seconds)."""
    traces = []
    for (name, c), colour in zip(named, MODEL_COLOURS, strict=False):
        label = plotly_labels([name])[0]
        traces += [
            go.Scatter(
                x=c.train_x,
                y=c.train_loss,
                mode="lines",
                name=f"{label}: training",
                line=dict(color=colour, width=1.2),
                opacity=0.55,
                hovertemplate=f"{label}<br>{c.x_label} %{{x:,.0f}}<br>train %{{y:.3f}}<extra></extra>",
            ),
            go.Scatter(
                x=c.val_x,
                y=c.val_loss,
                mode="lines+markers",
                name=f"{label}: validation",
                line=dict(color=colour, width=2.5),
                marker=dict(size=6),
                hovertemplate=f"{label}<br>{c.x_label} %{{x:,.0f}}<br>val %{{y:.3f}}<extra></extra>",
            ),
        ]
    x_label = named[0][1].x_label if named else "step"
    return go.Figure(
        traces,
        layout=house_layout(
            title,
            HEIGHT,
            xaxis=dict(title=x_label),
            yaxis=dict(title=f"loss ({unit})", rangemode="tozero"),
            legend=dict(orientation="h", y=-0.2),
        ),
    )
