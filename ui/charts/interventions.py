"""Intervention figures: next-token probabilities before and after, a layer x head grid (the loss
each head's ablation costs, or how much of the answer patching it restores), the layers x positions
patching map, each prompt token's surprisal with and without position embeddings, and the
steering push against its strength beside what a random direction does.

Arrays and labels in, plotly figures out; token labels go through plotly_labels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ui.charts.common import (
    ACCENT,
    COLUMN_TICKS_MAX_T,
    DIVERGING,
    SMALL_HEIGHT,
    TICK_FONT,
    base_layout,
    every_tick,
    house_layout,
    plotly_labels,
)
from ui.charts.next_token import LEGEND_BELOW, distinct_labels

BEFORE_COLOUR = "#7f7f7f"  # the model as trained: grey, as on LayerNorm and Inside a block (a
# pale blue beside the dark one washed out to one hue on a projector)
AFTER_COLOUR = "#08519c"  # the model with the intervention
MARK_COLOUR = "#111111"  # outline of the cells (heads) that are ablated now
CELL_TEXT_MAX = 64  # write the value in each cell of a layer x head grid up to this many cells


def before_after_bars(
    labels: Sequence[str], before: np.ndarray, after: np.ndarray, title: str = ""
) -> go.Figure:
    """Two bars per token, the probability before and after; the change in percentage points is
    written over the after bar (and in the hover)."""
    x = plotly_labels(distinct_labels(list(labels)))
    diff = np.asarray(after) - np.asarray(before)
    hover = "%{x}: %{y:.3f} (change %{customdata:+.3f})<extra>%{fullData.name}</extra>"
    bars = [
        go.Bar(
            x=x,
            y=before,
            name="before",
            marker_color=BEFORE_COLOUR,
            customdata=diff,
            hovertemplate=hover,
        ),
        go.Bar(
            x=x,
            y=after,
            name="after the intervention",
            marker_color=AFTER_COLOUR,
            customdata=diff,
            hovertemplate=hover,
            # the change written over each bar that moved by at least half a percentage point
            text=[f"{d * 100:+.0f}" if abs(d) >= 0.005 else "" for d in diff],
            textposition="outside",
            textfont=dict(size=TICK_FONT),
            cliponaxis=False,
        ),
    ]
    layout = house_layout(
        title,
        SMALL_HEIGHT + 80,
        barmode="group",
        legend=LEGEND_BELOW,
        yaxis=dict(title="probability", rangemode="tozero"),
        xaxis=dict(type="category", **every_tick(x, COLUMN_TICKS_MAX_T)),
        # a change that cannot be written at 12 px over its bar is left to the hover
        uniformtext=dict(minsize=TICK_FONT, mode="hide"),
    )
    return go.Figure(bars, layout)


def _cell(value: float, fmt: str) -> str:
    """A cell's value as text, never "-0.000" (a tiny negative rounds to plain 0)."""
    text = format(value, fmt)
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def _grid_height(n_rows: int) -> int:
    return max(SMALL_HEIGHT, 110 + 40 * n_rows)


def layer_head_grid(
    values: np.ndarray,
    title: str,
    colorbar_title: str,
    marked: Sequence[tuple[int, int]] = (),
    zrange: tuple[float, float] | None = None,
    fmt: str = ".3f",
) -> go.Figure:
    """A layers x heads heatmap on the diverging scale centred on 0 (red up, blue down), layer 0 on
    top, each cell's value written in it; `marked` cells get a dark outline."""
    L, H = values.shape
    y = [f"layer {i}" for i in range(L)]
    x = [f"head {h}" for h in range(H)]
    peak = float(np.nanmax(np.abs(values))) if np.isfinite(values).any() else 1.0
    lo, hi = zrange or (-max(peak, 1e-9), max(peak, 1e-9))
    show_text = values.size <= CELL_TEXT_MAX
    heat = go.Heatmap(
        z=values,
        x=x,
        y=y,
        zmin=lo,
        zmax=hi,
        zmid=0,
        colorscale=DIVERGING,
        reversescale=True,
        text=[[_cell(v, fmt) for v in row] for row in values] if show_text else None,
        texttemplate="%{text}" if show_text else None,
        hovertemplate="%{y}, %{x}: %{z:" + fmt + "}<extra></extra>",
        colorbar=dict(title=dict(text=colorbar_title, side="right"), thickness=12, outlinewidth=0),
        xgap=2,
        ygap=2,
    )
    shapes = [
        dict(
            type="rect",
            x0=h - 0.5,
            x1=h + 0.5,
            y0=layer - 0.5,
            y1=layer + 0.5,
            line=dict(color=MARK_COLOUR, width=3),
        )
        for layer, h in marked
    ]
    layout = house_layout(
        title,
        _grid_height(L),
        shapes=shapes,
        yaxis=dict(autorange="reversed"),
    )
    return go.Figure([heat], layout)


