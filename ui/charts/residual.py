"""Residual stream figures: the norm of each token's residual at each station, the logit lens grid,
one position's prediction through the layers, and direct logit attribution as a waterfall and a
layer x head heatmap.

Arrays and labels in, plotly figures out. Stations (embed, after block 0, ...) run down the y axis
from the top, in the order the forward pass reaches them; token positions run across.
"""

from __future__ import annotations

import re

import numpy as np
import plotly.colors as pc
import plotly.graph_objects as go

from ui.charts.common import (
    ACCENT,
    DIVERGING,
    PROB_SCALE,
    SEQUENTIAL,
    SMALL_HEIGHT,
    TICK_FONT,
    base_layout,
    every_tick,
    plotly_labels,
    plotly_text,
    show_whitespace,
)

CELL_TEXT_MAX_T = 24  # write the top token in the lens cells up to this many positions
UP_COLOUR = "#b2182b"  # the red end of DIVERGING (reversed): pushes up
DOWN_COLOUR = "#2166ac"  # the blue end: pushes down
TOTAL_COLOUR = "#555555"


# The grid's plot area on a 1024 px projector (the column less the layer names and colour bar):
# cell text is cut to what fits there, at CHAR_PX a character (a wider screen shows the same).
CELL_TEXT_WIDTH = 360
CHAR_PX = 7  # a TICK_FONT (12 px) character
STATION_TICKS_MAX_T = 24  # every position labelled up to this many (~14 px a label at 1024 px)
SPECIAL = re.compile(r"^<\|?[A-Za-z_]{1,16}\|?>$")  # "<unk>", "<|endoftext|>": never cut
SHORT_SPECIAL = 5  # "<unk>": a special token this short is shown whole, even past its cell
DARK_TEXT, LIGHT_TEXT = "#111111", "#ffffff"


def _clip(text: str, n: int) -> str:
    """Cut a cell's token to n characters ('…' marks the cut; the hover shows it whole). A special
    token like <unk> is never cut mid-name ("<u…" would read as nothing): one that does not fit
    is abbreviated in angle quotes, "⟨a⟩" for <|assistant|>, so it stays in its own cell.

    >>> _clip("<unk>", 2), _clip("<|assistant|>", 3), _clip("<|end|>", 6), _clip("brother", 4)
    ('<unk>', '⟨a⟩', '⟨end⟩', 'bro…')
    >>> _clip("ight", 1), _clip("<|user|>", 1)
    ('i…', '⟨u⟩')
    """
    if len(text) <= max(n, SHORT_SPECIAL if SPECIAL.match(text) else 0):
        return text  # fits, or a special token short enough to stay whole (<unk>)
    if SPECIAL.match(text):
        name = text.strip("<|>")
        return f"⟨{name[: max(1, n - 2)]}⟩"
    return text[: max(n - 1, 1)] + "…"


def text_colour(values: np.ndarray, colorscale: str = PROB_SCALE) -> np.ndarray:
    """Dark or white text for each value's cell in `colorscale` (0..1), whichever contrasts more
    with the cell: dark on a light cell (the yellow end of Viridis), white on a dark one."""
    v = np.clip(np.nan_to_num(np.asarray(values, dtype=float)), 0, 1)
    rgb = pc.sample_colorscale(pc.get_colorscale(colorscale), v.ravel().tolist(), colortype="tuple")
    lum = np.array([_luminance(c) for c in rgb]).reshape(v.shape)
    # WCAG contrast against black (L + 0.05) / 0.05 beats white's 1.05 / (L + 0.05) above L ~0.18
    return np.where(lum > 0.18, DARK_TEXT, LIGHT_TEXT)


def _luminance(rgb: tuple[float, float, float]) -> float:
    """WCAG relative luminance of an (r, g, b) colour with channels in 0..1 (or 0..255)."""
    scale = 255.0 if max(rgb) > 1 else 1.0
    lin = [
        c / scale / 12.92 if c / scale <= 0.03928 else ((c / scale + 0.055) / 1.055) ** 2.4
        for c in rgb
    ]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _grid_height(n_rows: int) -> int:
    return max(SMALL_HEIGHT, 90 + 34 * n_rows)


