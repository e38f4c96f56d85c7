"""Figures of the next-token pages: the distribution as bars (cut tokens greyed), token chips
coloured by surprisal or by probability (escaped HTML), the newest token's attention per layer,
and each position's -ln p(next) against the loss and the blind guess (`nll_bars`).

Arrays and labels in, a plotly figure or an HTML string out; never streamlit.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from ui.charts.common import (
    ACCENT,
    COLUMN_TICKS_MAX_T,
    CUT_COLOUR,
    HEIGHT,
    SEQUENTIAL,
    SMALL_HEIGHT,
    colorbar_below,
    every_tick,
    house_layout,
    plotly_labels,
    plotly_text,
    show_whitespace,
)

BEFORE_CUT_COLOUR = "#59a14f"  # softmax(z / T), kept tokens, before renormalising: green, since a
# pale blue beside the dark blue washed out to one hue on a projector
AFTER_CUT_COLOUR = "#1f5fa8"  # renormalised: what the sampler actually draws from
SURPRISAL_SCALE = "Reds"  # low surprisal pale, high surprisal dark red
CHOSEN_SCALE = "RdYlGn"  # probability a generated token had when chosen: red unlikely, green likely
NO_VALUE_COLOUR = "#f0f0f0"
CUT_LABEL_COLOUR = "#a0a0a0"  # tokens with no value (the first token has no surprisal)
PLOT_PX = 500  # a full-width plot's width on a 1024 px page (the narrowest we design for)
BAR_LINE = dict(color="white", width=0.5)  # what plotly_white gives bars
# The legend at the foot of the figure, under the axis title: above the plot it wraps to two rows
# on a 1024 px page and runs into the title. Plotly makes room for it below (a container y).
LEGEND_BELOW = dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0, xanchor="left")


def distinct_labels(labels: Sequence[str]) -> list[str]:
    """Readable labels (whitespace shown) that stay distinct: a repeat gets its index appended.

    >>> distinct_labels(["a", " b", "a"])
    ['a', '␣b', 'a (2)']
    """
    out, seen = [], set()
    for i, label in enumerate(labels):
        shown = show_whitespace(label)
        out.append(shown if shown not in seen else f"{shown} ({i})")
        seen.add(shown)
    return out


def distribution_bars(
    labels: Sequence[str],
    base_probs: np.ndarray,
    scaled_probs: np.ndarray,
    probs: np.ndarray,
    kept: np.ndarray,
    title: str = "",
    log_y: bool = False,
) -> go.Figure:
    """Grouped bars per token: p after temperature (greyed when cut) beside the renormalised p
    the sampler uses, with the model's own p (temperature 1, no cut) as a tick mark."""
    x = distinct_labels(labels)
    kept = np.asarray(kept, dtype=bool)
    before_colours = [BEFORE_CUT_COLOUR if k else CUT_COLOUR for k in kept]
    status = ["kept" if k else "cut" for k in kept]
    # Plain dicts, already as plotly's validation leaves them: it cost ~4 ms on every run of
    # Next token and Generation (a temperature or top-k move, a step).
    traces = [
        dict(
            type="bar",
            name="after temperature, before the cut",
            x=x,
            y=np.asarray(scaled_probs, dtype=float).tolist(),
            marker=dict(color=before_colours, line=BAR_LINE),
            customdata=status,
            hovertemplate="%{x}: %{y:.3f} (%{customdata})<extra>before the cut</extra>",
        ),
        dict(
            type="bar",
            name="renormalised: what is sampled",
            x=x,
            y=np.asarray(probs, dtype=float).tolist(),
            marker=dict(color=AFTER_CUT_COLOUR, line=BAR_LINE),
            hovertemplate="%{x}: %{y:.3f}<extra>renormalised</extra>",
        ),
        dict(
            type="scatter",
            name="the model's own p (T = 1, no cut)",
            x=x,
            y=np.asarray(base_probs, dtype=float).tolist(),
            mode="markers",
            marker=dict(symbol="line-ew", size=18, line=dict(width=3, color=ACCENT)),
            hovertemplate="%{x}: %{y:.3f}<extra>T = 1</extra>",
        ),
    ]
    if (~kept).any():  # a legend entry for the grey bars (a scatter takes no bar slot)
        traces.append(
            dict(
                type="scatter",
                name="cut by top-k / top-p",
                x=[None],
                y=[None],
                mode="markers",
                marker=dict(symbol="square", size=12, color=CUT_COLOUR),
            )
        )
    top = max(float(np.max(scaled_probs)), float(np.max(probs)), float(np.max(base_probs)))
    if log_y:
        values = np.concatenate([np.ravel(a) for a in (scaled_probs, probs, base_probs)])
        low = float(values[values > 0].min()) if (values > 0).any() else 1e-4
        lo = max(-8.0, np.floor(np.log10(low)))
        yaxis = dict(
            title=dict(text="probability (log scale)"),
            type="log",
            range=[lo, 0.05],
            dtick=1,
            tickformat="~g",
        )
    else:
        yaxis = dict(title=dict(text="probability"), range=[0, min(1.0, top * 1.12) or 1.0])
    # cut tokens' labels are greyed too, so a cut is visible even where the bar is tiny
    ticktext = [
        plotly_text(label)
        if k
        else f"<span style='color:{CUT_LABEL_COLOUR}'>{plotly_text(label)}</span>"
        for label, k in zip(x, kept, strict=True)
    ]
    short = max(len(label) for label in x) <= 3
    layout = house_layout(
        title,
        HEIGHT,
        margin=dict(l=10, r=10, t=50, b=10),
        barmode="group",
        bargap=0.25,
        yaxis=yaxis,
        xaxis=dict(
            title=dict(text="next token (grey label: cut)" if (~kept).any() else "next token"),
            type="category",
            tickvals=x,
            ticktext=ticktext,
            tickangle=0 if _fits_flat(x, short) else -45,
            tickfont=dict(size=15 if short else 12, family="ui-monospace, Menlo, monospace"),
        ),
        legend=LEGEND_BELOW,
    )
    return go.Figure(dict(data=traces, layout=layout), _validate=False)