def patching_map(
    scores: np.ndarray, row_labels: Sequence[str], token_labels: Sequence[str], title: str
) -> go.Figure:
    """The layers x positions map of patching scores: 1 = patching this cell alone restores the
    clean answer, 0 = it does nothing, negative = it pushes further from it. The scale is fixed
    at -1..1 so two prompts compare; the hover gives the exact value."""
    x = plotly_labels(token_labels)
    heat = go.Heatmap(
        z=scores,
        x=x,
        y=list(row_labels),
        zmin=-1,
        zmax=1,
        zmid=0,
        colorscale=DIVERGING,
        reversescale=True,
        hovertemplate="%{y}, token %{x}: %{z:.3f}<extra></extra>",
        colorbar=dict(
            title=dict(text="share restored", side="right"), thickness=12, outlinewidth=0
        ),
        xgap=1,
        ygap=1,
    )
    layout = house_layout(
        title,
        _grid_height(len(row_labels)) + 40,
        yaxis=dict(autorange="reversed"),
        xaxis=dict(type="category", tickangle=-60, **every_tick(x, COLUMN_TICKS_MAX_T)),
    )
    return go.Figure([heat], layout)


def surprisal_lines(
    token_labels: Sequence[str], before: np.ndarray, after: np.ndarray, after_name: str, title: str
) -> go.Figure:
    """Each prompt token's surprisal (-log p) with the positions as trained and changed."""
    x = plotly_labels(token_labels)
    lines = [
        go.Scatter(
            x=x,
            y=before,
            name="positions as trained",
            mode="lines+markers",
            line=dict(color=BEFORE_COLOUR, width=3),
        ),
        go.Scatter(
            x=x, y=after, name=after_name, mode="lines+markers", line=dict(color=ACCENT, width=2)
        ),
    ]
    layout = house_layout(
        title,
        SMALL_HEIGHT + 80,
        legend=LEGEND_BELOW,
        yaxis=dict(title="surprisal (nats)", rangemode="tozero"),
        xaxis=dict(type="category", tickangle=-60, **every_tick(x, COLUMN_TICKS_MAX_T)),
    )
    return go.Figure(lines, layout)


CHANCE_COLOUR = "rgba(120, 120, 120, 0.25)"  # the band a random direction moves the score within


def steering_push(
    alphas: np.ndarray, push: np.ndarray, chance: np.ndarray, chosen: float, title: str
) -> go.Figure:
    """The push towards A (nats per token) against the strength alpha, the grey band of what a
    random direction of the same length does (+-chance), and the chosen alpha marked."""
    alphas = np.asarray(alphas, dtype=float)
    band = go.Scatter(
        x=np.concatenate([alphas, alphas[::-1]]),
        y=np.concatenate([np.asarray(chance), -np.asarray(chance)[::-1]]),
        mode="lines",
        fill="toself",
        fillcolor=CHANCE_COLOUR,
        line=dict(width=0),
        name="a random direction (largest |push| of 8)",
        hoverinfo="skip",
    )
    line = go.Scatter(
        x=alphas,
        y=push,
        mode="lines+markers",
        name="the steering direction",
        line=dict(color=AFTER_COLOUR, width=3),
        hovertemplate="α = %{x:g}: %{y:+.3f} nats<extra></extra>",
    )
    layout = house_layout(
        title,
        SMALL_HEIGHT + 80,
        legend=LEGEND_BELOW,
        xaxis=dict(title="strength α", zeroline=True),
        yaxis=dict(title="push towards A (nats/token)", zeroline=True),
        shapes=[
            dict(
                type="line",
                x0=chosen,
                x1=chosen,
                yref="paper",
                y0=0,
                y1=1,
                line=dict(color=MARK_COLOUR, width=1, dash="dot"),
            )
        ],
    )
    return go.Figure([band, line], layout)


def facts_by_layer(attention: list[int], mlp: list[int] | None, known: int) -> go.Figure:
    """Of the facts recalled with nothing knocked out, how many each layer's attention (and MLP)
    knock-out loses, against all of them (the dashed line)."""
    layers = [f"layer {i}" for i in range(len(attention))]
    bars = [go.Bar(x=layers, y=attention, name="attention knocked out", marker_color="#1f77b4")]
    if mlp is not None:
        bars.append(go.Bar(x=layers, y=mlp, name="MLP knocked out", marker_color="#ff7f0e"))
    for bar in bars:
        bar.update(text=[str(v) for v in bar.y], textposition="outside")
    fig = go.Figure(bars)
    base_layout(fig, "Facts lost, one layer knocked out at a time")
    fig.add_hline(
        y=known,
        line=dict(color="#555", dash="dash"),
        annotation_text=f"all {known} recalled with nothing knocked out",
        annotation_font_size=12,
    )
    fig.update_layout(barmode="group", legend=dict(orientation="h", y=-0.2))
    fig.update_yaxes(title="facts lost", range=[0, max(known, 1) * 1.2])
    return fig
