"""Quantization page figures: bytes against bits per character for each way of storing the weights,
one matrix's weights against the grid they are rounded to, and the rounding error of each row.

Arrays and labels in, a plotly figure out (numbers from viz_model/analysis/quantization.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from ui.charts.common import ACCENT, HEIGHT, TICK_FONT, house_layout

SCHEME_STYLE = {  # scheme -> (colour, marker, dash)
    "one scale per row": ("#1f77b4", "circle", "solid"),
    "one scale per row, outliers in float16": ("#17becf", "circle-open", "dot"),
    "one scale per matrix": ("#d62728", "square", "solid"),
    "one scale per matrix, outliers in float16": ("#ff9896", "square-open", "dot"),
    "float": ("#2ca02c", "diamond", "solid"),
}
AXIS_FONT = dict(tickfont=dict(size=TICK_FONT))


def size_figure(
    names: Sequence[str],
    schemes: Sequence[str],
    nbytes: Sequence[int],
    bits_per_char: Sequence[float],
    title: str,
) -> go.Figure:
    """One line per scheme through its bit widths (8, 4, 3, 2 bits), float32 and float16 as
    diamonds: x bytes (log), y bits per character. Each point is labelled with its width."""
    traces = []
    for scheme, (colour, symbol, dash) in SCHEME_STYLE.items():
        idx = [i for i, s in enumerate(schemes) if s == scheme]
        if not idx:
            continue
        traces.append(
            go.Scatter(
                x=[nbytes[i] for i in idx],
                y=[bits_per_char[i] for i in idx],
                mode="lines+markers+text"
                if scheme in ("one scale per row", "float")
                else "lines+markers",
                name=scheme if scheme != "float" else "float32, float16",
                text=[names[i].split("-")[0] for i in idx],
                textposition="middle right" if scheme == "float" else "top center",
                textfont=dict(size=TICK_FONT),
                marker=dict(color=colour, symbol=symbol, size=10),
                line=dict(color=colour, dash=dash, width=1.5),
                customdata=[names[i] for i in idx],
                hovertemplate="%{customdata}<br>%{x:,} bytes<br>%{y:.3f} bits per character"
                "<extra></extra>",
            )
        )
    fig = go.Figure(traces)
    fig.update_layout(
        **house_layout(title, HEIGHT),
        xaxis=dict(title="bytes (log scale)", type="log", **AXIS_FONT),
        yaxis=dict(title="bits per character (lower is better)", **AXIS_FONT),
        legend=dict(orientation="h", y=-0.22, x=0, font=dict(size=TICK_FONT)),
    )
    return fig


def grid_histogram(
    weights: np.ndarray, levels: np.ndarray, kept_aside: np.ndarray, title: str
) -> go.Figure:
    """The histogram of a matrix's weights (log counts, so the few large ones show), each value
    the grid can store as a vertical line, and the weights kept aside in float16 in red."""
    lo, hi = float(min(weights.min(), levels.min())), float(max(weights.max(), levels.max()))
    size = (hi - lo) / 120 or 1.0
    bins = dict(start=lo, end=hi + size, size=size)
    traces = [
        go.Histogram(x=weights, xbins=bins, name="weights", marker_color="#1f77b4", opacity=0.8),
    ]
    if kept_aside.size:
        traces.append(
            go.Histogram(
                x=kept_aside, xbins=bins, name="kept in float16", marker_color=ACCENT, opacity=0.9
            )
        )
    shapes = [
        dict(
            type="line",
            x0=float(v),
            x1=float(v),
            yref="paper",
            y0=0,
            y1=1,
            line=dict(color="#555", width=1, dash="dot"),
        )
        for v in levels
    ]
    fig = go.Figure(traces)
    fig.update_layout(
        **house_layout(title, HEIGHT),
        barmode="overlay",
        shapes=shapes,
        xaxis=dict(title="weight value (dotted: the values the grid can store)", **AXIS_FONT),
        yaxis=dict(title="how many weights (log)", type="log", **AXIS_FONT),
        legend=dict(orientation="h", y=-0.22, x=0, font=dict(size=TICK_FONT)),
    )
    return fig


def row_error_figure(errors: Mapping[str, np.ndarray], title: str) -> go.Figure:
    """Root-mean-square rounding error of each row, one line per way of storing the matrix."""
    traces = []
    for label, err in errors.items():
        colour, _, dash = SCHEME_STYLE.get(label.split(", ", 1)[-1], ("#7f7f7f", "", "solid"))
        traces.append(
            go.Scatter(
                x=np.arange(len(err)),
                y=err,
                mode="lines",
                name=label,
                line=dict(color=colour, dash=dash, width=1.5),
                hovertemplate="row %{x}<br>error %{y:.2e}<extra>" + label + "</extra>",
            )
        )
    fig = go.Figure(traces)
    fig.update_layout(
        **house_layout(title, HEIGHT),
        xaxis=dict(title="row (output channel)", **AXIS_FONT),
        yaxis=dict(title="RMS error of the row", type="log", **AXIS_FONT),
        legend=dict(orientation="h", y=-0.22, x=0, font=dict(size=TICK_FONT)),
    )
    return fig
