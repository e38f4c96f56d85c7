"""One gradient step: the gradient's length per group of weights, the loss after a step of each
learning rate against its first-order estimate, and how the step moved each target token's
probability.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

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

UP_COLOUR = "#2ca02c"
DOWN_COLOUR = "#d62728"
BEFORE_COLOUR = "#7f7f7f"


def gradient_norms(groups: list[tuple[str, float, float, int]], title: str = "") -> go.Figure:
    """The gradient's length for each parameter group (bars), with the weights' length and the
    parameter count in the hover; groups top to bottom in forward order."""
    names = [g[0] for g in groups]
    fig = go.Figure(
        go.Bar(
            x=[g[1] for g in groups],
            y=names,
            orientation="h",
            marker_color=STEP_COLOUR,
            customdata=[[g[2], g[3]] for g in groups],
            text=[f"{g[1]:.3g}" for g in groups],
            textposition="outside",
            cliponaxis=False,
            hovertemplate="%{y}<br>gradient length %{x:.4g}<br>weights' length "
            "%{customdata[0]:.4g}<br>%{customdata[1]:,} parameters<extra></extra>",
        )
    )
    base_layout(fig, title, height=80 + 26 * len(groups))
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(title="‖∂L/∂w‖ over the group", range=[0, 1.25 * max(g[1] for g in groups)])
    return fig


def loss_along_gradient(
    etas: np.ndarray, losses: np.ndarray, loss: float, grad_sq: float, lr: float, title: str = ""
) -> go.Figure:
    """The loss after one step of each learning rate (solid, log axis) beside the first-order
    estimate L - lr |g|^2 (dashed, drawn while it stays above 0) and the loss before (dotted);
    the chosen lr is ringed."""
    line = loss - etas * grad_sq
    keep = line > 0
    chosen = int(np.argmin(np.abs(np.log(etas / lr))))
    fig = go.Figure(
        [
            go.Scatter(
                x=etas,
                y=losses,
                mode="lines+markers",
                name="loss after one step",
                line=dict(color=STEP_COLOUR),
                hovertemplate="η = %{x:g}<br>loss after %{y:.4f}<extra></extra>",
            ),
            go.Scatter(
                x=etas[keep],
                y=line[keep],
                mode="lines",
                name="first order: L − η‖g‖²",
                line=dict(color=ACCENT, dash="dash"),
                hovertemplate="η = %{x:g}<br>first order %{y:.4f}<extra></extra>",
            ),
            go.Scatter(
                x=[etas[0], etas[-1]],
                y=[loss, loss],
                mode="lines",
                name="loss before",
                line=dict(color=BEFORE_COLOUR, dash="dot"),
                hoverinfo="skip",
            ),
            go.Scatter(
                x=[etas[chosen]],
                y=[losses[chosen]],
                mode="markers",
                name="this η",
                marker=dict(size=16, color="rgba(0,0,0,0)", line=dict(color="black", width=2)),
                hovertemplate="η = %{x:g}<br>loss after %{y:.4f}<extra>this η</extra>",
            ),
        ]
    )
    finite = losses[np.isfinite(losses)]
    low = min(float(finite.min()) if finite.size else loss, loss)
    high = max(float(finite.max()) if finite.size else loss, loss)
    pad = 0.08 * (high - low) + 1e-3
    base_layout(fig, title, height=SMALL_HEIGHT + 100)
    fig.update_layout(
        legend=dict(orientation="h", y=1.0, yanchor="bottom", x=1, xanchor="right"),
        margin=dict(l=10, r=10, t=70, b=10),
    )
    fig.update_xaxes(
        type="log",
        title="learning rate η (log scale)",
        tickvals=etas,
        ticktext=[f"{e:g}" for e in etas],
        tickangle=-45,
    )
    fig.update_yaxes(title="loss on the prompt (nats)", range=[max(0.0, low - pad), high + pad])
    return fig


def probability_change(
    labels: list[str], before: np.ndarray, after: np.ndarray, title: str = ""
) -> go.Figure:
    """Each target token's probability before (grey dot) and after (green up, red down) the step,
    joined by a line, one column per position."""
    x = plotly_labels(labels)
    up = after >= before
    xs, ys = [], []
    for i, label in enumerate(x):
        xs += [label, label, None]
        ys += [float(before[i]), float(after[i]), None]
    fig = go.Figure(
        [
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                line=dict(color="#bbbbbb"),
                hoverinfo="skip",
                showlegend=False,
            ),
            go.Scatter(
                x=x,
                y=before,
                mode="markers",
                name="before",
                marker=dict(color=BEFORE_COLOUR, size=7),
                hovertemplate="%{x}<br>before %{y:.4f}<extra></extra>",
            ),
            go.Scatter(
                x=x,
                y=after,
                mode="markers",
                name="after the step",
                marker=dict(
                    color=np.where(up, UP_COLOUR, DOWN_COLOUR).tolist(), size=9, symbol="diamond"
                ),
                hovertemplate="%{x}<br>after %{y:.4f}<extra></extra>",
            ),
        ]
    )
    base_layout(fig, title, height=SMALL_HEIGHT + 100)
    fig.update_layout(
        legend=dict(orientation="h", y=1.0, yanchor="bottom", x=1, xanchor="right"),
        margin=dict(l=10, r=10, t=70, b=10),
    )
    fig.update_xaxes(type="category", tickangle=-90, **every_tick(x, COLUMN_TICKS_MAX_T))
    fig.update_yaxes(title="p(next token)", range=[0, 1.04])
    return fig
