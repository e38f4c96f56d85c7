"""Training figures: the loss curves of a run with the counting baselines as horizontal lines,
its learning-rate schedule, and the log loss beside accuracy at its saved snapshots
(`loss_and_accuracy`).

Arrays in (analysis/training.Curves, ngram.Baselines.as_dict()), plotly figures out.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ui.charts.common import SMALL_HEIGHT, house_layout, legend_below, plotly_text
from viz_model.analysis.training import Curves

TRAIN_COLOUR = "#1f77b4"
VAL_COLOUR = "#d62728"
BASELINE_COLOUR = "#7f7f7f"
EVENT_COLOUR = "#2ca02c"
BASELINE_DASH = {"blind guess": "dot", "unigram": "dash", "bigram": "dashdot"}


def loss_curves(
    curves: Curves, baselines: dict[str, float] | None = None, title: str = ""
) -> go.Figure:
    """Train loss (line) and validation loss (markers) against the run's x axis, in nats per
    token, with one labelled horizontal line per counting baseline ("better than counting") and
    one labelled vertical line per event (a new peak learning rate, a pause, a resume)."""
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
    for at, what in curves.events:  # a new peak lr, a pause, a resume: where the curve may bend
        fig.add_vline(
            x=at,
            line=dict(color=EVENT_COLOUR, dash="dot", width=1.5),
            annotation=dict(text=plotly_text(what), font=dict(color=EVENT_COLOUR), textangle=-90),
            annotation_position="top left",
        )
    for (name, value), position in zip(
        (baselines or {}).items(), label_positions(list((baselines or {}).values())), strict=True
    ):
        fig.add_hline(
            y=value,
            line=dict(color=BASELINE_COLOUR, dash=BASELINE_DASH.get(name, "dot"), width=1.5),
            annotation=dict(text=f"{name} {value:.2f}", font=dict(color=BASELINE_COLOUR)),
            annotation_position=position,
        )
    return fig


LABEL_SPOTS = ("top right", "bottom right", "top left", "bottom left")


def label_positions(values: list[float], close: float = 0.06) -> list[str]:
    """Where each baseline's label goes: above its line at the right, unless a line within
    `close` of the largest value (a fraction of it) already has a label there; then the next
    free spot, so labels of nearly equal baselines (a task where counting learns nothing) do
    not print over each other.

    >>> label_positions([4.3, 3.3, 2.5]), label_positions([3.33, 3.29, 3.29])
    (['top right', 'top right', 'top right'], ['top right', 'bottom right', 'top left'])
    """
    gap = close * max((abs(v) for v in values), default=1.0)
    placed: list[tuple[float, str]] = []
    for value in values:
        taken = {spot for other, spot in placed if abs(other - value) < gap}
        spot = next((s for s in LABEL_SPOTS if s not in taken), LABEL_SPOTS[0])
        placed.append((value, spot))
    return [spot for _, spot in placed]


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


ACCURACY_COLOUR = "#1b7f3b"


def loss_and_accuracy(steps: np.ndarray, loss: np.ndarray, accuracy: np.ndarray) -> go.Figure:
    """Validation log loss (red, left axis, nats) and accuracy (green, right axis, %) at each
    saved snapshot, on the same tokens. The steps are log-spaced, so the x axis lists them as
    categories, one per snapshot, in order."""
    x = [f"{int(s):,}" for s in steps]
    hover = "step %{x}<br>"
    traces = [
        go.Scatter(
            x=x,
            y=np.asarray(loss, dtype=float),
            mode="lines+markers",
            name="log loss (nats, left)",
            line=dict(color=VAL_COLOUR, width=2),
            hovertemplate=hover + "log loss %{y:.3f} nats<extra></extra>",
        ),
        go.Scatter(
            x=x,
            y=100 * np.asarray(accuracy, dtype=float),
            mode="lines+markers",
            name="accuracy (%, right)",
            yaxis="y2",
            line=dict(color=ACCURACY_COLOUR, width=2, dash="dash"),
            marker=dict(symbol="square"),
            hovertemplate=hover + "accuracy %{y:.1f}%<extra></extra>",
        ),
    ]
    return go.Figure(
        traces,
        layout=house_layout(
            "Log loss and accuracy at each saved snapshot, on the same validation tokens",
            height=SMALL_HEIGHT + 80,
            xaxis=dict(type="category", title="training step (saved snapshots)"),
            yaxis=dict(title="log loss (nats)", rangemode="tozero"),
            yaxis2=dict(  # its own round ticks: left alone, plotly aligned them to the loss's (85.3)
                title="accuracy (%)",
                overlaying="y",
                side="right",
                range=[0, 100],
                tickmode="array",
                tickvals=[0, 20, 40, 60, 80, 100],
                showgrid=False,
            ),
            legend=legend_below(),
        ),
    )
