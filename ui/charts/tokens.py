"""Pictures of tokenization: the text as coloured token chips (HTML), and vocabulary size against
the number of tokens a corpus needs.

The chips are HTML, drawn by the page with `st.html`; every piece of text in them is escaped here.
"""

from __future__ import annotations

import html
from collections.abc import Collection, Sequence

import plotly.graph_objects as go

from ui.charts.common import ACCENT, SMALL_HEIGHT, base_layout, show_whitespace

# Pastel backgrounds, cycled by position so neighbouring tokens always differ.
CHIP_COLOURS = ("#dbeafe", "#fde68a", "#bbf7d0", "#fbcfe8", "#ddd6fe", "#fed7aa", "#a5f3fc")
_CHIP = (
    "display:inline-block;margin:2px 1px;padding:1px 4px;border-radius:4px;"
    "font-family:ui-monospace,Menlo,Consolas,monospace;font-size:15px;line-height:1.6;"
    "white-space:pre;color:#111;background:{bg};{extra}"
)
_UNK = "outline:2px solid " + ACCENT + ";"
_MARKED = "outline:3px solid #111;font-weight:700;"
# A special token (<|user|>, <|endoftext|>): one id standing for no text of the corpus.
_SPECIAL = "outline:2px dashed #6d28d9;color:#4c1d95;font-weight:700;"


def chip_title(token_id: int | None, text: str) -> str:
    """The hover text of a chip: its id and its text with whitespace made visible."""
    shown = show_whitespace(text)
    return f"{shown!r}" if token_id is None else f"id {token_id}: {shown!r}"


def token_chips_html(
    tokens: Sequence[tuple[int | None, str]],
    unk_id: int | None = None,
    empty: str = "(no tokens)",
    marked: Collection[int] = (),
    special: Collection[int] = (),
) -> str:
    """One coloured chip per (id, text) token, id and text on hover (the title attribute).

    Whitespace is made visible (space ␣, newline ↵, tab ⇥) and a newline also breaks the line;
    the tokenizer's unknown token gets a red outline, the ids in `special` (a chat template's
    <|user|>, GPT-2's <|endoftext|>) a dashed purple one and bold text, and the positions in
    `marked` a thick black one (e.g. the two swapped tokens). All text is HTML-escaped.
    """
    if not tokens:
        return f'<div style="color:#666;font-style:italic">{html.escape(empty)}</div>'
    chips = []
    for n, (token_id, text) in enumerate(tokens):
        style = _CHIP.format(
            bg=CHIP_COLOURS[n % len(CHIP_COLOURS)],
            extra=(_UNK if unk_id is not None and token_id == unk_id else "")
            + (_SPECIAL if token_id in special and token_id != unk_id else "")
            + (_MARKED if n in marked else ""),
        )
        title = chip_title(token_id, text)
        title = html.escape(title + (", special" if token_id in special else ""), quote=True)
        body = html.escape(show_whitespace(text))
        chips.append(f'<span style="{style}" title="{title}">{body}</span>')
        if text.endswith("\n"):
            chips.append("<br>")
    return '<div style="line-height:2.0">' + "".join(chips) + "</div>"


def vocab_curve_chart(
    vocab_sizes: Sequence[int],
    token_counts: Sequence[int],
    n_chars: int,
    current: int | None = None,
) -> go.Figure:
    """Tokens needed for a corpus against the BPE vocabulary size, with characters per token
    on hover; the current vocabulary size marked."""
    per = [n_chars / t if t else 0 for t in token_counts]
    fig = go.Figure(
        go.Scatter(
            x=list(vocab_sizes),
            y=list(token_counts),
            mode="lines+markers",
            customdata=per,
            hovertemplate="vocabulary %{x}<br>%{y:,} tokens<br>%{customdata:.2f} characters per "
            "token<extra></extra>",
            name="tokens",
        )
    )
    if current is not None and current in vocab_sizes:
        i = list(vocab_sizes).index(current)
        fig.add_trace(
            go.Scatter(
                x=[current],
                y=[token_counts[i]],
                mode="markers",
                marker=dict(size=13, color=ACCENT),
                name="chosen size",
                hoverinfo="skip",
            )
        )
    fig.update_xaxes(
        title="vocabulary size (tokens the BPE knows)",
        type="log",
        tickvals=list(vocab_sizes),
        ticktext=[str(v) for v in vocab_sizes],
    )
    fig.update_yaxes(title="tokens to write the text", rangemode="tozero")
    fig.update_layout(showlegend=False)
    return base_layout(
        fig, "A bigger vocabulary writes the same text in fewer tokens", SMALL_HEIGHT + 60
    )