def _fits_flat(labels: Sequence[str], short: bool, width_px: float = PLOT_PX) -> bool:
    """Whether the labels fit side by side, unrotated, on a plot about width_px wide (monospace
    ticks: ~9 px a character at the large size used for short labels, ~7.5 px otherwise)."""
    char_px = 9.0 if short else 7.5
    return max(len(label) for label in labels) * char_px + 6 <= width_px / len(labels)


HIT_COLOUR = "#1b7f3b"  # the model's top token was the next token (accuracy counts it)
MISS_COLOUR = "#9ecae1"  # it was not
BLIND_COLOUR = "#7f7f7f"  # the blind guess's line, ln V


def nll_bars(
    labels: Sequence[str],
    nll: np.ndarray,
    hits: np.ndarray,
    loss: float,
    blind: float,
    title: str,
) -> go.Figure:
    """-ln p(next) at each position as bars (green where the model's top token was the next
    token, pale blue where not), with the text's mean (the loss, red dashed) and the blind guess
    ln V (grey dotted) as lines; p(next) on hover. Labels name the token that came next."""
    nll, hits = np.asarray(nll, dtype=float), np.asarray(hits, dtype=float)
    x = plotly_labels(labels)
    p = np.exp(-nll)
    bars = [
        go.Bar(
            x=[x[i] for i in idx],
            y=nll[idx],
            customdata=p[idx],
            name=name,
            marker=dict(color=colour, line=BAR_LINE),
            hovertemplate="%{x}: p(next) = %{customdata:.3f}, −ln p = %{y:.2f} nats<extra></extra>",
        )
        for name, colour, idx in (
            ("top token was the next token", HIT_COLOUR, np.flatnonzero(hits > 0.5)),
            ("it was not", MISS_COLOUR, np.flatnonzero(hits <= 0.5)),
        )
        if idx.size
    ]
    lines = [
        go.Scatter(
            x=[x[0], x[-1]] if x else [],
            y=[value, value],
            mode="lines",
            name=f"{name} {value:.2f}",
            line=dict(color=colour, width=2, dash=dash),
            hoverinfo="skip",
        )
        for name, value, colour, dash in (
            ("mean = the loss", loss, ACCENT, "dash"),
            ("blind guess ln V", blind, BLIND_COLOUR, "dot"),
        )
    ]
    return go.Figure(
        [*bars, *lines],
        layout=house_layout(
            title,
            height=SMALL_HEIGHT + 80,
            xaxis=dict(
                type="category",
                categoryorder="array",
                categoryarray=x,
                **every_tick(x, COLUMN_TICKS_MAX_T),
            ),
            yaxis=dict(title="−ln p(next) (nats)", rangemode="tozero"),
            legend=LEGEND_BELOW,
            bargap=0.15,
            barmode="overlay",  # the two colours' bars sit at different positions, never side by side
        ),
    )


