"""Sweep-contrast figures: training curves of several runs on a log loss axis, a run that stopped
early drawn as stopping there with an x and its reason; curves in panels side by side; the final
loss against the learning rate, a diverged run marked above the axis's top; each layer's median
gradient norm, input to output.

Lines and numbers in (analysis/labs/sweeps.py reads them), plotly figures out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from ui.charts.common import HEIGHT, house_layout, plotly_labels, subplot_domains
from ui.charts.scaling import decade_ticks, loss_ticks

USUAL = "#1f77b4"  # the usual design (residual, LayerNorm, dropout, AdamW): blue
OTHER = "#d62728"  # the part taken away or swapped: red
LEVEL_COLOUR = "#7f7f7f"
LR_SCALE = ("#9ecae1", "#6baed6", "#3182bd", "#08519c", "#08306b")  # low rate light, high dark
STOP_SYMBOL = "x"


@dataclass(frozen=True)
class Line:
    """One curve: steps and losses, drawn in `colour` with `dash`; `end` (e.g. "diverged at step
    120") marks its last point with an x and says why it ends there."""

    name: str
    step: np.ndarray
    loss: np.ndarray
    colour: str
    dash: str = "solid"
    end: str | None = None
    markers: bool = False


def log_axis(values: Sequence[float]) -> dict:
    """A log loss axis labelled in the full font: round losses over a narrow range, powers of
    ten once the losses span more than a factor of ten (a run that blew up)."""
    finite = [float(v) for v in values if np.isfinite(v) and v > 0]
    if not finite:
        return dict(type="log")
    if max(finite) / min(finite) <= 10:
        ticks = loss_ticks(finite)
        return dict(type="log", tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])
    return dict(type="log", **decade_ticks(finite))


def _traces(lines: Sequence[Line], xaxis: str = "x", yaxis: str = "y", legend: bool = True):
    traces = []
    for line in lines:
        label = plotly_labels([line.name])[0]
        traces.append(
            go.Scatter(
                x=line.step,
                y=line.loss,
                mode="lines+markers" if line.markers else "lines",
                name=label,
                legendgroup=label,
                showlegend=legend,
                line=dict(color=line.colour, dash=line.dash, width=2),
                marker=dict(size=6),
                xaxis=xaxis,
                yaxis=yaxis,
                hovertemplate=f"{label}<br>step %{{x:,.0f}}<br>loss %{{y:.4g}}<extra></extra>",
            )
        )
        if line.end and line.step.size:
            traces.append(
                go.Scatter(
                    x=[line.step[-1]],
                    y=[line.loss[-1]],
                    mode="markers+text",
                    text=["stopped"],
                    textposition="top center",
                    marker=dict(symbol=STOP_SYMBOL, size=12, color=line.colour),
                    textfont=dict(color=line.colour),
                    name=f"{label}: {line.end}",
                    legendgroup=label,
                    showlegend=False,
                    xaxis=xaxis,
                    yaxis=yaxis,
                    hovertemplate=f"{label}<br>{plotly_labels([line.end])[0]}<extra></extra>",
                )
            )
    return traces


def _level(y: float, text: str, xaxis: str = "x", yaxis: str = "y") -> tuple[dict, dict]:
    """A dashed horizontal line at y across a panel and its label (a shape and an annotation;
    on a log axis an annotation's y is log10 of the value)."""
    x_ref = "x domain" if xaxis == "x" else f"{xaxis} domain"
    shape = dict(
        type="line",
        xref=x_ref,
        x0=0,
        x1=1,
        yref=yaxis,
        y0=y,
        y1=y,
        line=dict(color=LEVEL_COLOUR, dash="dash", width=1.5),
    )
    note = dict(
        xref=x_ref,
        x=1,
        xanchor="right",
        yref=yaxis,
        y=math.log10(y),
        yanchor="bottom",
        text=text,
        showarrow=False,
        font=dict(color=LEVEL_COLOUR),
    )
    return shape, note


def curves(
    lines: Sequence[Line],
    title: str,
    level: tuple[float, str] | None = None,
    y_title: str = "loss (nats per character, log)",
) -> go.Figure:
    """The lines on one log loss axis; `level` = (loss, label), e.g. the untrained model's."""
    values = [v for line in lines for v in line.loss] + ([level[0]] if level else [])
    layout = house_layout(
        title,
        HEIGHT,
        xaxis=dict(title="step"),
        yaxis=dict(title=y_title, **log_axis(values)),
        legend=dict(orientation="h", y=-0.2),
    )
    if level is not None:
        shape, note = _level(*level)
        layout |= {"shapes": [shape], "annotations": [note]}
    return go.Figure(_traces(lines), layout=layout)


def panels(
    named: Sequence[tuple[str, Sequence[Line]]],
    title: str,
    level: tuple[float, str] | None = None,
) -> go.Figure:
    """One panel of lines per entry (title, lines), side by side, each with its own log loss
    axis (a run that blew up in one must not flatten the other); the legend is the first
    panel's line names (the same in every panel)."""
    cells = subplot_domains(1, len(named), h_space=0.12)
    traces, shapes, notes, layout = [], [], [], {}
    for i, ((heading, lines), (x_dom, y_dom)) in enumerate(zip(named, cells, strict=True)):
        sx = str(i + 1) if i else ""
        traces += _traces(lines, f"x{sx}", f"y{sx}", legend=i == 0)
        values = [v for line in lines for v in line.loss] + ([level[0]] if level else [])
        layout[f"xaxis{sx}"] = dict(domain=x_dom, anchor=f"y{sx}", title="step")
        layout[f"yaxis{sx}"] = dict(domain=y_dom, anchor=f"x{sx}", **log_axis(values))
        notes.append(
            dict(
                text=f"<b>{plotly_labels([heading])[0]}</b>",
                xref=f"x{sx} domain",
                x=0,
                xanchor="left",
                yref="paper",
                y=1.0,
                yanchor="bottom",
                showarrow=False,
            )
        )
        if level is not None:
            shape, note = _level(level[0], level[1], f"x{sx}", f"y{sx}")
            shapes.append(shape)
            notes.append(note)
    layout["yaxis"]["title"] = "loss (nats per character, log)"
    return go.Figure(
        traces,
        layout=house_layout(
            title,
            HEIGHT,
            **layout,
            shapes=shapes,
            annotations=notes,
            legend=dict(orientation="h", y=-0.2),
            margin=dict(l=10, r=10, t=70, b=10),
        ),
    )


