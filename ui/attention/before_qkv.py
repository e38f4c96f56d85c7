"""The Attention page's "attention before Q, K and V": softmax(x xᵀ/√d + mask) on the vectors the
chosen layer's attention reads, beside the chosen head's real pattern, the sentence comparing the
two (held against the untrained twin), and the query's top key in each, the "three views" line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ui import cache, present
from ui.attention.head import SIDE_BY_SIDE_MAX_T, View
from ui.attention.runs import (
    run_attention,
    twin_xx_against_heads,
    xx_against_heads,
    xx_pattern,
)
from ui.charts.attention import pattern_heatmap
from ui.frame import PageContext
from viz_model.analysis.before_qkv import before_qkv_claim, top_key
from viz_model.analysis.claims import md_escape

XX_TITLE = "softmax(x·xᵀ/√d): no learned matrix"


def side_by_side(ctx: PageContext, v: View) -> None:
    """x·x's pattern beside the head's, the claim, and the query's top key under each."""
    cfg, T = ctx.config, len(ctx.ids)
    ids, labels = tuple(ctx.ids), tuple(ctx.labels)
    st.subheader("Attention before Q, K and V")
    st.markdown(
        "The simplest attention has no learned matrix at all: each token scores every token it "
        "may read by the dot product of their vectors, xᵢ · xⱼ, and a softmax turns each row "
        "into weights. Q, K and V then give three learned views of the same x: "
        "**q = x W_Q** (what a token looks for), **k = x W_K** (what it offers to be found by) "
        "and **v = x W_V** (what it passes on), so a head can look for something other than "
        "the token most like itself."
    )
    st.latex(
        r"\operatorname{softmax}\!\left(\frac{x\,x^\top}{\sqrt{d}}"
        + (r" + \text{mask}" if cfg.causal else "")
        + r"\right)\quad\text{beside}\quad\operatorname{softmax}\!\left("
        r"\frac{q\,k^\top}{\sqrt{d_\text{head}}}"
        + (r" + \text{mask}" if cfg.causal else "")
        + r"\right)"
    )
    st.caption(f"x: {_what_x_is(ctx, v.layer)} d = d_model = {cfg.d_model}.")
    xx = xx_pattern(ctx.bundle_id, ids)[v.layer]
    head = run_attention(ctx.bundle_id, ids).pattern[v.layer, v.head]
    left, right = st.columns(2) if T <= SIDE_BY_SIDE_MAX_T else (st.container(), st.container())
    head_title = f"{v.name}: softmax(q·kᵀ/√d_head)"
    for container, values, title, key in (
        (left, xx, XX_TITLE, "attn_xx"),
        (right, head, head_title, "attn_xx_head"),
    ):
        with container:
            fig = cache.figure(
                pattern_heatmap, values, list(labels), title=title, query=v.query, causal=cfg.causal
            )
            present.plot(fig, key=key)
    claim = before_qkv_claim(
        xx_against_heads(ctx.bundle_id, ids),
        twin_xx_against_heads(ctx.bundle_id, ids),
        v.layer,
        v.head,
        v.name,
    )
    st.markdown(claim.text)
    st.caption(
        f"Random weights: {cache.untrained(ctx.bundle_id).source}, the same shape as this model. "
        "Distance: the total-variation distance ½ Σ |a − b| between two rows of weights, "
        "averaged over the query rows."
    )
    _three_views(ctx, v, xx[v.query], head[v.query])


def _what_x_is(ctx: PageContext, layer: int) -> str:
    """Which vectors layer `layer`'s W_Q, W_K and W_V read, in this model's terms."""
    cfg = ctx.config
    stream = f"the residual stream entering layer {layer} (`blocks.{layer}.hook_resid_pre`)"
    if cfg.norm == "pre" and cfg.norm_kind != "none":
        norm = "RMSNorm" if cfg.norm_kind == "rmsnorm" else "LayerNorm"
        return f"{stream} after the layer's {norm} `ln1`: what W_Q, W_K and W_V read."
    if cfg.norm_kind == "none":
        return (
            f"{stream}, which this model reads with no normalization: what W_Q, W_K and W_V read."
        )
    return f"{stream}, which W_Q, W_K and W_V read as it is (this post-LN model normalizes after attention)."


def _three_views(ctx: PageContext, v: View, xx_row: np.ndarray, head_row: np.ndarray) -> None:
    """For the query token: its top key under x·x and under the head's q·k, one line and a table."""
    labels, q = ctx.labels, v.query
    a, b = top_key(xx_row), top_key(head_row)
    st.markdown(
        f"For the query **{md_escape(labels[q])}**, x·x looks most at **{md_escape(labels[a])}** "
        f"({xx_row[a]:.2f} of its weight) and {v.name}'s q·k at **{md_escape(labels[b])}** "
        f"({head_row[b]:.2f})."
    )
    st.table(
        pd.DataFrame(
            {
                "top key": [labels[a], labels[b]],
                "its weight": [f"{xx_row[a]:.2f}", f"{head_row[b]:.2f}"],
                "weight on itself": [f"{xx_row[q]:.2f}", f"{head_row[q]:.2f}"],
            },
            index=["x·x (no learned matrix)", f"q·k of {v.name}"],
        )
    )
