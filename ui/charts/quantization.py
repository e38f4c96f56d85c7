"""Quantization page figures: bytes against bits per character for each way of storing the weights,
one matrix's weights against the grid they are rounded to, and the rounding error of each row.

Arrays and labels in, a plotly figure out (numbers from viz_model/analysis/labs/quantization.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from ui.charts.common import (
    ACCENT,
    HEIGHT,
    TICK_FONT,
    house_layout,
    legend_below,
    series_colours,
)

# Five series a room tells apart on a washed-out projector: five hues of the shared palette (a
# scheme with its outliers kept aside is no paler copy of the scheme: a pale pink beside red and
# a cyan beside blue merged into one line each), the variant also open-marked and dotted.
_ROW, _MATRIX, _FLOAT, _ROW_OUT, _MATRIX_OUT = series_colours(5)
SCHEME_STYLE = {  # scheme -> (colour, marker, dash)
    "one scale per row": (_ROW, "circle", "solid"),
    "one scale per row, outliers in float16": (_ROW_OUT, "circle-open", "dot"),
    "one scale per matrix": (_MATRIX, "square", "solid"),
    "one scale per matrix, outliers in float16": (_MATRIX_OUT, "square-open", "dot"),
    "float": (_FLOAT, "diamond", "solid"),
}
LABELLED = ("one scale per row", "float")  # the lines whose points carry their width's name
AXIS_FONT = dict(tickfont=dict(size=TICK_FONT))


def byte_ticks(values: Sequence[float]) -> tuple[list[float], list[str]]:
    """1-2-5 steps over the values' range, written 200k, 1M, 2M (plotly's own log labels
    between powers of ten are drawn under the 12 px floor).

    >>> byte_ticks([240_000, 3_300_000])
    ([200000, 500000, 1000000, 2000000, 5000000], ['200k', '500k', '1M', '2M', '5M'])
    """
    lo, hi = min(values), max(values)
    ticks = []
    for exp in range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1):
        ticks += [m * 10**exp for m in (1, 2, 5)]
    below = max([t for t in ticks if t <= lo], default=ticks[0])
    above = min([t for t in ticks if t >= hi], default=ticks[-1])
    kept = [t for t in ticks if below <= t <= above]
    return kept, [_short(t) for t in kept]


def _short(n: float) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:g}{unit}"
    return f"{n:g}"


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
                textposition="top center" if scheme == "float" else "top right",
                textfont=dict(size=TICK_FONT),
                marker=dict(color=colour, symbol=symbol, size=10),
                line=dict(color=colour, dash=dash, width=1.5),
                customdata=[names[i] for i in idx],
                hovertemplate="%{customdata}<br>%{x:,} bytes<br>%{y:.3f} bits per character"
                "<extra></extra>",
            )
        )
    tickvals, ticktext = byte_ticks(nbytes)
    span = np.log10(tickvals[-1]) - np.log10(tickvals[0])
    x_range = [np.log10(tickvals[0]) - 0.03 * span, np.log10(tickvals[-1]) + 0.03 * span]
    fig = go.Figure(traces)
    fig.update_layout(
        **house_layout(title, HEIGHT),
        xaxis=dict(
            title="bytes (log scale)",
            type="log",
            tickvals=tickvals,
            ticktext=ticktext,
            range=x_range,
            **AXIS_FONT,
        ),
        yaxis=dict(
            title="bits per character (lower is better)",
            range=[0, max(bits_per_char) * 1.12],
            **AXIS_FONT,
        ),
        legend=legend_below(),
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
        yaxis=dict(title="how many weights (log)", type="log", dtick=1, **AXIS_FONT),
        legend=legend_below(),
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
        yaxis=dict(title="RMS error of the row", rangemode="tozero", **AXIS_FONT),
        legend=legend_below(),
    )
    return fig


DRIFT_COLOURS = tuple(series_colours(5))  # one hue each
PERCENT_TICKS = (0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)


def drift_figure(
    series: Mapping[str, np.ndarray], stations: Sequence[str], title: str
) -> go.Figure:
    """Each copy's residual stream against float32's at each station, as a share of its length
    (log axis, labelled in percent)."""
    traces = [
        go.Scatter(
            x=list(stations),
            y=values,
            mode="lines+markers",
            name=label,
            line=dict(color=DRIFT_COLOURS[i % len(DRIFT_COLOURS)], width=2),
            hovertemplate="%{x}: %{y:.2%}<extra>" + label + "</extra>",
        )
        for i, (label, values) in enumerate(series.items())
    ]
    finite = [v for values in series.values() for v in values if v > 0]
    lo, hi = (min(finite), max(finite)) if finite else (1e-3, 1.0)
    ticks = [t for t in PERCENT_TICKS if lo / 3 <= t <= hi * 3]
    fig = go.Figure(traces)
    fig.update_layout(
        **house_layout(title, HEIGHT),
        xaxis=dict(title="residual stream", **AXIS_FONT),
        yaxis=dict(
            title="difference from float32 (log)",
            type="log",
            tickvals=ticks,
            ticktext=[f"{100 * t:g}%" for t in ticks],
            **AXIS_FONT,
        ),
        legend=legend_below(),
    )
    return fig
