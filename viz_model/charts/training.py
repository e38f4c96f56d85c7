"""Training figures: the loss curves of a run with the counting baselines as horizontal lines,
and its learning-rate schedule.

Arrays in (analysis/training.Curves, ngram.Baselines.as_dict()), plotly figures out.
"""

from __future__ import annotations

import plotly.graph_objects as go

from viz_model.analysis.training import Curves
from viz_model.charts.common import SMALL_HEIGHT, house_layout

TRAIN_COLOUR = "#1f77b4"
VAL_COLOUR = "#d62728"
BASELINE_COLOUR = "#7f7f7f"
BASELINE_DASH = {"blind guess": "dot", "unigram": "dash", "bigram": "dashdot"}


def loss_curves(
    curves: Curves, baselines: dict[str, float] | None = None, title: str = ""
) -> go.Figure:
    """Train loss (line) and validation loss (markers) against the run's x axis, in nats per
    token, with one labelled horizontal line per counting baseline ("better than counting")."""
    traces = [
        go.Scatter(
            x=curves.train_x,
            y=curves.train_loss,
            mode="lines",
            name="training loss",
            line=dict(color=TRAIN_COLOUR, width=2),
            hovertemplate=f"{curves.x_label} %{{x:,.0f}}<br>train loss %{{y:.3f}}<extra></extra>",
        ),
        go.Scatter(
            x=curves.val_x,
            y=curves.val_loss,
            mode="lines+markers",
            name="validation loss",
            line=dict(color=VAL_COLOUR, width=2),
            marker=dict(size=7),
            hovertemplate=f"{curves.x_label} %{{x:,.0f}}<br>val loss %{{y:.3f}}<extra></extra>",
        ),
    ]
    fig = go.Figure(
        traces,
        layout=house_layout(
            title,
            xaxis=dict(title=curves.x_label),
            yaxis=dict(title="loss (nats per token)", rangemode="tozero"),
            legend=dict(orientation="h", y=-0.2),
        ),
    )
    for name, value in (baselines or {}).items():
        fig.add_hline(
            y=value,
            line=dict(color=BASELINE_COLOUR, dash=BASELINE_DASH.get(name, "dot"), width=1.5),
            annotation=dict(text=f"{name} {value:.2f}", font=dict(color=BASELINE_COLOUR)),
            annotation_position="top right",
        )
    return fig


def lr_curve(curves: Curves, title: str = "") -> go.Figure:
    """The learning rate against the run's x axis (warm-up, then the cosine decay)."""
    return go.Figure(
        go.Scatter(
            x=curves.train_x,
            y=curves.lr,
            mode="lines",
            line=dict(color=TRAIN_COLOUR),
            hovertemplate=f"{curves.x_label} %{{x:,.0f}}<br>lr %{{y:.2e}}<extra></extra>",
        ),
        layout=house_layout(
            title,
            SMALL_HEIGHT,
            xaxis=dict(title=curves.x_label),
            yaxis=dict(title="learning rate", exponentformat="e"),
            showlegend=False,
        ),
    )
