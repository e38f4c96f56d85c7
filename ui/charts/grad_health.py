"""Gradient-health figures: each layer's gradient norm before clipping with the whole gradient's
and the clipping cap, and each layer's update ratio with the rule of thumb; both on log axes, by
layer, so vanishing (lines apart by depth), exploding (lines climbing) and clipping (the whole
gradient above the cap) are seen.

Arrays in (analysis/grad_health.GradHealth), plotly figures out.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from ui.charts.common import ACCENT, HEIGHT, house_layout
from viz_model.analysis.grad_health import RULE_OF_THUMB, GradHealth, layer_label, norm_curve

WHOLE_COLOUR = "#1f1f1f"
OUTER_COLOUR = "#8c8c8c"  # embeddings and the output layer: not blocks, drawn apart
DEPTH_SCALE = "Viridis"  # block 0 dark purple ... top block yellow-green
REFERENCE_COLOUR = "#7f7f7f"
MARK_COLOUR = "#555555"


def _layer_styles(h: GradHealth) -> list[dict]:
    """One line style per layer: blocks coloured by depth, the embeddings and output grey."""
    blocks = h.blocks
    shades = sample_colorscale(
        DEPTH_SCALE, [i / max(1, len(blocks) - 1) * 0.85 for i in range(len(blocks))]
    )
    by_block = dict(zip(blocks, shades, strict=True))
    styles = []
    for i, name in enumerate(h.layers):
        if i in by_block:
            styles.append(dict(color=by_block[i], width=2))
        else:
            styles.append(
                dict(color=OUTER_COLOUR, width=1.5, dash="dot" if name == "embed" else "dash")
            )
    return styles


def _layer_traces(h: GradHealth, values, what: str) -> list[go.Scatter]:
    mode = "lines+markers" if h.steps.size <= 40 else "lines"
    return [
        go.Scatter(
            x=h.steps,
            y=values[:, i],
            mode=mode,
            name=layer_label(name),
            line=style,
            marker=dict(size=5),
            hovertemplate=f"{layer_label(name)}<br>step %{{x:,.0f}}<br>{what} %{{y:.3g}}<extra></extra>",
        )
        for i, (name, style) in enumerate(zip(h.layers, _layer_styles(h), strict=True))
    ]


def _level(fig: go.Figure, y: float, text: str, colour: str, dash: str) -> None:
    """A labelled horizontal line at y on the log axis. The label is placed by hand: plotly puts
    an add_hline annotation at y itself, which a log axis reads as 10^y."""
    fig.add_hline(y=y, line=dict(color=colour, dash=dash, width=1.5))
    fig.add_annotation(
        x=1,
        xref="paper",
        xanchor="right",
        y=math.log10(y),
        yref="y",
        yanchor="bottom",
        text=text,
        showarrow=False,
        font=dict(color=colour),
        bgcolor="rgba(255, 255, 255, 0.8)",
    )


def _mark(fig: go.Figure, step: int | None) -> go.Figure:
    if step is not None:
        fig.add_vline(x=step, line=dict(color=MARK_COLOUR, dash="dot", width=1.5))
    return fig


LEGEND_ROW_PX = 20  # the legend puts about two layers a row under the plot


def _layout(title: str, y_title: str, n_traces: int) -> dict:
    """Log y by decades; taller for a deep model, so its legend does not squeeze the plot."""
    return house_layout(
        title,
        HEIGHT + LEGEND_ROW_PX * max(0, (n_traces - 5) // 2),
        xaxis=dict(title="step"),
        # one label a decade, plain digits: plotly's in-between digits and superscript powers
        # are drawn under the 12 px floor (charts/common.TICK_FONT)
        yaxis=dict(title=y_title, type="log", dtick=1, exponentformat="e"),
        legend=dict(orientation="h", y=-0.2),
    )


def gradient_norms(h: GradHealth, marked_step: int | None = None, title: str = "") -> go.Figure:
    """Each layer's gradient norm before clipping (every health step), the whole gradient's
    (every step, averaged into a few hundred points on a long run) and the clipping cap."""
    x, whole = norm_curve(h)
    traces = _layer_traces(h, h.grad, "gradient norm")
    traces.append(
        go.Scatter(
            x=x,
            y=whole,
            mode="lines",
            name="whole gradient",
            line=dict(color=WHOLE_COLOUR, width=2.5),
            hovertemplate="whole gradient<br>step %{x:,.0f}<br>norm %{y:.3g}<extra></extra>",
        )
    )
    fig = go.Figure(traces, layout=_layout(title, "gradient norm before clipping", len(traces)))
    if h.clip > 0:
        _level(fig, h.clip, f"clipping cap {h.clip:g}", ACCENT, "dash")
    return _mark(fig, marked_step)


def update_ratios(h: GradHealth, marked_step: int | None = None, title: str = "") -> go.Figure:
    """Each layer's ||w_after - w_before|| / ||w_before|| at every health step, and the rule of
    thumb's 1e-3 as a horizontal line."""
    fig = go.Figure(
        _layer_traces(h, h.update, "update ratio"),
        layout=_layout(title, "update ratio ‖Δw‖ / ‖w‖", len(h.layers)),
    )
    _level(fig, RULE_OF_THUMB, f"rule of thumb {RULE_OF_THUMB:g}", REFERENCE_COLOUR, "dot")
    return _mark(fig, marked_step)
