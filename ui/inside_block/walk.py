"""Inside a block, part 1: one token's vector through one block, step by step, each step
recomputed by hand and checked against the vector the model records at its hook."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ui import cache, parts, present, state
from ui.charts.block import walk as charts
from ui.frame import PageContext
from ui.inside_block.common import block_choice, checks_of, walk
from viz_model.analysis.claims import md_escape as md
from viz_model.analysis.labs import block as blk


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
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            st.dataframe(
                {"dimension": np.arange(ctx.config.d_model)}
                | {s: vectors[i].round(4) for i, s in enumerate(symbols)},
                hide_index=True,
            )


def steps_in_words(ctx: PageContext) -> None:
    """The block's steps in the lecture's names (pre-LN), or this model's own: post-LN, RMSNorm,
    no normalization, no residual connections (the steps `block_walk` computes)."""
    cfg = ctx.config
    label = blk.norm_label(cfg)  # "" without normalization
    norm = f"\\mathrm{{{label}}}"
    if cfg.norm != "pre" and label:
        first = "x + a" if cfg.residual else "a"
        second = "t_3 + m" if cfg.residual else "m"
        st.markdown(
            f"This model is **post-LN** (the 2017 original): the {label} sits on the stream after "
            "each sublayer. The lecture's t1..t5 name a pre-LN block, so the steps here have their "
            f"own names: $a = \\mathrm{{Attn}}(x)$, $t_3 = {norm}({first})$, "
            f"$m = \\mathrm{{MLP}}(t_3)$, $h = {norm}({second})$."
        )
        return
    if cfg.norm_kind == "layernorm" and cfg.residual:
        kind = "A **pre-LN block** (GPT-2 and this model)"
    else:
        parts = [f"a **{label}** before each sublayer" if label else "**no normalization**"]
        parts += [] if cfg.residual else ["**no residual connections**"]
        kind = "This model's block, with " + " and ".join(parts) + ","
    st.markdown(
        f"{kind} in the lecture's names. Each step works on one token's vector $x$ of "
        f"$D = {cfg.d_model}$ numbers; only attention looks at the other tokens."
    )
    t1, t4 = ("t_1", "t_4") if label else ("x", "t_3")
    lines = [(f"t_1 = {norm}(x)", "x on a standard scale")] if label else []
    attends = "earlier tokens" if cfg.causal else "the other tokens (no causal mask)"
    lines.append(
        (f"t_2 = \\mathrm{{MultiHeadAttention}}({t1})", f"what attention brings from {attends}")
    )
    t3 = "x + t_2" if cfg.residual else "t_2"
    if cfg.attn_only:
        lines.append((f"h = t_3 = {t3}", "the block's output (`resid_post`): no MLP in this model"))
    else:
        stream = "the residual stream" if cfg.residual else "the stream"
        lines.append((f"t_3 = {t3}", f"{stream} half-way (`resid_mid`)"))
        if label:
            lines.append((f"t_4 = {norm}(t_3)", "$t_3$ on a standard scale, for the MLP"))
        writes = "adds" if cfg.residual else "writes in its place"
        lines.append((f"t_5 = \\mathrm{{MLP}}({t4})", f"what the MLP {writes}"))
        h = "t_3 + t_5" if cfg.residual else "t_5"
        lines.append((f"h = {h}", "the block's output (`resid_post`)"))
    st.markdown("\n".join(f"- ${f}$: {words}" for f, words in lines))


def lengths_in_words(ctx: PageContext, x_norm: float, h_norm: float) -> str:
    cfg = ctx.config
    label = blk.norm_label(cfg) or "norm"
    adds = "attention adds" if cfg.attn_only else "attention and the MLP each add"
    if not cfg.residual:
        how = (
            "Without residual connections each sublayer's output replaces the stream, so the "
            "output's length is whatever the last sublayer writes."
        )
    elif cfg.norm_kind == "none":
        how = f"Nothing rescales the stream in this model: {adds} a vector to it."
    elif cfg.norm == "pre":
        how = (
            f"A {label} resets the length of what a sublayer reads to about √D · |γ| whatever "
            f"came in; {adds} a vector to the stream, which never replaces what was there."
        )
    else:
        how = f"Each {label} resets the stream's length, so the output's is set by γ."
    return f"The token enters with length **{x_norm:.2f}** and leaves with **{h_norm:.2f}**. " + how
