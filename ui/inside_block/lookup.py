"""Inside a block, part 3: one query of one head answered as an exact, a nearest and a soft
dictionary look-up, then why the scores are divided by sqrt(d_head)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ui import cache, present, state
from ui.charts.block import lookup as charts
from ui.frame import PageContext
from ui.inside_block.common import block_choice, head_choice, walk
from viz_model.analysis.claims import md_escape as md
from viz_model.analysis.labs import block as blk
from viz_model.analysis.labs import lookup as lk

WIDTHS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]


@cache.per_model
def random_widths() -> tuple[np.ndarray, np.ndarray]:
    """The spread of random scores at each width (the same for every model)."""
    return lk.random_spread(WIDTHS)


def draw(ctx: PageContext) -> None:
    cfg, T = ctx.config, len(ctx.ids)
    st.markdown(
        "A Python dictionary answers `d[query]` only when the query *equals* one of its keys, and "
        "then returns that key's value. Attention is a dictionary whose keys and queries are "
        "vectors, which are never exactly equal, so it relaxes the look-up: first to the key that "
        "matches *best* (largest $q \\cdot k$), then to a blend of every key's value, weighted "
        "by how well it matches. Here is one query of one head answered all three ways."
    )
    c1, c2, c3 = st.columns(3)
    layer, head = block_choice(ctx, c1), head_choice(ctx, c2)
    query = state.slider(
        "Query token",
        "lk_query",
        0,
        T - 1,
        lk.default_query(ctx.ids),
        container=c3,
        help="The token doing the looking up; the keys are "
        + ("it and every token before it." if cfg.causal else "every token (no causal mask)."),
    )
    w = walk(ctx, layer)
    found = lk.lookup(w.q[head], w.k[head], w.v[head], ctx.ids, query, cfg)
    titles = {
        "exact": f"exact: the {'earlier' if cfg.causal else 'other'} positions holding the same "
        "token (a dict on tokens)",
        "nearest": "nearest: only the key with the largest q · k (argmax)",
        "soft": f"soft: softmax(q · k / √{cfg.d_head}), what the head does",
        "soft, unscaled": "soft without the √d_head: softmax(q · k)",
    }
    keys = [ctx.labels[i] for i in found.keys]
    present.plot(cache.figure(charts.lookup_weights, found.weights, keys, titles))
    st.markdown(three_answers(ctx, found, query))
    st.caption(
        "The soft weights are this head's attention row for this token, as on the Attention page; "
        "their blend of the values is the head's z for the token."
    )
    why_sqrt_d(ctx, w, head)


def three_answers(ctx: PageContext, found: lk.Lookup, query: int) -> str:
    """The exact, nearest and soft answers in words."""
    best = int(np.argmax(found.weights["nearest"]))
    gap = float(np.linalg.norm(found.outputs["soft"] - found.outputs["nearest"]))
    where = "earlier" if ctx.config.causal else "other"
    if found.matches:
        exact = (
            "at " + ", ".join(md(ctx.labels[i]) for i in found.matches) + ": their values, averaged"
        )
    else:
        exact = (
            f"nowhere: no {where} position holds this token, so a dictionary would raise `KeyError`"
        )
    return (
        f"- **Exact**: token {md(ctx.labels[query])} is found {exact}. On vectors an exact match "
        "never happens.\n"
        f"- **Nearest**: the best-matching key is {md(ctx.labels[best])} "
        f"(q · k = {found.dots[best]:.2f}); the answer is its value vector alone.\n"
        f"- **Soft**: every key gets a weight; the largest is "
        f"{found.weights['soft'].max():.2f}. The blended answer is {gap:.2f} away from the nearest "
        f"key's value (whose length is {np.linalg.norm(found.outputs['nearest']):.2f}): "
        "a soft look-up is close to a hard one when one key wins clearly, and a mix when it does not."
    )


def why_sqrt_d(ctx: PageContext, w: blk.BlockWalk, head: int) -> None:
    d_head = ctx.config.d_head
    st.subheader("Why divide by √d_head?")
    st.markdown(
        "A dot product adds up $d$ products. If the numbers in $q$ and $k$ are random with spread 1, "
        "the sum has spread $\\sqrt{d}$: the wider the head, the larger the scores, and a softmax "
        "of large scores puts almost all its weight on one key (the nearest look-up), with "
        "gradients near zero for the rest. Dividing by $\\sqrt{d}$ brings the spread back to 1 "
        "whatever the width."
    )
    if len(ctx.ids) < 2:
        st.info("This needs a prompt of at least two tokens, so that a query has a choice of keys.")
        return
    sp = lk.spread(w.scores[head], d_head)
    m1, m2, m3, m4 = st.columns(4)
    spread_help = "Standard deviation over every visible (query, key) pair of this head."
    m1.metric("spread of q · k", f"{sp.std_raw:.2f}", help=spread_help)
    m2.metric(f"… / √{d_head}", f"{sp.std_scaled:.2f}", help=spread_help)
    weight_help = "The largest attention weight of each row, averaged: 1 means a hard choice."
    m3.metric("mean largest weight", f"{sp.max_weight_scaled:.2f}", help=weight_help)
    m4.metric("… unscaled", f"{sp.max_weight_raw:.2f}", help=weight_help)
    raw, scaled = random_widths()
    left, right = st.columns(2)
    present.plot(
        cache.figure(
            charts.spread_by_width,
            WIDTHS,
            raw,
            scaled,
            d_head,
            title="Random vectors: spread of the score",
        ),
        container=left,
    )
    title = f"This head's scores (block {w.layer}, head {head})"
    present.plot(
        cache.figure(charts.score_histograms, sp.raw, sp.scaled, title=title), container=right
    )
