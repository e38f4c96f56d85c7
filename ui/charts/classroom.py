"""The class's answers to a question: a bar per option (or per typed answer), the truth marked
once revealed, and the numbers typed as a strip of dots."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from ui.charts.common import ACCENT, TICK_FONT, base_layout, plotly_labels

BAR = "#4c78a8"
MAX_BARS = 12  # typed answers (tokens): the most common this many, the rest summed as "other"


def answer_bars(
    counts: dict[str, int], truth: str | None = None, title: str = "The class's answers"
) -> go.Figure:
    """One horizontal bar per answer, most common first for typed answers (options keep their
    order); the revealed truth's bar in the accent colour and named in its label."""
    items = list(counts.items())
    if len(items) > MAX_BARS:
        kept, rest = items[: MAX_BARS - 1], items[MAX_BARS - 1 :]
        items = [*kept, ("other answers", sum(n for _, n in rest))]
    labels = [f"{a} ✓" if truth is not None and a == truth else a for a, _ in items]
    values = [n for _, n in items]
    colours = [ACCENT if truth is not None and a == truth else BAR for a, _ in items]
    fig = go.Figure(
        go.Bar(
            x=values,
            y=plotly_labels(labels),
            orientation="h",
            marker_color=colours,
            text=[str(v) for v in values],
            textposition="outside",
            textfont=dict(size=TICK_FONT + 2),
            hovertemplate="%{y}: %{x} answers<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed", tickfont=dict(size=TICK_FONT + 2))
    step = max(1, math.ceil(max(values, default=1) / 5))  # whole answers: 0, 1, 2 ... not 0.2
    fig.update_xaxes(title="answers", rangemode="tozero", dtick=step, tickfont=dict(size=TICK_FONT))
    height = max(220, 60 + 34 * len(items))
    return base_layout(fig, title, height=height)


def number_strip(numbers: list[float], truth: float | None = None, unit: str = "") -> go.Figure:
    """Every number typed, one dot each along a line; the revealed truth as a vertical line."""
    fig = go.Figure(
        go.Scatter(
            x=numbers,
            y=[0] * len(numbers),
            mode="markers",
            marker=dict(size=14, color=BAR, opacity=0.6),
            hovertemplate="%{x}<extra></extra>",
        )
    )
    if truth is not None:
        fig.add_vline(x=truth, line_color=ACCENT, line_width=3)
        label = dict(size=TICK_FONT + 2, color=ACCENT)
        fig.add_annotation(
            x=truth, y=0.8, text=f"the answer: {truth:g}", showarrow=False, font=label
        )
    fig.update_yaxes(visible=False, range=[-1, 1])
    fig.update_xaxes(title=unit or "the numbers typed", tickfont=dict(size=TICK_FONT))
    return base_layout(fig, "The numbers the class typed", height=220)
