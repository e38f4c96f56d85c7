"""The Attention page's first sections: the idea and its formula, the choices every later section
reads (layer, head, query token, pattern or scores), and the chosen head's pattern heatmap beside
the lines of who looks at whom."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from ui import present, state
from ui.attention.runs import head_lines, head_outlined
from ui.charts.attention import lines_window
from ui.frame import PageContext

SIDE_BY_SIDE_MAX_T = 12  # longer prompts stack the heatmap and the lines chart


@dataclass(frozen=True)
class View:
    """What the page's controls chose: one head, one query row, pattern or scores."""

    layer: int
    head: int
    query: int
    view: str  # "pattern" or "scores"

    @property
    def name(self) -> str:
        return f"L{self.layer} H{self.head}"


def intro(ctx: PageContext) -> None:
    """What attention is, in this model's terms (masked or not), its formula and its sizes."""
    cfg = ctx.config
    # What this model's queries read (GPTConfig.causal): a GPT's causal mask hides later tokens.
    reads, compared, scaled = (
        (
            "the tokens before it",
            "its own key and every earlier token's",
            "scaled, the future is **masked** (a token may not look ahead, so those scores become −∞), ",
        )
        if cfg.causal
        else (
            "every token of the text, later ones too (this model has no causal mask)",
            "every token's key, later ones included,",
            "scaled (a GPT would now **mask** the future, setting those scores to −∞; this model "
            "does not), ",
        )
    )
    st.markdown(
        f"In a GPT, attention is how a token gathers information from other tokens; here, from "
        f"{reads}. Each **head** "
        "turns every token into three vectors: a **query** *q* (what am I looking for?), a **key** "
        "*k* (what do I contain?) and a **value** *v* (what do I pass on if I am looked at). A "
        f"token's query is compared with {compared} by a dot product; the results are {scaled}"
        "and a **softmax** turns each row into weights that are positive and sum to 1: the "
        "**attention pattern**. The head then outputs the weighted sum of the values, *z*, and "
        "writes *z W_O* into the residual stream, the running sum every layer reads and adds to."
    )
    if not cfg.causal:
        st.warning(
            "**This model has no causal mask** (`causal = False`): every token's query is compared "
            "with every key, later tokens included, and nothing is set to −∞. It was trained that "
            "way to show why GPTs mask: a token that can read the next token can copy the answer "
            "instead of predicting it. Below, no cell is grey: weight on a later token is real."
        )
    # Two short lines, not one long one: the main column is ~700 px on a 1024 px projector.
    st.latex(
        r"\begin{gathered}\text{pattern} = \operatorname{softmax}\!\left("
        r"\frac{q\,k^\top}{\sqrt{d_\text{head}}}"
        + (r" + \text{mask}" if cfg.causal else "")
        + r"\right)\\"
        r"z = \text{pattern}\; v,\qquad \text{result} = z\,W_O\end{gathered}"
    )
    st.caption(
        f"d_head = {cfg.d_head}: the length of each head's q, k and v "
        f"(d_model {cfg.d_model} split over {cfg.n_head} heads). "
        f"This model has {cfg.n_layer} layers of {cfg.n_head} heads; the prompt is {len(ctx.ids)} tokens."
    )


def choices(ctx: PageContext) -> View:
    """The row of controls: layer, head, query token and pattern or scores (in the URL)."""
    cfg, labels, T = ctx.config, ctx.labels, len(ctx.ids)
    c1, c2, c3, c4 = st.columns([1, 1, 1.4, 1.2])
    layer = state.slider("Layer", "layer", 0, cfg.n_layer - 1, default=0, container=c1)
    head = state.slider("Head", "head", 0, cfg.n_head - 1, default=0, container=c2)
    query = state.selectbox(
        "Query token (for the arithmetic)",
        "query",
        list(range(T)),
        default=T - 1,
        container=c3,
        format_func=lambda i: labels[i],
        help="The token whose row of the pattern is worked out by hand below.",
    )
    view = state.radio(
        "Show",
        "view",
        ["pattern", "scores"],
        default="pattern",
        container=c4,
        horizontal=True,
        help="pattern: the weights after softmax. scores: q·k/√d_head before softmax.",
    )
    if cfg.n_layer == 1:
        c1.caption("Layer 0 (the only layer)")
    if cfg.n_head == 1:
        c2.caption("Head 0 (the only head)")
    return View(layer, head, query, view)


def one_head(ctx: PageContext, v: View) -> None:
    """The chosen head's pattern (or scores) with the query's row outlined, and its lines."""
    cfg, T = ctx.config, len(ctx.ids)
    ids, label_key = tuple(ctx.ids), tuple(ctx.labels)
    # A longer prompt gets the whole column for the heatmap (the lines chart goes below it): beside
    # the lines, on a 1024 px projector, 15 tokens left ~10 px a cell and 60 tokens ~3 px.
    left, right = (
        st.columns([3, 2]) if T <= SIDE_BY_SIDE_MAX_T else (st.container(), st.container())
    )
    with left:
        if v.view == "scores":
            st.subheader(f"{v.name}: scores before softmax")
            st.caption(
                "Each cell is q·k/√d_head. Red is a high score (the query matches that key), blue "
                "a low one. "
                + (
                    "Grey cells are masked: their score becomes −∞, so after softmax they get "
                    "weight exactly 0."
                    if cfg.causal
                    else "No cell is masked: this model has no causal mask."
                )
            )
        else:
            st.subheader(f"{v.name}: attention pattern")
            st.caption(
                "Row = the token doing the looking (query), column = the token looked at (key). "
                "Each row sums to 1. "
                + (
                    "Grey cells are masked (later tokens), not zero attention. "
                    if cfg.causal
                    else "No cell is masked: cells right of the diagonal are weight on later "
                    "tokens. "
                )
                + "The red outline is the query token chosen above."
            )
        outlined = head_outlined(
            ctx.bundle_id, ids, label_key, v.layer, v.head, v.view == "scores", v.query
        )
        present.plot(outlined, key="attn_heatmap")
    with right:
        st.subheader("Who looks at whom")
        st.caption(
            "A line from each token (left) to each token it attends to (right); thicker and "
            "darker means more weight. The chosen query's lines are red. Weights under 0.02 are "
            "not drawn." + _window_note(T, v.query)
        )
        present.plot(
            head_lines(ctx.bundle_id, ids, label_key, v.layer, v.head, v.query), key="attn_lines"
        )


def _window_note(T: int, query: int) -> str:
    """What the lines chart leaves out when the prompt is longer than it can draw readably."""
    first, end = lines_window(T, query)
    if end - first == T:
        return ""
    return (
        f" {T} tokens of lines would be a tangle nobody can read: this shows positions {first} "
        f"to {end - 1} ({end - first} tokens, ending at the chosen query where it can) and the "
        "lines between them. Pick another query to move the window."
    )
