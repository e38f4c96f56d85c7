"""The Embeddings & positions page's sections, one function each, drawn in order by
pages/02_embeddings.py: the idea and the formula (`intro`), the token embeddings in 2D with a
token's nearest neighbours (`token_embeddings`), the position tables beside the sinusoidal formula
(`position_embeddings`), the swap exercise's two tokens (`swap_pair`) and what the swap changes
with and without positions (`swap_outputs`), and the numbers behind it (`numbers_behind_it`).

The cached calls and figures come first: the PCA, the labels and the position tables are the
model's (`@cache.per_model`), a token's neighbours and a swap's runs depend on what is picked
(`@cache.per_prompt`).

Not here: the measures and claims (viz_model/analysis/embeddings.py), the chart builders
(ui/charts/embeddings.py, the chips in ui/charts/tokens.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from ui import cache, parts, present, state
from ui.charts.common import frozen, show_whitespace
from ui.charts.embeddings import pca_scatter, position_heatmap, similarity_heatmap, swap_chart
from ui.charts.tokens import token_chips_html
from ui.frame import PageContext
from viz_model.analysis import embeddings as emb
from viz_model.analysis.tokens import token_text
from viz_model.model.gpt import sinusoidal_positions
from viz_model.model.scale import MAX_SCATTER_TOKENS

N_NEIGHBOURS = 10
# How each `cfg.pos` gives positions, as the caption of the position tables says it.
POSITION_KINDS = {
    "learned": "learned",
    "sinusoidal": "sinusoidal (the formula)",
    "none": "none: it gets no position vectors at all",
    "rope": "rotary (RoPE), inside attention: no position vectors",
    "alibi": "ALiBi, inside attention: no position vectors",
}

# The swap's runs: "off" (positions zeroed, layer 0), "on" (positions added; a model that adds
# them) and "off_layer1" (positions zeroed, layer 1; a model with two layers or more).
SwapRuns = dict[str, emb.SwapResult]


# ---- cached results (per model, or per pick) ----------------------------------------------------


@cache.per_model
def token_pca(bundle_id: str) -> emb.PCAResult:
    return emb.pca(cache.bundle(bundle_id).model.W_E.detach(), k=2)


@cache.per_model
def vocab_labels(bundle_id: str) -> list[str]:
    """Every vocabulary entry as the chips show it (token_text: "<c3>" for part of a character)."""
    tokenizer = cache.bundle(bundle_id).tokenizer
    return [token_text(tokenizer, i) for i in range(tokenizer.vocab_size)]


@cache.per_prompt
def embedding_row(bundle_id: str, token: int) -> np.ndarray:
    return cache.bundle(bundle_id).model.W_E[token].detach().numpy()


@cache.per_prompt
def neighbours(bundle_id: str, token: int) -> emb.Neighbours:
    return emb.nearest_neighbours(cache.bundle(bundle_id).model.W_E.detach(), token, N_NEIGHBOURS)


@cache.per_prompt
def neighbours_note(bundle_id: str, token: int, label: str) -> str:
    weights = cache.bundle(bundle_id).model.W_E.detach()
    return emb.neighbours_claim(weights, token, label, N_NEIGHBOURS).text


@cache.per_model
def positions(bundle_id: str) -> tuple[np.ndarray | None, np.ndarray | None]:
    table = emb.position_table(cache.bundle(bundle_id).model)
    return table, None if table is None else emb.cosine_matrix(table)


@cache.per_prompt
def swap_runs(bundle_id: str, ids: tuple[int, ...], i: int, j: int) -> SwapRuns:
    model = cache.bundle(bundle_id).model
    layers = (0, 1) if model.cfg.n_layer > 1 else (0,)
    off = emb.swap_experiments(model, list(ids), i, j, positions=False, layers=layers)
    runs = {"off": off[0]}
    if model.cfg.adds_positions:
        runs["on"] = emb.swap_experiments(model, list(ids), i, j, positions=True)[0]
    if 1 in off:
        runs["off_layer1"] = off[1]
    return runs


# Figures are cached as frozen objects (never mutated, only drawn), keyed by the arguments they are
# built from: building a plotly figure costs more than drawing it, and most of this page's pictures
# depend only on the model. Frozen (ui/charts/common.FrozenFigure), st.plotly_chart does not turn
# them into a dict again on every run: about 2 ms a figure, 7 figures a run for every student.


@cache.per_prompt
def token_figure(bundle_id: str, token: int) -> go.Figure:
    result = token_pca(bundle_id)
    near = neighbours(bundle_id, token)
    return frozen(
        pca_scatter(
            result.projected,
            vocab_labels(bundle_id),
            result.explained,
            token,
            list(near.ids),
            max_points=MAX_SCATTER_TOKENS,
        )
    )


@cache.per_model
def position_figures(bundle_id: str, pos: str) -> tuple[go.Figure, go.Figure] | None:
    table, sim = positions(bundle_id)
    if table is None:
        return None
    return (
        # titles short enough for half a 1024 px column
        frozen(position_heatmap(table, f"This model's P ({pos})")),
        frozen(similarity_heatmap(sim, "Cosine similarity of positions")),
    )


@cache.per_model(keep=32)
def sinusoid_figures(n_ctx: int, d_model: int) -> tuple[go.Figure, go.Figure]:
    sinus = sinusoidal_positions(n_ctx, d_model).numpy()
    return (
        frozen(position_heatmap(sinus, "Sinusoidal P (the formula)", zmax=1.0)),
        frozen(similarity_heatmap(emb.cosine_matrix(sinus), "Cosine similarity of positions")),
    )


@cache.per_prompt
def swap_figures(bundle_id: str, ids: tuple[int, ...], i: int, j: int) -> list[go.Figure]:
    runs = swap_runs(bundle_id, ids, i, j)
    off, on = runs["off"], runs.get("on")
    ymax = max(r.max_diff for r in (off, on) if r is not None) or None
    figs = [frozen(swap_chart(off.original, off.swapped, "Positions zeroed", ymax))]
    if on is not None:
        figs.append(frozen(swap_chart(on.original, on.swapped, "Positions on", ymax)))
    return figs


# ---- the sections -------------------------------------------------------------------------------


def intro(ctx: PageContext) -> None:
    """W_E and P in words, whether the model ties W_U to W_E, and x_t = W_E[id_t] + P[t]."""
    cfg = ctx.config
    st.markdown(
        "The model's first step turns each token id into a vector: row *id* of the **embedding "
        f"matrix** W_E, a table with one row of d_model = {cfg.d_model} learned numbers per token "
        f"of the vocabulary ({cfg.vocab_size:,} rows here). Training tends to give tokens used in "
        "similar ways similar vectors (the neighbours below show how far this model got). "
        "Attention by itself does not know where a token stands in the text, so a second vector "
        "that depends only on the **position** *t* is added to it. That sum is what the first "
        "layer reads (the start of the **residual stream**)."
        + (
            " This model **ties** its unembedding to this matrix (W_U = W_Eᵀ): the same vectors "
            "also score every token as the next one."
            if cfg.tie_embeddings
            else ""
        )
    )
    st.latex(r"x_t = W_E[\,\text{id}_t\,] + P[\,t\,]")


def token_embeddings(ctx: PageContext) -> int:
    """Every token's vector along its two main directions (PCA), the chosen token's nearest
    neighbours by cosine similarity beside it, and what they say (its claim). Returns the token."""
    cfg = ctx.config
    st.subheader("Token embeddings in 2D")
    st.markdown(
        f"Each token is a point in {cfg.d_model} dimensions, too many to draw. **PCA** (principal "
        "component analysis) finds the two directions along which the token vectors spread out the "
        "most, and the picture shows every token's coordinates along them. Nearness in the picture "
        "is a hint, not proof: the table on the right measures it in all dimensions, by **cosine "
        "similarity** (1 = pointing the same way, 0 = unrelated, −1 = opposite)."
    )
    st.latex(r"\cos(a, b) = \frac{a \cdot b}{\lVert a\rVert\,\lVert b\rVert}")
    labels = vocab_labels(ctx.bundle_id)
    token = state.selectbox(
        "Token to find neighbours for",
        "token",
        list(range(cfg.vocab_size)),
        default=ctx.ids[-1] if ctx.ids else 0,
        format_func=lambda i: f"{show_whitespace(labels[i])}  (id {i})",
        help="Type to search. The default is the last token of your prompt.",
    )
    left, right = st.columns([3, 2], gap="large")
    with left:
        present.plot(token_figure(ctx.bundle_id, token), width="stretch")
    with right:
        neighbour_table(ctx, labels, token)
    shown_token = show_whitespace(labels[token]).replace("`", "ˋ")
    st.markdown(neighbours_note(ctx.bundle_id, token, shown_token))
    explained = token_pca(ctx.bundle_id).explained
    st.caption(
        f"The two directions explain {explained[0]:.0%} and {explained[1]:.0%} of the "
        "spread of the token vectors; the rest is in directions the picture cannot show."
        + (
            f" Grey dots: the first {MAX_SCATTER_TOKENS:,} of the {cfg.vocab_size:,} tokens (a BPE "
            "numbers its commonest tokens first); the neighbours search all of them."
            if cfg.vocab_size > MAX_SCATTER_TOKENS
            else ""
        )
    )
    return token


def neighbour_table(ctx: PageContext, labels: list[str], token: int) -> None:
    """The N_NEIGHBOURS tokens nearest to `token`, with their cosine similarity."""
    near = neighbours(ctx.bundle_id, token)
    st.markdown(f"**The {N_NEIGHBOURS} nearest tokens to `{show_whitespace(labels[token])}`**")
    st.dataframe(
        pd.DataFrame(
            {
                "token": [show_whitespace(labels[i]) for i in near.ids],
                "id": near.ids,
                "similarity": np.round(near.similarity, 3),
            }
        ),
        hide_index=True,
        width="stretch",
        column_config={  # narrow token and id columns leave the similarity room at 1024 px
            "token": st.column_config.TextColumn(width=56),  # px
            "id": st.column_config.NumberColumn(width=44),
            "similarity": st.column_config.NumberColumn(
                help="Cosine similarity to the chosen token's vector (1 = same direction)."
            ),
        },
    )


def position_embeddings(ctx: PageContext) -> None:
    """Learned and sinusoidal positions in words and the formula, this model's table and its
    similarities beside the formula's, and where positions inside attention are compared."""
    cfg = ctx.config
    st.subheader("Position embeddings")
    learned_figs = position_figures(ctx.bundle_id, cfg.pos)
    sinus_figs = sinusoid_figures(cfg.n_ctx, cfg.d_model)
    st.markdown(
        "Two ways to make the position vectors P[t]. **Learned**: a table with one trainable row "
        f"per position (the model's context is {cfg.n_ctx} positions), learned like the token "
        "embeddings. **Sinusoidal** (the original Transformer): computed from a formula, each pair "
        "of dimensions a sine and cosine wave of its own frequency, so every position gets a "
        "distinct pattern and nearby positions get similar ones."
    )
    st.latex(
        r"P[t,\,2i] = \sin\!\left(\frac{t}{10000^{2i/d}}\right),\qquad "
        r"P[t,\,2i+1] = \cos\!\left(\frac{t}{10000^{2i/d}}\right)"
    )
    kind = POSITION_KINDS[cfg.pos]
    st.caption(f"This model's positions: **{kind}**. Right: the formula, for the same size.")
    left, right = st.columns(2, gap="large")
    with left:
        if learned_figs is None:
            st.info(emb.no_positions_note(cfg.causal, cfg.pos).text)
        else:
            for k, fig in enumerate(
                learned_figs
            ):  # keyed: a sinusoidal model's equal the formula's
                present.plot(fig, width="stretch", key=f"emb_model_pos_{k}")
    with right:
        for k, fig in enumerate(sinus_figs):
            present.plot(fig, width="stretch", key=f"emb_formula_pos_{k}")
    st.caption(
        "Read a similarity matrix along its diagonal: 1 on it (every position equals itself), and "
        "a bright band beside it when nearby positions have similar vectors. Learned positions "
        "only become smooth with enough training."
    )
    st.markdown(
        "Modern models often add no position vectors at all and give positions inside attention "
        "instead: rotary positions (RoPE) turn queries and keys by position, ALiBi lowers the "
        "scores of far tokens. Both can read past the context they trained on; whether they read "
        "well there is measured on two tiny models:"
    )
    parts.contrast_links(
        ("rope", "RoPE beside learned positions"), ("alibi", "ALiBi beside learned positions")
    )


