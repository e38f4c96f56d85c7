"""Embeddings & positions: token vectors in 2D with their neighbours, position tables, and why a
model without positions cannot tell word order apart."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import ui
from ui import cache, parts, present, state
from ui.charts.common import frozen, show_whitespace
from ui.charts.embeddings import pca_scatter, position_heatmap, similarity_heatmap, swap_chart
from ui.charts.tokens import token_chips_html
from viz_model.analysis import embeddings as emb
from viz_model.analysis.tokens import token_text
from viz_model.model.gpt import sinusoidal_positions
from viz_model.model.scale import MAX_SCATTER_TOKENS

N_NEIGHBOURS = 10

ctx = ui.context()
cfg = ctx.config
tok = ctx.tokenizer
T = len(ctx.ids)


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
def swap_runs(bundle_id: str, ids: tuple[int, ...], i: int, j: int) -> dict[str, emb.SwapResult]:
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


# ---- the idea -----------------------------------------------------------------------------------

st.markdown(
    "The model's first step turns each token id into a vector: row *id* of the **embedding "
    f"matrix** W_E, a table with one row of d_model = {cfg.d_model} learned numbers per token of "
    f"the vocabulary ({cfg.vocab_size:,} rows here). Training tends to give tokens used in similar "
    "ways similar vectors (the neighbours below show how far this model got). Attention by "
    "itself does not know where a token stands in the text, so a second vector that depends "
    "only on the **position** *t* is added to it. That sum is what the first layer reads (the "
    "start of the **residual stream**)."
    + (
        " This model **ties** its unembedding to this matrix (W_U = W_Eᵀ): the same vectors "
        "also score every token as the next one."
        if cfg.tie_embeddings
        else ""
    )
)
st.latex(r"x_t = W_E[\,\text{id}_t\,] + P[\,t\,]")

# ---- token embeddings ---------------------------------------------------------------------------

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
default_token = ctx.ids[-1] if ctx.ids else 0
token = state.selectbox(
    "Token to find neighbours for",
    "token",
    list(range(cfg.vocab_size)),
    default=default_token,
    format_func=lambda i: f"{show_whitespace(labels[i])}  (id {i})",
    help="Type to search. The default is the last token of your prompt.",
)
result = token_pca(ctx.bundle_id)
near = neighbours(ctx.bundle_id, token)
left, right = st.columns([3, 2], gap="large")
with left:
    present.plot(token_figure(ctx.bundle_id, token), width="stretch")
with right:
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
shown_token = show_whitespace(labels[token]).replace("`", "ˋ")
st.markdown(neighbours_note(ctx.bundle_id, token, shown_token))
st.caption(
    f"The two directions explain {result.explained[0]:.0%} and {result.explained[1]:.0%} of the "
    "spread of the token vectors; the rest is in directions the picture cannot show."
    + (
        f" Grey dots: the first {MAX_SCATTER_TOKENS:,} of the {cfg.vocab_size:,} tokens (a BPE "
        "numbers its commonest tokens first); the neighbours search all of them."
        if cfg.vocab_size > MAX_SCATTER_TOKENS
        else ""
    )
)

# ---- positions ----------------------------------------------------------------------------------

st.subheader("Position embeddings")
learned_figs = position_figures(ctx.bundle_id, cfg.pos)
sinus_figs = sinusoid_figures(cfg.n_ctx, cfg.d_model)
st.markdown(
    "Two ways to make the position vectors P[t]. **Learned**: a table with one trainable row per "
    f"position (the model's context is {cfg.n_ctx} positions), learned like the token embeddings. "
    "**Sinusoidal** (the original Transformer): computed from a formula, each pair of dimensions "
    "a sine and cosine wave of its own frequency, so every position gets a distinct pattern and "
    "nearby positions get similar ones."
)
st.latex(
    r"P[t,\,2i] = \sin\!\left(\frac{t}{10000^{2i/d}}\right),\qquad "
    r"P[t,\,2i+1] = \cos\!\left(\frac{t}{10000^{2i/d}}\right)"
)
kind = {
    "learned": "learned",
    "sinusoidal": "sinusoidal (the formula)",
    "none": "none: it gets no position vectors at all",
    "rope": "rotary (RoPE), inside attention: no position vectors",
    "alibi": "ALiBi, inside attention: no position vectors",
}[cfg.pos]
st.caption(f"This model's positions: **{kind}**. Right: the formula, for the same size.")
left, right = st.columns(2, gap="large")
with left:
    if learned_figs is None:
        st.info(emb.no_positions_note(cfg.causal, cfg.pos).text)
    else:
        for k, fig in enumerate(learned_figs):  # keyed: a sinusoidal model's equal the formula's
            present.plot(fig, width="stretch", key=f"emb_model_pos_{k}")
with right:
    for k, fig in enumerate(sinus_figs):
        present.plot(fig, width="stretch", key=f"emb_formula_pos_{k}")
st.caption(
    "Read a similarity matrix along its diagonal: 1 on it (every position equals itself), and a "
    "bright band beside it when nearby positions have similar vectors. Learned positions only "
    "become smooth with enough training."
)
st.markdown(
    "Modern models often add no position vectors at all and give positions inside attention "
    "instead: rotary positions (RoPE) turn queries and keys by position, ALiBi lowers the scores "
    "of far tokens. Both can read past the context they trained on; whether they read well there "
    "is measured on two tiny models:"
)
parts.contrast_links(
    ("rope", "RoPE beside learned positions"), ("alibi", "ALiBi beside learned positions")
)

# ---- the exercise -------------------------------------------------------------------------------

st.subheader("Why positions are needed: swap two tokens")
st.markdown(
    "Attention adds up the values of the tokens a token can see, weighted by softmax scores, and "
    "a sum does not depend on the order of its terms. So **without position vectors**, swapping two earlier tokens "
    "cannot change what the last token's first attention layer outputs: that layer could not tell "
    '"dog bites man" from "man bites dog". With positions added, the vectors themselves differ, '
    "so the output changes."
)
if cfg.pos in emb.INSIDE_ATTENTION:
    st.info(
        "This model's positions act inside attention, so there are no position vectors to zero "
        "and this experiment does not apply: open a model with learned, sinusoidal or no "
        "positions (the Training page trains a model with any of them)."
    )
    st.stop()
if T < 3:
    st.info("This needs a prompt of at least 3 tokens: two to swap and a last one that stays last.")
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
swapped_ids = emb.swap(ctx.ids, i, j)
st.html(
    "<div><b>Original</b> (the two tokens to swap are outlined):</div>"
    + token_chips_html([(t, p) for t, p in zip(ctx.ids, ctx.pieces, strict=True)], marked={i, j})
    + "<div><b>Swapped:</b></div>"
    + token_chips_html(
        list(zip(swapped_ids, emb.swap(ctx.pieces, i, j), strict=True)), marked={i, j}
    )
)
runs = swap_runs(ctx.bundle_id, tuple(ctx.ids), i, j)
off, on = runs["off"], runs.get("on")
m1, m2, m3 = st.columns(3)
m1.metric(  # short labels: a third of a 1024 px column; the meaning in help=
    "Positions zeroed",
    f"{off.max_diff:.1e}",
    help="The largest difference between any of the two vectors' numbers, positions zeroed.",
)
if on is not None:
    m2.metric(
        "Positions on",
        f"{on.max_diff:.1e}",
        help="The same largest difference with the position vectors added.",
    )
if "off_layer1" in runs:
    m3.metric(
        "Zeroed, layer 1",
        f"{runs['off_layer1'].max_diff:.1e}",
        help="The same comparison one layer up: the last token's layer-1 attention output.",
    )
st.caption(
    "Each number is the largest difference between the last token's layer-0 attention output "
    "(a vector of d_model numbers; the third one: layer 1's) for the original and for the "
    "swapped prompt. "
    "4.8e-07 means 4.8 × 10⁻⁷ = 0.00000048."
)
same_token = i == j or ctx.ids[i] == ctx.ids[j]
st.markdown(emb.swap_claim(off, on, runs.get("off_layer1"), cfg.causal, same_token, cfg.pos).text)
st.markdown(
    "Below: how much each of the last token's layer-0 attention output numbers changes when the "
    "two tokens are swapped (swapped minus original), both charts on the same scale."
)
swap_figs = swap_figures(ctx.bundle_id, tuple(ctx.ids), i, j)
for k, (column, fig) in enumerate(zip(st.columns(2, gap="large"), swap_figs, strict=False)):
    present.plot(fig, width="stretch", key=f"emb_swap_{k}", container=column)

# ---- the numbers --------------------------------------------------------------------------------

with parts.numbers_behind_it() as opened:
    if opened:  # built only while open
        st.markdown(
            f"The last token's layer-0 attention output (`blocks.0.hook_attn_out`, its first 12 of "
            f"{cfg.d_model} numbers), for the original and the swapped prompt:"
        )
        rows = {
            "positions zeroed, original": off.original,
            "positions zeroed, swapped": off.swapped,
        }
        if on is not None:
            rows |= {"positions on, original": on.original, "positions on, swapped": on.swapped}
        st.dataframe(pd.DataFrame({k: v[:12] for k, v in rows.items()}).T.round(6), width="stretch")
        st.markdown(
            f"The embedding vector of `{show_whitespace(labels[token])}` (first 12 numbers):"
        )
        st.dataframe(
            pd.DataFrame([embedding_row(ctx.bundle_id, token)[:12]]).round(4), hide_index=True
        )
