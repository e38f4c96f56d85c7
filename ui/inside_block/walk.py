"""Inside a block, part 1: one token's vector through one block, step by step, each step
recomputed by hand and checked against the vector the model records at its hook."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ui import cache, parts, present, state
from ui.charts import block as charts
from ui.frame import PageContext
from ui.inside_block.common import block_choice, checks_of, walk
from viz_model.analysis.claims import md_escape as md


def draw(ctx: PageContext) -> None:
    steps_in_words(ctx)
    c1, c2 = st.columns(2)
    layer = block_choice(ctx, c1)
    T = len(ctx.ids)
    position = state.slider(
        "Token",
        "blk_pos",
        0,
        T - 1,
        T - 1,
        container=c2,
        help="Which token's vector to follow through the block.",
    )
    w = walk(ctx, layer)
    symbols = [s.symbol for s in w.steps]
    vectors = np.stack([s.vectors[position] for s in w.steps])  # (S, D)
    st.subheader(f"Token {md(ctx.labels[position])} through block {layer}")
    formulas = [s.formula for s in w.steps]
    present.plot(cache.figure(charts.walk_steps, symbols, formulas, vectors))
    norms = np.linalg.norm(vectors, axis=-1)
    st.markdown(lengths_in_words(ctx, float(norms[0]), float(norms[-1])))
    checks = checks_of(ctx.bundle_id, tuple(ctx.ids), layer)
    rows = [
        {
            "step": s.symbol,
            "what it is": s.words,
            "length": round(float(norms[i]), 4),
            "hook": s.hook.split(".")[-1] if s.hook else "",
            "|by hand − hook|": f"{checks[s.symbol]:.1e}" if s.symbol in checks else "",
        }
        for i, s in enumerate(w.steps)
    ]
    st.dataframe(rows, hide_index=True)
    st.caption(
        "Every step is recomputed here by hand from the block's weights (in 64-bit numbers); where "
        "the model records the same vector at a hook (`blocks.L.` + the name shown), the last column is the largest difference."
    )
    with parts.numbers_behind_it():
        st.dataframe(
            {"dimension": np.arange(ctx.config.d_model)}
            | {s: vectors[i].round(4) for i, s in enumerate(symbols)},
            hide_index=True,
        )


def steps_in_words(ctx: PageContext) -> None:
    """The block's steps in the lecture's names (pre-LN), or this post-LN model's own."""
    cfg = ctx.config
    if cfg.norm != "pre":
        st.markdown(
            "This model is **post-LN** (the 2017 original): the LayerNorm sits on the stream after "
            "each add. The lecture's t1..t5 name a pre-LN block, so the steps here have their own "
            "names: $a = \\mathrm{Attn}(x)$, $t_3 = \\mathrm{LN}(x + a)$, $m = \\mathrm{MLP}(t_3)$, "
            "$h = \\mathrm{LN}(t_3 + m)$."
        )
        return
    st.markdown(
        "A **pre-LN block** (GPT-2 and this model) in the lecture's names. Each step works on "
        "one token's vector $x$ of $D = " + str(cfg.d_model) + "$ numbers; only attention "
        "looks at the other tokens."
    )
    lines = [
        ("t_1 = \\mathrm{LayerNorm}(x)", "x on a standard scale"),
        (
            "t_2 = \\mathrm{MultiHeadAttention}(t_1)",
            "what attention brings from "
            + ("earlier tokens" if cfg.causal else "the other tokens (no causal mask)"),
        ),
        ("h = t_3 = x + t_2", "the block's output (`resid_post`): no MLP in this model")
        if cfg.attn_only
        else ("t_3 = x + t_2", "the residual stream half-way (`resid_mid`)"),
    ]
    if not cfg.attn_only:
        lines += [
            ("t_4 = \\mathrm{LayerNorm}(t_3)", "$t_3$ on a standard scale, for the MLP"),
            ("t_5 = \\mathrm{MLP}(t_4)", "what the MLP adds"),
            ("h = t_3 + t_5", "the block's output (`resid_post`)"),
        ]
    st.markdown("\n".join(f"- ${f}$: {words}" for f, words in lines))


def lengths_in_words(ctx: PageContext, x_norm: float, h_norm: float) -> str:
    cfg = ctx.config
    return f"The token enters with length **{x_norm:.2f}** and leaves with **{h_norm:.2f}**. " + (
        "A LayerNorm resets the length to about √D · |γ| whatever came in; "
        + ("attention adds" if cfg.attn_only else "attention and the MLP each add")
        + " a vector to the stream, which never replaces what was there."
        if cfg.norm == "pre"
        else "Each LayerNorm resets the stream's length, so the output's is set by γ."
    )
