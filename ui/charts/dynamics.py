"""Training-dynamics figures: every head's role scores against training step above the loss on
repeated sequences (one shared step axis), and copy accuracy against the loss on one chart.

Arrays in (analysis/dynamics.Dynamics, analysis/training.Curves), plotly figures out.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from ui.charts.common import FONT, MARGIN
from viz_model.analysis.dynamics import ROLES, Dynamics
from viz_model.analysis.training import Curves

HEAD_COLOURS = qualitative.Plotly  # 10 colours; a head keeps its colour in every row
FIRST_COLOUR, SECOND_COLOUR = "#7f7f7f", "#d62728"
ACCURACY_COLOUR, EXACT_COLOUR, TRAIN_COLOUR = "#1f77b4", "#17becf", "#bbbbbb"
MARK_COLOUR = "#444444"
ROLE_ROW_HEIGHT, LOSS_ROW_HEIGHT = 115, 170


def _marks(fig: go.Figure, formed: int | None, chosen: int | None) -> None:
    """Vertical lines through every row, named in the legend (a label on the line would sit on
    the plot or the subplot titles): where copying is half learned, and the sidebar's step."""
    for step, colour, dash, text in (
        (formed, SECOND_COLOUR, "dash", "copying half learned: step {:,}"),
        (chosen, MARK_COLOUR, "dot", "the sidebar's step: {:,}"),
    ):
        if step is None:
            continue
        fig.add_vline(x=step, line=dict(color=colour, dash=dash, width=1.5))
        legend_only = go.Scatter(
            x=[None],
            y=[None],
            mode="lines",
            name=text.format(step),
            line=dict(color=colour, dash=dash),
        )
        fig.add_trace(legend_only)


def roles_over_training(
    d: Dynamics, focus: str, formed: int | None = None, chosen: int | None = None
) -> go.Figure:
    """One row per role (ROLES) with a line per head (the `focus` head thick), then a row with
    the loss on the first and the second copy of the probe, all against training step."""
    heads = d.head_names()
    rows = len(ROLES) + 1
    heights = [ROLE_ROW_HEIGHT] * len(ROLES) + [LOSS_ROW_HEIGHT]
    fig = make_subplots(
        rows=rows,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.035,
        row_heights=heights,
        subplot_titles=[f"{role} score" for role in ROLES] + ["loss on repeated random text"],
    )
    S = len(d.steps)
    for row, role in enumerate(ROLES, start=1):
        values = d.scores[role].reshape(S, -1)  # (S, L*H)
        for i, head in enumerate(heads):
            extra = (
                "<br>k = %{customdata}" if role == "looks k back" else ""
            )  # which offset the head looks back
            fig.add_trace(
                go.Scatter(
                    x=d.steps,
                    y=values[:, i],
                    mode="lines",
                    name=head,
                    legendgroup=head,
                    showlegend=row == 1,
                    customdata=d.offset_k.reshape(S, -1)[:, i] if role == "looks k back" else None,
                    line=dict(
                        color=HEAD_COLOURS[i % len(HEAD_COLOURS)], width=4 if head == focus else 1.5
                    ),
                    opacity=1.0 if head == focus else 0.55,
                    hovertemplate=f"{head} step %{{x:,}}<br>{role} %{{y:.2f}}{extra}<extra></extra>",
                ),
                row=row,
                col=1,
            )
        fig.update_yaxes(range=[0, 1.05], row=row, col=1, nticks=3)
    k = d.copy_length
    for name, y, colour in (
        (f"first copy (tokens 2..{k}: unpredictable)", d.loss_first, FIRST_COLOUR),
        (f"second copy (tokens {k + 2}..{2 * k}: copyable)", d.loss_second, SECOND_COLOUR),
    ):
        fig.add_trace(
            go.Scatter(
                x=d.steps,
                y=y,
                mode="lines+markers",
                name=name,
                line=dict(color=colour, width=2.5),
                marker=dict(size=6),
                hovertemplate=f"step %{{x:,}}<br>{name}: %{{y:.3f}} nats<extra></extra>",
            ),
            row=rows,
            col=1,
        )
    fig.update_yaxes(title_text="nats per token", rangemode="tozero", row=rows, col=1)
    fig.update_xaxes(range=[0, int(d.steps[-1]) * 1.02])
    fig.update_xaxes(title_text="training step", row=rows, col=1)
    fig.update_annotations(font_size=13)  # the subplot titles
    _marks(fig, formed, chosen)
    fig.update_layout(
        font=FONT,
        height=sum(heights) + 150,
        margin=dict(MARGIN, t=50),
        legend=dict(orientation="h", y=-0.08, yanchor="top"),
        hovermode="closest",
    )
    return fig


def loss_against_accuracy(
    d: Dynamics, train: Curves | None = None, formed: int | None = None
) -> go.Figure:
    """The loss on the second copy (and the training loss, when given) on the left axis, copy
    accuracy per token and for the whole copy on the right one (0..1), with what per-token
    accuracy predicts for the whole copy (its (k-1)th power, dotted), against training step.
    `formed`: the step copying is half learned, drawn only when the page claims it."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    if train is not None and train.train_x.size:
        fig.add_trace(
            go.Scatter(
                x=train.train_x,
                y=train.train_loss,
                mode="lines",
                name="training loss (all tokens)",
                line=dict(color=TRAIN_COLOUR, width=1.5),
                hovertemplate="step %{x:,.0f}<br>training loss %{y:.3f}<extra></extra>",
            ),
            secondary_y=False,
        )
    power = d.copy_length - 1
    series = (
        ("loss on the second copy", d.loss_second, SECOND_COLOUR, False, "solid"),
        ("copy accuracy (per token)", d.copy_accuracy, ACCURACY_COLOUR, True, "solid"),
        ("whole copy right", d.exact_copy, EXACT_COLOUR, True, "dash"),
        (f"(per-token accuracy)^{power}", d.copy_accuracy**power, EXACT_COLOUR, True, "dot"),
    )
    for name, y, colour, right, dash in series:
        fmt = "%{y:.0%}" if right else "%{y:.3f} nats"
        fig.add_trace(
            go.Scatter(
                x=d.steps,
                y=y,
                mode="lines" if dash == "dot" else "lines+markers",
                name=name,
                line=dict(color=colour, width=2.5, dash=dash),
                marker=dict(size=6),
                hovertemplate=f"step %{{x:,}}<br>{name}: {fmt}<extra></extra>",
            ),
            secondary_y=right,
        )
    top = float(np.nanmax([*d.loss_second, *(train.train_loss if train else [])], initial=0.0))
    fig.update_yaxes(title_text="loss (nats per token)", range=[0, top * 1.05], secondary_y=False)
    fig.update_yaxes(
        title_text="accuracy", range=[0, 1.02], tickformat=".0%", dtick=0.25, secondary_y=True
    )
    fig.update_xaxes(title_text="training step", range=[0, int(d.steps[-1]) * 1.02])
    _marks(fig, formed, None)
    fig.update_layout(
        font=FONT,
        height=430,
        margin=dict(MARGIN, t=50),
        legend=dict(orientation="h", y=-0.2, yanchor="top"),
    )
    return fig