def resid_norm_heatmap(
    norms: np.ndarray, stations: list[str], labels: list[str], title: str = ""
) -> go.Figure:
    """(n_stations, T) residual norms as a heatmap: stations down, token positions across."""
    labels = plotly_labels(labels)  # the student's tokens: never markup
    norms = np.asarray(norms, dtype=float)
    fig = go.Figure(
        go.Heatmap(
            z=norms,
            x=labels,
            y=stations,
            colorscale=SEQUENTIAL,
            zmin=0,
            colorbar=dict(title=dict(text="‖x‖", side="right")),
            hovertemplate="%{y}<br>token %{x}<br>norm %{z:.2f}<extra></extra>",
        )
    )
    return _station_grid_layout(fig, labels, stations, title)


def _station_grid_layout(fig: go.Figure, labels: list[str], stations: list[str], title: str):
    """Layers (stations) down, prompt tokens across: the shared axes of the norm and lens grids."""
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(
        type="category",
        tickangle=-90 if len(labels) > 20 else -60 if len(labels) > 12 else 0,
        title="token of your prompt (position:text)",
        **every_tick(labels, STATION_TICKS_MAX_T),
    )
    return base_layout(fig, title, _grid_height(len(stations)) + 30)


def logit_lens_grid(
    top_probs: np.ndarray,
    top_tokens: list[list[str]],
    stations: list[str],
    labels: list[str],
    next_tokens: list[str] | None = None,
    title: str = "",
) -> go.Figure:
    """The logit lens: each cell is the top token read out of that station at that position,
    coloured by its probability (0..1). `next_tokens[t]` (the prompt's real next token, if any)
    is shown on hover, and cells that guess it get a bold label."""
    labels = plotly_labels(labels)  # the student's tokens: never markup
    probs = np.asarray(top_probs, dtype=float)
    shown = [[show_whitespace(t) for t in row] for row in top_tokens]
    nxt = [show_whitespace(t) if t is not None else "—" for t in (next_tokens or [])]
    nxt += ["—"] * (len(labels) - len(nxt))
    hits = [
        [
            next_tokens is not None and t < len(next_tokens) and row[t] == next_tokens[t]
            for t in range(len(row))
        ]
        for row in top_tokens
    ]
    fit = max(1, CELL_TEXT_WIDTH // (CHAR_PX * max(1, len(labels))))  # characters a cell holds
    # Heatmap text takes one colour per trace, so each cell carries its own in a styled span.
    colours = text_colour(probs)
    cell = [
        [
            _cell_text(_clip(s, fit), hit, colour)
            for s, hit, colour in zip(srow, hrow, crow, strict=True)
        ]
        for srow, hrow, crow in zip(shown, hits, colours, strict=True)
    ]
    custom = np.array(
        [[[plotly_text(s), plotly_text(nxt[t])] for t, s in enumerate(row)] for row in shown],
        dtype=object,
    )
    text = (
        dict(text=cell, texttemplate="%{text}", textfont=dict(size=TICK_FONT))
        if len(labels) <= CELL_TEXT_MAX_T
        else {}
    )
    fig = go.Figure(
        go.Heatmap(
            z=probs,
            x=labels,
            y=stations,
            customdata=custom,
            colorscale=PROB_SCALE,
            zmin=0,
            zmax=1,
            colorbar=dict(title=dict(text="p(top)", side="right")),
            hovertemplate=(
                "%{y}, token %{x}<br>top guess: %{customdata[0]} (p = %{z:.3f})"
                "<br>actual next token: %{customdata[1]}<extra></extra>"
            ),
            **text,
        )
    )
    return _station_grid_layout(fig, labels, stations, title)


def _cell_text(text: str, bold: bool, colour: str) -> str:
    text = plotly_text(text)
    return f'<span style="color:{colour}">{f"<b>{text}</b>" if bold else text}</span>'


CROWDED_STATIONS = 7  # more points than this and whole top-guess labels run into each other


def prediction_through_layers(
    final_probs: np.ndarray,
    top_probs: np.ndarray,
    top_tokens: list[str],
    stations: list[str],
    final_token: str,
    title: str = "",
) -> go.Figure:
    """One position: p(the model's final prediction) at each station, and each station's own top guess."""
    fig = go.Figure()
    full = plotly_labels(show_whitespace(t) for t in top_tokens)
    text, where = full, "top center"
    if len(stations) > CROWDED_STATIONS:  # e.g. GPT-2's 13: labels above and below, in turn, cut
        text = [t if len(t) <= 8 else t[:7] + "…" for t in full]
        where = ["top center" if i % 2 else "bottom center" for i in range(len(full))]
    fig.add_trace(
        go.Scatter(
            x=stations,
            y=np.asarray(top_probs, dtype=float),
            mode="lines+markers+text",
            text=text,
            textposition=where,
            customdata=full,
            line=dict(color="#999", dash="dot"),
            name="this layer's own top guess",
            hovertemplate="%{x}: top guess %{customdata}, p = %{y:.3f}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=stations,
            y=np.asarray(final_probs, dtype=float),
            mode="lines+markers",
            line=dict(color=ACCENT, width=3),
            name=f"p(“{plotly_text(show_whitespace(final_token))}”), the final prediction",
            hovertemplate="%{x}: p = %{y:.3f}<extra></extra>",
        )
    )
    crowded = len(stations) > CROWDED_STATIONS  # room below 0 for the labels drawn under points
    ticks = [0, 0.2, 0.4, 0.6, 0.8, 1]
    fig.update_yaxes(range=[-0.15 if crowded else 0, 1.08], title="probability", tickvals=ticks)
    fig.update_layout(legend=dict(orientation="h", y=-0.25))
    return base_layout(fig, title, 340)


def attribution_waterfall(
    labels: list[str], values: np.ndarray, ln_bias: float, logit: float, title: str = ""
) -> go.Figure:
    """Direct logit attribution as a waterfall: each component's push, then the LN bias, then the
    logit they add up to."""
    values = [float(v) for v in values]
    x = list(labels) + ["LN bias", "logit"]
    y = values + [float(ln_bias), float(logit)]
    measure = ["relative"] * (len(values) + 1) + ["total"]
    fig = go.Figure(
        go.Waterfall(
            x=x,
            y=y,
            measure=measure,
            text=[f"{v:+.2f}" for v in y[:-1]] + [f"{logit:.2f}"],
            textposition="outside",
            increasing=dict(marker=dict(color=UP_COLOUR)),
            decreasing=dict(marker=dict(color=DOWN_COLOUR)),
            totals=dict(marker=dict(color=TOTAL_COLOUR)),
            connector=dict(line=dict(color="#bbb", width=1)),
            hovertemplate="%{x}: %{y:+.3f}<extra></extra>",
        )
    )
    fig.update_yaxes(title="contribution to the logit", zeroline=True, zerolinecolor="#888")
    fig.update_xaxes(type="category")
    return base_layout(fig, title, 400)


def head_attribution_heatmap(head_values: np.ndarray, title: str = "") -> go.Figure:
    """(n_layer, n_head) each head's push on the logit: red up, blue down, centred on 0."""
    v = np.asarray(head_values, dtype=float)
    bound = float(np.abs(v).max()) or 1.0
    L, H = v.shape
    fig = go.Figure(
        go.Heatmap(
            z=v,
            x=[f"head {h}" for h in range(H)],
            y=[f"layer {i}" for i in range(L)],
            colorscale=DIVERGING,
            reversescale=True,
            zmid=0,
            zmin=-bound,
            zmax=bound,
            texttemplate="%{z:+.2f}",
            textfont=dict(size=TICK_FONT),
            colorbar=dict(title="push"),
            hovertemplate="%{y}, %{x}: %{z:+.3f}<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed")
    return base_layout(fig, title, max(SMALL_HEIGHT - 40, 90 + 40 * L))