@dataclass(frozen=True)
class RateSeries:
    """Final losses of one kind of run across learning rates; `diverged[i]` marks a run that
    diverged (drawn with an x at the axis's top, its real number in the hover)."""

    name: str
    lr: np.ndarray
    loss: np.ndarray
    diverged: tuple[bool, ...]
    colour: str


def by_rate(series: Sequence[RateSeries], untrained: float, title: str) -> go.Figure:
    """Each kind's final validation loss against the peak learning rate (log x); the untrained
    model's loss as a dashed line; a diverged run's point at the top edge, marked x."""
    kept = [v for s in series for v, d in zip(s.loss, s.diverged, strict=True) if not d]
    top = max([untrained, *kept]) * 1.15
    bottom = min([untrained, *kept]) * 0.9
    traces = []
    for s in series:
        label = plotly_labels([s.name])[0]
        shown = np.where(np.asarray(s.diverged), top, s.loss)
        traces.append(
            go.Scatter(
                x=s.lr,
                y=shown,
                mode="lines+markers",
                name=label,
                line=dict(color=s.colour, width=2),
                marker=dict(
                    size=[14 if d else 9 for d in s.diverged],
                    symbol=[STOP_SYMBOL if d else "circle" for d in s.diverged],
                    color=s.colour,
                ),
                customdata=[
                    f"diverged (loss {v:.3g})" if d else f"loss {v:.3f}"
                    for v, d in zip(s.loss, s.diverged, strict=True)
                ],
                hovertemplate=f"{label}<br>lr %{{x:g}}<br>%{{customdata}}<extra></extra>",
            )
        )
    rates = sorted({float(x) for s in series for x in s.lr})
    layout = house_layout(
        title,
        HEIGHT,
        xaxis=dict(
            title="peak learning rate (log)",
            type="log",
            tickvals=rates,
            ticktext=[f"{x:g}" for x in rates],
        ),
        yaxis=dict(title="final validation loss (nats)", range=[bottom, top * 1.04]),
        legend=dict(orientation="h", y=-0.2),
        shapes=[
            dict(
                type="line",
                xref="x domain",
                x0=0,
                x1=1,
                y0=untrained,
                y1=untrained,
                line=dict(color=LEVEL_COLOUR, dash="dash", width=1.5),
            )
        ],
        annotations=[
            dict(
                xref="x domain",
                x=0,
                xanchor="left",
                y=untrained,
                yanchor="bottom",
                text=f"untrained: {untrained:.2f}",
                showarrow=False,
                font=dict(color=LEVEL_COLOUR),
            ),
            dict(
                xref="x domain",
                x=0,
                xanchor="left",
                y=top,
                yanchor="top",
                text="x: diverged (off the scale)",
                showarrow=False,
            ),
        ],
    )
    return go.Figure(traces, layout=layout)


def layer_gradients(
    named: Sequence[tuple[str, Sequence[str], np.ndarray, str]], title: str
) -> go.Figure:
    """Each run's median gradient norm per layer, (name, layer labels input to output, medians,
    colour), on a log axis: a gradient that fades on its way down slopes up to the right."""
    traces = []
    values = []
    for name, labels, medians, colour in named:
        label = plotly_labels([name])[0]
        values += [float(v) for v in medians]
        traces.append(
            go.Scatter(
                x=list(labels),
                y=np.asarray(medians, dtype=float),
                mode="lines+markers",
                name=label,
                line=dict(color=colour, width=2),
                marker=dict(size=7),
                hovertemplate=f"{label}<br>%{{x}}<br>median norm %{{y:.3g}}<extra></extra>",
            )
        )
    order = list(dict.fromkeys(label for _, labels, _, _ in named for label in labels))
    return go.Figure(
        traces,
        layout=house_layout(
            title,
            HEIGHT,
            xaxis=dict(title="layer, input to output", categoryorder="array", categoryarray=order),
            yaxis=dict(title="median gradient norm (log)", **_norm_axis(values)),
            # inside, bottom right: below the plot it met the slanted layer names
            legend=dict(
                x=1, xanchor="right", y=0, yanchor="bottom", bgcolor="rgba(255,255,255,0.8)"
            ),
        ),
    )


def _norm_axis(values: Sequence[float]) -> dict:
    finite = [v for v in values if np.isfinite(v) and v > 0]
    return dict(type="log", **decade_ticks(finite)) if finite else dict(type="log")


def gaps(lines: Sequence[Line], title: str) -> go.Figure:
    """Validation minus training loss over the steps, a line per run, zero marked."""
    return go.Figure(
        _traces(lines),
        layout=house_layout(
            title,
            HEIGHT,
            xaxis=dict(title="step"),
            yaxis=dict(title="validation − training loss (nats)", zeroline=True),
            legend=dict(orientation="h", y=-0.2),
        ),
    )
