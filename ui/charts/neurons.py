"""MLP neuron figures: the most active neurons on a prompt as a heatmap, corpus snippets with each
token shaded by one neuron's activation (escaped HTML), and the tokens a neuron promotes/suppresses.

Arrays and labels in, plotly figures or an HTML string out.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from ui.charts.common import (
    DIVERGING,
    EVERY_TICK_MAX_T,
    base_layout,
    every_tick,
    plotly_labels,
    show_whitespace,
)

HOT = (214, 39, 40)  # ACCENT as RGB: the max-activating token's colour
SNIPPET_STYLE = (
    "font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 13px; line-height: 1.9; "
    "white-space: pre-wrap; margin: 0 0 6px 0; padding: 6px 8px; border: 1px solid #e6e6e6; "
    "border-radius: 6px; background: #fff; color: #222"
)
VALUE_STYLE = "display: inline-block; min-width: 4.5em; color: #666; font-size: 12px"
MAX_STYLE = "outline: 2px solid #d62728; font-weight: 700; "
ROW_PX, ROW_FONT = 18, 12  # heatmap row height and its token labels: readable on a projector


def neuron_heatmap(
    acts: np.ndarray, labels: list[str], neurons: list[int], title: str = ""
) -> go.Figure:
    """(T, N) activations of N chosen neurons: positions down, neurons across, centred on 0."""
    labels = plotly_labels(labels)  # the student's tokens: never markup
    acts = np.asarray(acts, dtype=float)
    bound = float(np.abs(acts).max()) if acts.size else 1.0
    bound = bound or 1.0
    fig = go.Figure(
        go.Heatmap(
            z=acts,
            x=[f"n{n}" for n in neurons],
            y=labels,
            colorscale=DIVERGING,
            reversescale=True,
            zmid=0,
            zmin=-bound,
            zmax=bound,
            colorbar=dict(title="activation"),
            hovertemplate="token %{y}<br>neuron %{x}<br>activation %{z:.3f}<extra></extra>",
        )
    )
    fig.update_xaxes(
        type="category", tickangle=-60 if len(neurons) > 12 else 0, title="neuron (n + its index)"
    )
    # every token named (plotly showed every 2nd at 60 tokens), on rows of ROW_PX up to 64 tokens
    fig.update_yaxes(
        type="category",
        autorange="reversed",
        title="token of your prompt",
        **every_tick(labels, size=ROW_FONT),
    )
    height = int(np.clip(110 + ROW_PX * len(labels), 300, 110 + ROW_PX * EVERY_TICK_MAX_T))
    return base_layout(fig, title, height)


def _shade(value: float, peak: float) -> str:
    """A background colour: transparent at or below 0, ACCENT at the peak."""
    alpha = 0.0 if peak <= 0 else max(0.0, min(1.0, value / peak))
    r, g, b = HOT
    return f"rgba({r},{g},{b},{0.75 * alpha:.2f})"


def snippet_html(texts: list[str], acts: np.ndarray, position: int, peak: float) -> str:
    """One snippet: each token shaded by its activation (relative to `peak`), the token at
    `position` outlined; every piece of text escaped. Newlines show as '↵' and stay on one line."""
    spans = []
    for i, (text, a) in enumerate(zip(texts, np.asarray(acts, dtype=float), strict=True)):
        shown = html.escape(text.replace("\n", "↵"))
        extra = MAX_STYLE if i == position else ""
        spans.append(
            f'<span class="tok" style="{extra}border-radius:3px;background:{_shade(a, peak)}" '
            f'title="{html.escape(show_whitespace(text))}: {a:.3f}">{shown}</span>'
        )
    value = float(np.asarray(acts)[position])
    return (
        f'<div class="snip" style="{SNIPPET_STYLE}">'
        f'<span style="{VALUE_STYLE}">{round(value, 2) + 0.0:.2f}</span>{"".join(spans)}</div>'
    )


def snippets_html(rows: list[tuple[list[str], np.ndarray, int]]) -> str:
    """Several snippets (texts, activations, max position), shaded on one shared scale."""
    peak = max((float(np.max(acts)) for _, acts, _ in rows), default=0.0)
    body = "".join(snippet_html(texts, acts, pos, peak) for texts, acts, pos in rows)
    return f"<div>{body}</div>"


def direction_bars(
    up_labels: list[str],
    up_values: np.ndarray,
    down_labels: list[str],
    down_values: np.ndarray,
    title: str = "",
) -> go.Figure:
    """Horizontal bars: the tokens a direction promotes (red, right) and suppresses (blue, left)."""
    shown = [show_whitespace(t) for t in down_labels][::-1] + [
        show_whitespace(t) for t in up_labels
    ][::-1]
    labels = plotly_labels(shown)  # the vocabulary's tokens: never markup
    values = list(np.asarray(down_values, dtype=float)[::-1]) + list(
        np.asarray(up_values, dtype=float)[::-1]
    )
    colours = ["#2166ac"] * len(down_labels) + ["#b2182b"] * len(up_labels)
    ticks = [f"{i}. {lab}" for i, lab in enumerate(labels)]
    fig = go.Figure(
        go.Bar(
            x=values,
            y=ticks,
            orientation="h",
            marker_color=colours,
            hovertemplate="%{y}: %{x:+.3f}<extra></extra>",
        )
    )
    fig.update_yaxes(type="category", tickvals=ticks, ticktext=labels)
    fig.update_xaxes(title="change in the token's logit per unit of activation", zeroline=True)
    return base_layout(fig, title, max(300, 60 + 20 * len(labels)))
