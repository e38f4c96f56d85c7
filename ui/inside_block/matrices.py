"""Inside a block, part 2: attention for the whole prompt as matrix products (Q, K, V, the
pattern and Z of one head), then the head's QK and OV circuits, read through the vocabulary."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ui import cache, present
from ui.charts.block import matrices as charts
from ui.frame import PageContext
from ui.inside_block.common import block_choice, head_choice, vocab_label, walk
from viz_model.analysis.labs import block as blk


@cache.per_prompt
def circuits_of(bundle_id: str, layer: int, head: int, tokens: tuple[int, ...]) -> blk.Circuits:
    return blk.circuits(cache.bundle(bundle_id).model, layer, head, list(tokens))


def draw(ctx: PageContext) -> None:
    cfg, T = ctx.config, len(ctx.ids)
    st.markdown(
        "Attention for every token at once is three matrix products. Stack the prompt's $T$ "
        "vectors $t_1$ as the rows of a matrix; each head $h$ projects them to $d_\\text{head}$ = "
        f"{cfg.d_head} numbers per token:"
    )
    st.latex(r"Q = t_1 W_Q, \qquad K = t_1 W_K, \qquad V = t_1 W_V")
    st.latex(
        r"Z = \underbrace{\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_\text{head}}}"
        + (r" + \text{mask}" if cfg.causal else "")
        + r"\right)}_{\text{pattern},\ T\times T} V"
    )
    if not cfg.causal:
        st.caption(
            "This model has no causal mask: every token reads the whole prompt, later tokens too."
        )
    c1, c2 = st.columns(2)
    layer, head = block_choice(ctx, c1), head_choice(ctx, c2)
    w = walk(ctx, layer)
    st.subheader(f"Block {layer}, head {head}: Q, K and V for the whole prompt")
    qkv = [
        (f"Q ({T} × {cfg.d_head})", w.q[head], False, None),
        (f"K ({T} × {cfg.d_head})", w.k[head], False, None),
        (f"V ({T} × {cfg.d_head})", w.v[head], False, None),
    ]
    present.plot(cache.figure(charts.matrices, qkv, ctx.labels))
    st.markdown(
        "One row per token. The Attention page takes one row of Q apart; here every row goes "
        "through at once: the pattern is $T \\times T$ and multiplies $V$ to give $Z$, one row per "
        "token, each a weighted average of the rows of V."
    )
    pattern_v = [
        (f"pattern ({T} × {T})", w.pattern[head], True, ctx.labels),
        ("× V", w.v[head], False, None),
        ("= Z", w.z[head], False, None),
    ]
    present.plot(cache.figure(charts.matrices, pattern_v, ctx.labels))
    circuits(ctx, layer, head)


# In these models a score is not a W_QK b^T alone: where the QK circuit tells only part of it.
POSITION_CAVEATS = {
    "rope": (
        "This model uses rotary positions (RoPE): q and k are rotated by their positions before "
        "they meet, so the score is a W_Q R(i − j) W_K^T b^T, with a rotation R that depends on "
        "the distance. W_QK below is the score of two tokens at the same position (distance 0) "
        "only."
    ),
    "alibi": (
        "This model uses ALiBi: each score also gets −m·(i − j), a penalty growing with the "
        "distance between query and key (its own slope m per head). W_QK below is the part of "
        "the score that the tokens' content decides."
    ),
}


def circuits(ctx: PageContext, layer: int, head: int) -> None:
    cfg = ctx.config
    st.subheader(f"The two circuits of block {layer}, head {head}")
    st.markdown(
        "Put the head's weights together and it is two $D \\times D$ matrices. The **QK circuit** "
        "$W_{QK} = W_Q W_K^\\top$ decides *where to read*: the score of a query vector $a$ for a "
        "key vector $b$ is $a\\,W_{QK}\\,b^\\top / \\sqrt{d_\\text{head}}$. The **OV circuit** "
        "$W_{OV} = W_V W_O$ decides *what to write*: a token read with weight 1 adds $b\\,W_{OV}$ "
        f"to the stream. Both pass through the head's {cfg.d_head} dimensions, so their rank is at "
        f"most {cfg.d_head}, out of D = {cfg.d_model}."
    )
    if cfg.pos in POSITION_CAVEATS:
        st.warning(POSITION_CAVEATS[cfg.pos])
    distinct = list(dict.fromkeys(ctx.ids))[:40]
    c = circuits_of(ctx.bundle_id, layer, head, tuple(blk.map_tokens(cfg.vocab_size, distinct)))
    m1, m2, m3 = st.columns(3)
    m1.metric("rank of W_QK", c.qk_rank, help="Non-zero singular values (numerically).")
    m2.metric("rank of W_OV", c.ov_rank, help="Non-zero singular values (numerically).")
    m3.metric("size D × D", f"{cfg.d_model} × {cfg.d_model}")
    present.plot(
        cache.figure(
            charts.singular_values,
            c.qk_singular,
            c.ov_singular,
            cfg.d_head,
            title="Singular values of the circuits",
        )
    )
    label = blk.norm_label(cfg) if cfg.norm == "pre" else ""  # post-LN: W_E as it is
    through = f"through the block's {label}, " if label else ""
    st.markdown(
        "**Through the vocabulary.** Feed the head each token's own embedding ("
        + through
        + "no position, no earlier layer: the *direct path*) and read the "
        "circuits as token-to-token tables: QK, how much a query token prefers each key token; "
        "OV times the unembedding $W_U$, which output tokens a token pushes up when the head "
        "reads it. Below, the prompt's own tokens; each row's mean is taken away, since a softmax "
        "ignores it."
    )
    token_tables(ctx, c, distinct)


def token_tables(ctx: PageContext, c: blk.Circuits, distinct: list[int]) -> None:
    """The circuits on the prompt's own tokens, and their top pairs in the whole vocabulary."""
    names = [vocab_label(ctx, i) for i in distinct]
    row_of = {t: i for i, t in enumerate(c.token_ids)}
    sub = np.ix_([row_of[t] for t in distinct], [row_of[t] for t in distinct])
    left, right = st.columns(2)
    present.plot(
        cache.figure(
            charts.token_map,
            c.qk_tokens[sub],
            names,
            names,
            row_name="query token",
            col_name="key token",
            title="QK: where a token looks",
        ),
        container=left,
    )
    present.plot(
        cache.figure(
            charts.token_map,
            c.ov_tokens[sub],
            names,
            names,
            row_name="token read",
            col_name="output pushed up",
            title="OV: what a token read writes",
        ),
        container=right,
    )

    def label(row: int) -> str:
        return vocab_label(ctx, c.token_ids[row])

    left.markdown("**Top pairs in the whole vocabulary, QK** (query → key it prefers)")
    left.dataframe(
        [
            {"query": label(a), "key": label(b), "score − row mean": round(v, 3)}
            for a, b, v in blk.top_pairs(c.qk_tokens)
        ],
        hide_index=True,
    )
    right.markdown("**Top pairs, OV** (token read → output it pushes up)")
    right.dataframe(
        [
            {"read": label(a), "pushes up": label(b), "logit − row mean": round(v, 3)}
            for a, b, v in blk.top_pairs(c.ov_tokens)
        ],
        hide_index=True,
    )
    vocab_size = ctx.config.vocab_size
    if vocab_size > blk.MAX_VOCAB_MAP:
        st.caption(
            f"The vocabulary has {vocab_size:,} tokens; the top pairs are searched among the "
            f"first {blk.MAX_VOCAB_MAP:,} and the prompt's own."
        )
    st.caption(
        "A copying head's OV table is bright on its diagonal (reading a token pushes up the same "
        "token); an induction or previous-token head shows its rule in QK only together with the "
        "positions, which the direct path leaves out."
    )
