"""Interventions, Positions: remove or shuffle the position embeddings and see how much worse the
model predicts the prompt and the held-out text."""

from __future__ import annotations

import streamlit as st

from ui import cache, present, state
from ui import interventions as ux
from ui.charts import interventions as charts
from ui.experiments import common
from ui.frame import PageContext
from viz_model.analysis.labs import interventions as iv


def draw(ctx: PageContext) -> None:
    """The position embeddings removed or shuffled: surprisal by token and the effect."""
    cfg, ids = ctx.config, tuple(ctx.ids)
    order = (
        "A causal model also gets order from its mask: token $t$ sees only the $t$ tokens up to "
        "it, so, for example, how much a head's attention is spread tells it roughly where it "
        "is; that is why a model trained with no position embedding at all (the "
        "Architecture contrasts page's no-positions pair) still learns to write. "
        if cfg.causal
        else "This model has no causal mask, so every token sees the whole window as a set: "
        "here the position embedding is the only place order enters. "
    )
    st.markdown(
        "Attention weighs the tokens it sees by their content, not by where they stand: on its "
        "own it treats them as a set. The **position embedding** $p_t$ added to each token's "
        "vector at the start says where each one is. "
        + order
        + "Remove the position embedding, or give the tokens each other's positions, and see how "
        "much worse this model predicts."
    )
    st.latex(
        r"x_t = e_{\text{token}_t} + p_t \;\longrightarrow\; e_{\text{token}_t} + 0"
        r"\;\;\text{or}\;\; e_{\text{token}_t} + p_{\pi(t)}"
    )
    if not cfg.adds_positions:
        where = (
            f"its positions act inside attention (pos='{cfg.pos}')"
            if cfg.pos in ("rope", "alibi")
            else "it was trained with pos='none'"
        )
        st.info(f"This model has no position embeddings to remove: {where}.")
        return
    c1, c2 = st.columns(2)
    mode = state.radio(
        "Positions",
        "pos_mode",
        list(iv.POSITION_MODES),
        "remove",
        container=c1,
        horizontal=True,
        format_func=lambda m: {"remove": "remove (set to 0)", "shuffle": "shuffle"}[m],
    )
    seed = 0
    if mode == "shuffle":
        seed = state.number_input("Shuffle seed", "pos_seed", 0, 10_000, 0, container=c2)
    out = ux.positions(ctx.bundle_id, ids, mode, seed)
    after = "positions removed" if mode == "remove" else "positions shuffled"
    present.plot(
        cache.figure(
            charts.surprisal_lines,
            ctx.labels,
            out["before"],
            out["after"],
            after,
            "How surprised the model is by each prompt token",
        )
    )
    what = "Removing the position embeddings" if mode == "remove" else "Shuffling the positions"
    common.effect_picture(ctx, out["effect"], f"Next token with the {after}", what)
