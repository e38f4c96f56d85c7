"""Training-dynamics figures: every head's role scores against training step above the loss on
repeated sequences (one shared step axis), and copy accuracy against the loss on one chart.

Arrays in (analysis/dynamics.Dynamics, analysis/training.Curves), plotly figures out.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ui.charts.common import (
    CONTEXT_COLOUR,
    FONT,
    LABEL_FONT,
    MARGIN,
    axis_suffix,
    end_labels,
    label_margin,
    legend_below,
    presenter_shrink,
    series_colours,
)
from viz_model.analysis.dynamics import ROLES, Dynamics
from viz_model.analysis.training import Curves

KEY_ROLES = ("induction", "previous-token")  # besides the followed head, these roles' top heads
FIRST_COLOUR, SECOND_COLOUR = "#7f7f7f", "#d62728"
TRAIN_COLOUR = "#bbbbbb"
# Three hues of the shared palette, none near the loss's red: per-token accuracy, the whole copy,
# and what per-token accuracy predicts for it (a blue and a cyan read as one line on a projector).
ACCURACY_COLOUR, EXACT_COLOUR, PREDICTED_COLOUR = series_colours(3, taken=[SECOND_COLOUR])
MARK_COLOUR = "#444444"
ROLE_ROW_HEIGHT, LOSS_ROW_HEIGHT = 115, 170
ROLE_RANGE = (0.0, 1.05)  # a role row's y axis: scores are 0..1
ROLE_LABEL_GAP = 0.2  # score units between labels: a LABEL_FONT line in a ~100 px role row
ROW_GAP = 0.065  # of the plot's height between rows: a subplot title's line, capped or not


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


def key_heads(d: Dynamics, focus: str) -> list[str]:
    """The heads drawn in colour: the followed one, then those with the highest score at the last
    saved step in each of KEY_ROLES (the induction head and the previous-token head it needs)."""
    heads = d.head_names()
    picked = [focus]
    for role in KEY_ROLES:
        top = heads[int(d.scores[role][-1].argmax())]
        if top not in picked:
            picked.append(top)
    return picked


def roles_over_training(
    d: Dynamics, focus: str, formed: int | None = None, chosen: int | None = None
) -> go.Figure:
    """One row per role (ROLES) with a line per head, then a row with the loss on the first and
    the second copy of the probe, all against training step. A projector shows a few lines in
    colour, not one per head: the key heads (`key_heads`, the `focus` head thick) are coloured
    and named at their line's end; every other head is a thin grey line, named on hover."""
    heads = d.head_names()
    keys = key_heads(d, focus)
    colours = dict(zip(keys, series_colours(len(keys), taken=[SECOND_COLOUR]), strict=True))
    rows = len(ROLES) + 1
    heights = [ROLE_ROW_HEIGHT] * len(ROLES) + [LOSS_ROW_HEIGHT]
    # labels stay apart, and subplot titles clear the row above, where the rows are drawn
    # smallest: presenter mode caps the figure's height at the projector's screen
    shrink = presenter_shrink(sum(heights) + 150)
    fig = make_subplots(
        rows=rows,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=ROW_GAP,
        row_heights=heights,
        subplot_titles=[f"{role} score" for role in ROLES] + ["loss on repeated random text"],
    )
    S, last = len(d.steps), float(d.steps[-1])
    labels = []
    for row, role in enumerate(ROLES, start=1):
        values = d.scores[role].reshape(S, -1)  # (S, L*H)
        offsets = d.offset_k.reshape(S, -1) if role == "looks k back" else None
        extra = "<br>k = %{customdata}" if offsets is not None else ""  # the offset it looks back
        order = [i for i, h in enumerate(heads) if h not in colours]  # grey first, under
        order += [heads.index(h) for h in keys]
        for i in order:
            head = heads[i]
            colour = colours.get(head, CONTEXT_COLOUR)
            width = 4 if head == focus else 2.5 if head in colours else 1
            fig.add_trace(
                go.Scatter(
                    x=d.steps,
                    y=values[:, i],
                    mode="lines",
                    name=head,
                    legendgroup=head,
                    showlegend=False,  # named at the line's end, or on hover when grey
                    customdata=offsets[:, i] if offsets is not None else None,
                    line=dict(color=colour, width=width),
                    hovertemplate=f"{head} step %{{x:,}}<br>{role} %{{y:.2f}}{extra}<extra></extra>",
                ),
                row=row,
                col=1,
            )
        fig.update_yaxes(range=list(ROLE_RANGE), row=row, col=1, nticks=3)
        axis = axis_suffix(row - 1)
        labels += end_labels(
            keys,
            last,
            [float(values[-1, heads.index(h)]) for h in keys],
            [colours[h] for h in keys],
            ROLE_LABEL_GAP / shrink,
            xref=f"x{axis}",
            yref=f"y{axis}",
            bounds=(0.0, ROLE_RANGE[1]),
        )
    k = d.copy_length
    losses = (
        ("first copy", f"first copy (tokens 2..{k}: unpredictable)", d.loss_first, FIRST_COLOUR),
        (
            "second copy",
            f"second copy (tokens {k + 2}..{2 * k}: copyable)",
            d.loss_second,
            SECOND_COLOUR,
        ),
    )
    for _, name, y, colour in losses:
        fig.add_trace(
            go.Scatter(
                x=d.steps,
                y=y,
                mode="lines+markers",
                name=name,
                showlegend=False,  # named at the line's end
                line=dict(color=colour, width=2.5),
                marker=dict(size=6),
                hovertemplate=f"step %{{x:,}}<br>{name}: %{{y:.3f}} nats<extra></extra>",
            ),
            row=rows,
            col=1,
        )
    top = float(np.nanmax([*d.loss_first, *d.loss_second, 0.0])) or 1.0
    axis = axis_suffix(rows - 1)
    labels += end_labels(
        [short for short, *_ in losses],
        last,
        [float(y[-1]) for _, _, y, _ in losses],
        [colour for *_, colour in losses],
        top * LABEL_FONT * 1.3 / (LOSS_ROW_HEIGHT * shrink),  # a label's height, in nats
        xref=f"x{axis}",
        yref=f"y{axis}",
        bounds=(0.0, top),
    )
    fig.update_yaxes(title_text="nats per token", rangemode="tozero", row=rows, col=1)
    fig.update_xaxes(range=[0, int(d.steps[-1]) * 1.02])
    fig.update_xaxes(title_text="training step", row=rows, col=1)
    fig.update_annotations(font_size=13)  # the subplot titles
    for label in labels:
        fig.add_annotation(label)
    _marks(fig, formed, chosen)
    fig.update_layout(
        font=FONT,
        height=sum(heights) + 150,
        margin=dict(MARGIN, t=50, r=label_margin(keys + [short for short, *_ in losses])),
        legend=legend_below(),  # the marks
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
        (f"(per-token accuracy)^{power}", d.copy_accuracy**power, PREDICTED_COLOUR, True, "dot"),
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