def swap_pair(ctx: PageContext) -> tuple[int, int]:
    """Why a sum cannot see order, then the two earlier tokens to swap. Stops the run, saying
    why, where the experiment does not apply (positions inside attention, fewer than 3 tokens)."""
    st.subheader("Why positions are needed: swap two tokens")
    st.markdown(
        "Attention adds up the values of the tokens a token can see, weighted by softmax scores, "
        "and a sum does not depend on the order of its terms. So **without position vectors**, "
        "swapping two earlier tokens cannot change what the last token's first attention layer "
        'outputs: that layer could not tell "dog bites man" from "man bites dog". With positions '
        "added, the vectors themselves differ, so the output changes."
    )
    if ctx.config.pos in emb.INSIDE_ATTENTION:
        st.info(
            "This model's positions act inside attention, so there are no position vectors to "
            "zero and this experiment does not apply: open a model with learned, sinusoidal or no "
            "positions (the Training page trains a model with any of them)."
        )
        st.stop()
    T = len(ctx.ids)
    if T < 3:
        st.info(
            "This needs a prompt of at least 3 tokens: two to swap and a last one that stays last."
        )
        st.stop()
    earlier = list(range(T - 1))
    c1, c2 = st.columns(2)
    i = state.selectbox(
        "First token to swap",
        "swap_i",
        earlier,
        default=0,
        container=c1,
        format_func=lambda k: ctx.labels[k],
    )
    j = state.selectbox(
        "Second token to swap",
        "swap_j",
        earlier,
        default=T - 2,
        container=c2,
        format_func=lambda k: ctx.labels[k],
    )
    return i, j