def layer_attention_heatmap(
    weights: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str], title: str = ""
) -> go.Figure:
    """Heatmap rows (layers, or layer.head) x key positions of the newest token's attention.

    Every key is labelled up to COLUMN_TICKS_MAX_T keys (what fits across a page column at the
    shared 12 px token-axis font); past that, every n-th, and the hover names each key.
    The colour bar lies at the foot, so the keys get the whole width of a 1024 px column."""
    weights = np.asarray(weights, dtype=float)
    cols = plotly_labels(col_labels)  # the student's tokens, for ticks and hover alike
    every = max(1, math.ceil(len(cols) / COLUMN_TICKS_MAX_T))
    shown = cols[::every]
    heatmap = go.Heatmap(
        z=weights.tolist(),
        x=cols,
        y=list(row_labels),
        colorscale=SEQUENTIAL,
        zmin=0,
        zmax=max(float(weights.max()), 1e-9),
        colorbar=colorbar_below("weight", ticks=""),  # below: 60 keys need the whole width
        hovertemplate="%{y} -> %{x}: %{z:.3f}<extra></extra>",
    )
    ticks = every_tick(shown)
    layout = house_layout(
        title,
        max(SMALL_HEIGHT, 60 + 28 * len(row_labels)) + 50,  # + the colour bar below
        xaxis=dict(
            title="earlier token (key)"
            + (f" (one label every {every} tokens)" if every > 1 else ""),
            type="category",
            tickangle=-90 if len(cols) > 20 else -45,
            **ticks,
        ),
        yaxis=dict(title="", type="category", autorange="reversed"),
    )
    return go.Figure(data=[heatmap], layout=layout)


# ---- token chips (HTML) ----------------------------------------------------------------------


def _colour(scale: str, t: float) -> tuple[str, str]:
    """Background colour at t in [0, 1] on a plotly scale, and a readable text colour on it."""
    # rounded to 1/200 and remembered: plotly's sampler is slow and a history has 100s of chips
    return _colour_at(scale, round(min(1.0, max(0.0, float(t))) * 200))


@lru_cache(maxsize=1024)
def _colour_at(scale: str, step: int) -> tuple[str, str]:
    rgb = sample_colorscale(scale, [step / 200], colortype="tuple")[0]
    r, g, b = (float(c) if c <= 1 else float(c) / 255 for c in rgb)
    luminance = 0.299 * r + 0.587 * g + 0.114 * b
    bg = "#" + "".join(f"{round(c * 255):02x}" for c in (r, g, b))
    return bg, ("#000000" if luminance > 0.55 else "#ffffff")


def _chip(text: str, bg: str, fg: str, tip: str, extra: str = "") -> str:
    shown = html.escape(show_whitespace(text))
    tip = html.escape(tip, quote=True)
    style = (
        f"background:{bg};color:{fg};padding:2px 5px;margin:2px 1px;border-radius:4px;"
        f"font-family:ui-monospace,Menlo,Consolas,monospace;font-size:15px;white-space:pre;"
        f"display:inline-block;line-height:1.5;{extra}"
    )
    chip = f'<span class="chip" title="{tip}" style="{style}">{shown}</span>'
    return chip + ("<br>" if "\n" in text else "")  # keep the text's line breaks


