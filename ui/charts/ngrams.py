"""Figures of the N-grams page and of the "in the training text" sections: scores against the
n-gram order with the GPTs as lines, the share of unseen contexts, count ratios beside smoothed and
GPT probabilities, each token's share of a text's probability, and escaped HTML for snippets and
memorised spans.

Arrays and labels in, a plotly figure or an HTML string out; never streamlit.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ui.charts.common import (
    ACCENT,
    SMALL_HEIGHT,
    TICK_FONT,
    house_layout,
    plotly_labels,
    plotly_text,
    show_whitespace,
)
from ui.charts.next_token import LEGEND_BELOW, NO_VALUE_COLOUR, _chip, _words

MODEL_COLOURS = {"add-k": "#9467bd", "Kneser-Ney": "#1f77b4"}
GPT_COLOURS = ("#d62728", "#ff7f0e", "#2ca02c", "#8c564b")
COUNT_COLOUR = "#7f7f7f"
KN_COLOUR = "#1f77b4"
GPT_COLOUR = "#d62728"
MATCH_BG = "#fff3b0"  # a context found in the text, and a memorised span
NEXT_BG = "#c7e9c0"  # the token that followed it
GENERATED_OUTLINE = "box-shadow:inset 0 -3px 0 #1f5fa8;"


def order_chart(
    orders: Sequence[int],
    series: dict[str, Sequence[float]],
    gpt_lines: dict[str, float],
    y_title: str,
    title: str,
    kinds: dict[str, str] | None = None,
) -> go.Figure:
    """Each counting model's score against the order n (lines with markers) and each GPT's (or
    LSTM's, ...: `kinds` names each line's family, "GPT" when not given) as a
    dashed horizontal line named in the legend (labels on the plot collide), so "how many words of context does counting need to match
    the GPT?" can be read off."""
    traces = [
        go.Scatter(
            x=list(orders),
            y=list(values),
            mode="lines+markers",
            name=name,
            line=dict(color=MODEL_COLOURS.get(name, "#555"), width=2),
            hovertemplate=f"{name}, n = %{{x}}: %{{y:.3f}}<extra></extra>",
        )
        for name, values in series.items()
    ]
    fig = go.Figure(
        traces,
        layout=house_layout(
            title,
            height=SMALL_HEIGHT + 80,
            xaxis=dict(title="order n (n - 1 tokens of context)", dtick=1),
            yaxis=dict(title=y_title, rangemode="tozero"),
            legend=LEGEND_BELOW,
        ),
    )
    for i, (name, value) in enumerate(gpt_lines.items()):
        kind = (kinds or {}).get(name, "GPT")
        fig.add_trace(
            go.Scatter(
                x=[min(orders), max(orders)],
                y=[value, value],
                mode="lines",
                name=f"{kind} {plotly_text(name)}: {value:.2f}",
                line=dict(color=GPT_COLOURS[i % len(GPT_COLOURS)], dash="dash", width=2),
                hovertemplate=f"{kind} {plotly_text(name)}: {value:.3f}<extra></extra>",
            )
        )
    return fig


def sparsity_chart(shares: Sequence[float], unit: str) -> go.Figure:
    """Bars: the share (%) of validation contexts of n = 1, 2, ... tokens never seen in training."""
    ns = list(range(1, len(shares) + 1))
    pct = [100 * s for s in shares]
    return go.Figure(
        go.Bar(
            x=ns,
            y=pct,
            marker_color=ACCENT,
            text=[f"{p:.0f}%" if p >= 1 else f"{p:.1f}%" for p in pct],
            textposition="outside",
            hovertemplate=f"%{{x}} {unit} of context: %{{y:.2f}}% never seen<extra></extra>",
        ),
        layout=house_layout(
            "Validation contexts never seen in training",
            height=SMALL_HEIGHT + 40,
            xaxis=dict(title=f"context length ({unit})", dtick=1),
            yaxis=dict(title="% of validation positions", range=[0, 110]),
        ),
    )