def swap_outputs(ctx: PageContext, pair: tuple[int, int]) -> SwapRuns:
    """The prompt before and after the swap, how far the last token's attention output moves with
    positions zeroed and on (its claim), and each number's change as charts. Returns the runs."""
    i, j = pair
    swapped_ids = emb.swap(ctx.ids, i, j)
    st.html(
        "<div><b>Original</b> (the two tokens to swap are outlined):</div>"
        + token_chips_html(
            [(t, p) for t, p in zip(ctx.ids, ctx.pieces, strict=True)], marked={i, j}
        )
        + "<div><b>Swapped:</b></div>"
        + token_chips_html(
            list(zip(swapped_ids, emb.swap(ctx.pieces, i, j), strict=True)), marked={i, j}
        )
    )
    runs = swap_runs(ctx.bundle_id, tuple(ctx.ids), i, j)
    swap_metrics(runs)
    st.caption(
        "Each number is the largest difference between the last token's layer-0 attention output "
        "(a vector of d_model numbers; the third one: layer 1's) for the original and for the "
        "swapped prompt. "
        "4.8e-07 means 4.8 × 10⁻⁷ = 0.00000048."
    )
    cfg = ctx.config
    same_token = i == j or ctx.ids[i] == ctx.ids[j]
    off, on = runs["off"], runs.get("on")
    st.markdown(
        emb.swap_claim(off, on, runs.get("off_layer1"), cfg.causal, same_token, cfg.pos).text
    )
    st.markdown(
        "Below: how much each of the last token's layer-0 attention output numbers changes when "
        "the two tokens are swapped (swapped minus original), both charts on the same scale."
    )
    swap_figs = swap_figures(ctx.bundle_id, tuple(ctx.ids), i, j)
    for k, (column, fig) in enumerate(zip(st.columns(2, gap="large"), swap_figs, strict=False)):
        present.plot(fig, width="stretch", key=f"emb_swap_{k}", container=column)
    return runs