def _words(pieces: Sequence[str], chips: Sequence[str]) -> str:
    """The chips joined, each word's chips kept on one line (a line breaks only between words,
    never inside "breaks"). A word ends where a piece ends in whitespace or the next starts so."""
    out, word, prev = [], [], ""
    for piece, chip in zip(pieces, chips, strict=True):
        if word and (piece[:1].isspace() or prev[-1:].isspace()):
            out.append(f'<span style="white-space:nowrap">{"".join(word)}</span>')
            word = []
        word.append(chip)
        prev = piece
    if word:
        out.append(f'<span style="white-space:nowrap">{"".join(word)}</span>')
    return "".join(out)


def _legend(scale: str, low: str, high: str, note: str = "") -> str:
    stops = ", ".join(_colour(scale, t / 4)[0] for t in range(5))
    bar = (
        f'<span style="display:inline-block;width:180px;height:12px;border-radius:3px;'
        f'background:linear-gradient(to right, {stops});vertical-align:middle;margin:0 6px"></span>'
    )
    return (
        f'<div class="legend" style="font-size:13px;color:#444;margin-top:8px">'
        f"{html.escape(low)}{bar}{html.escape(high)}"
        + (f'<span style="margin-left:16px">{html.escape(note)}</span>' if note else "")
        + "</div>"
    )


def surprisal_chips(pieces: Sequence[str], surprisal: np.ndarray, vmax: float | None = None) -> str:
    """The text as chips coloured by surprisal (nats; NaN = no prediction, for the first token)."""
    s = np.asarray(surprisal, dtype=float)
    finite = s[~np.isnan(s)]
    top = vmax if vmax is not None else (float(finite.max()) if finite.size else 1.0)
    top = max(top, 1e-9)
    chips = []
    for i, (piece, v) in enumerate(zip(pieces, s, strict=True)):
        if math.isnan(v):
            chips.append(_chip(piece, NO_VALUE_COLOUR, "#666666", f"token {i}: nothing before it"))
        else:
            bg, fg = _colour(SURPRISAL_SCALE, v / top)
            p = math.exp(-v)
            tip = f"token {i}: surprisal {v:.2f} nats = {v / math.log(2):.2f} bits (p = {p:.3f})"
            chips.append(_chip(piece, bg, fg, tip))
    legend = _legend(
        SURPRISAL_SCALE,
        "0 nats (expected)",
        f"{top:.1f} nats (surprising)",
        "grey: the first token has no prediction",
    )
    return f'<div class="chips" style="line-height:2">{_words(pieces, chips)}</div>{legend}'


def history_chips(
    prompt_pieces: Sequence[str],
    new_pieces: Sequence[str],
    probs: Sequence[float],
    forced: Sequence[bool],
) -> str:
    """The prompt (plain) then each generated token coloured by the probability it had when chosen;
    forced tokens carry a dashed outline and a hand mark."""
    chips = [_chip(p, NO_VALUE_COLOUR, "#555555", "prompt") for p in prompt_pieces]
    for i, (piece, p, f) in enumerate(zip(new_pieces, probs, forced, strict=True)):
        bg, fg = _colour(CHOSEN_SCALE, float(p))
        how = "forced by you" if f else "sampled"
        extra = "outline:2px dashed #000;outline-offset:1px;" if f else ""
        text = piece
        chip = _chip(text, bg, fg, f"step {i + 1}: p = {float(p):.3f}, {how}", extra)
        if f:
            chip = chip.replace(
                "</span>", '<sup style="font-size:11px;font-weight:bold">*</sup></span>', 1
            )
        chips.append(chip)
    legend = _legend(
        CHOSEN_SCALE, "p = 0", "p = 1", "grey: prompt · dashed outline and *: chosen by you"
    )
    pieces = [*prompt_pieces, *new_pieces]
    return f'<div class="chips" style="line-height:2">{_words(pieces, chips)}</div>{legend}'