def estimate_bars(
    labels: Sequence[str],
    count_ratio: Sequence[float] | None,
    kneser_ney: Sequence[float],
    gpt: Sequence[float],
    title: str,
    model_label: str = "GPT",
) -> go.Figure:
    """Grouped horizontal bars per next token: the count ratio (absent when undefined), the
    Kneser-Ney estimate and the model's probability (a GPT's, or an LSTM's, ...: model_label)."""
    y = plotly_labels([f"“{show_whitespace(label)}”" for label in labels])
    rows = [("Kneser-Ney (smoothed counts)", kneser_ney, KN_COLOUR), (model_label, gpt, GPT_COLOUR)]
    if count_ratio is not None:
        rows.insert(0, ("count ratio", count_ratio, COUNT_COLOUR))
    traces = [
        go.Bar(
            y=y,
            x=list(values),
            name=name,
            orientation="h",
            marker_color=colour,
            hovertemplate=f"“%{{y}}”: {name} %{{x:.3f}}<extra></extra>",
        )
        for name, values, colour in rows
    ]
    return go.Figure(
        traces,
        layout=house_layout(
            title,
            height=max(SMALL_HEIGHT, 70 + 26 * len(labels) * len(rows) // 2),
            barmode="group",
            xaxis=dict(title="P(next token | context)", rangemode="tozero"),
            yaxis=dict(autorange="reversed", type="category", tickfont=dict(size=14)),
            legend=LEGEND_BELOW,
        ),
    )


def contribution_chart(labels: Sequence[str], log_p: np.ndarray, title: str) -> go.Figure:
    """Each token's log2 p (bars, down from 0) and the running log10 P(text so far) (a line, on
    its own axis): how a text's probability compounds, token by token. NaN = no prediction."""
    log_p = np.asarray(log_p, dtype=float)
    ok = ~np.isnan(log_p)
    x = plotly_labels(labels)
    running = np.where(ok, log_p, 0.0).cumsum() / math.log(10)
    traces = [
        go.Bar(
            x=x,
            y=np.where(ok, log_p / math.log(2), np.nan),
            name="log₂ p of the token (bits, down)",
            marker_color="#9ecae1",
            hovertemplate="%{x}: log₂ p = %{y:.2f}<extra></extra>",
        ),
        go.Scatter(
            x=x,
            y=running,
            name="log₁₀ P(text up to here)",
            mode="lines+markers",
            yaxis="y2",
            line=dict(color=ACCENT, width=2),
            marker=dict(size=4),
            hovertemplate="%{x}: P = 10^%{y:.2f}<extra></extra>",
        ),
    ]
    return go.Figure(
        traces,
        layout=house_layout(
            title,
            height=SMALL_HEIGHT + 60,
            xaxis=dict(type="category", tickfont=dict(size=TICK_FONT)),
            yaxis=dict(title="log₂ p (bits)"),
            yaxis2=dict(title="log₁₀ P(text)", overlaying="y", side="right", showgrid=False),
            legend=LEGEND_BELOW,
        ),
    )


# ---- HTML ---------------------------------------------------------------------------------------


def _mark(text: str, bg: str, bold: bool = False) -> str:
    weight = "font-weight:600;" if bold else ""
    return f'<span style="background:{bg};{weight}border-radius:3px">{html.escape(text)}</span>'


def _newlines(text: str) -> str:
    return text.replace("\n", "↵ ")


def snippets_html(snippets: Sequence) -> str:
    """Each occurrence as one line of monospace text: before, the context (yellow), the token that
    followed (green), after. Newlines shown as ↵ (and spaces as ␣ inside the marks), escaped."""
    rows = []
    for s in snippets:
        body = (
            html.escape(_newlines(s.before))
            + _mark(show_whitespace(s.match), MATCH_BG)
            + _mark(show_whitespace(s.after), NEXT_BG, bold=True)
            + html.escape(_newlines(s.rest))
        )
        where = html.escape(f"token {s.position:,} ({s.split})")
        rows.append(
            '<div style="font-family:ui-monospace,Menlo,Consolas,monospace;font-size:14px;'
            "white-space:pre-wrap;word-break:break-all;margin:4px 0;padding:4px 6px;"
            f'border-left:3px solid #ccc" title="{where}">{body}</div>'
        )
    return "".join(rows)


def span_chips(pieces: Sequence[str], covered: Sequence[bool], first_generated: int) -> str:
    """The text as chips: tokens inside a memorised span yellow, the rest plain; generated tokens
    underlined in blue (the prompt is not)."""
    chips = []
    for i, (piece, hit) in enumerate(zip(pieces, covered, strict=True)):
        bg = MATCH_BG if hit else NO_VALUE_COLOUR
        gen = i >= first_generated
        tip = (
            f"token {i}: " + ("generated" if gen else "prompt") + (", in the corpus" if hit else "")
        )
        chips.append(_chip(piece, bg, "#000000", tip, GENERATED_OUTLINE if gen else ""))
    legend = (
        '<div style="font-size:13px;color:#444;margin-top:6px">'
        f"{_mark('yellow', MATCH_BG)}: inside a stretch found verbatim in the corpus · "
        "blue underline: generated (the rest is the prompt)</div>"
    )
    return f'<div class="chips" style="line-height:2">{_words(pieces, chips)}</div>{legend}'