def swap_metrics(runs: SwapRuns) -> None:
    """The largest change of the last token's attention output: positions zeroed, on, layer 1."""
    m1, m2, m3 = st.columns(3)
    m1.metric(  # short labels: a third of a 1024 px column; the meaning in help=
        "Positions zeroed",
        f"{runs['off'].max_diff:.1e}",
        help="The largest difference between any of the two vectors' numbers, positions zeroed.",
    )
    if "on" in runs:
        m2.metric(
            "Positions on",
            f"{runs['on'].max_diff:.1e}",
            help="The same largest difference with the position vectors added.",
        )
    if "off_layer1" in runs:
        m3.metric(
            "Zeroed, layer 1",
            f"{runs['off_layer1'].max_diff:.1e}",
            help="The same comparison one layer up: the last token's layer-1 attention output.",
        )


def numbers_behind_it(ctx: PageContext, token: int, runs: SwapRuns) -> None:
    """The last token's attention output before and after the swap, and the chosen token's
    embedding vector, as tables (built only while open)."""
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            st.markdown(
                "The last token's layer-0 attention output (`blocks.0.hook_attn_out`, its first 12 "
                f"of {ctx.config.d_model} numbers), for the original and the swapped prompt:"
            )
            off, on = runs["off"], runs.get("on")
            rows = {
                "positions zeroed, original": off.original,
                "positions zeroed, swapped": off.swapped,
            }
            if on is not None:
                rows |= {"positions on, original": on.original, "positions on, swapped": on.swapped}
            st.dataframe(
                pd.DataFrame({k: v[:12] for k, v in rows.items()}).T.round(6), width="stretch"
            )
            label = show_whitespace(vocab_labels(ctx.bundle_id)[token])
            st.markdown(f"The embedding vector of `{label}` (first 12 numbers):")
            st.dataframe(
                pd.DataFrame([embedding_row(ctx.bundle_id, token)[:12]]).round(4), hide_index=True
            )
