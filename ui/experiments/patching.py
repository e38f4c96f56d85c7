"""Interventions, Patching: a clean prompt and a corrupted one a token apart; copy one activation
of the clean run into the corrupted run and measure how much of the clean answer comes back."""

from __future__ import annotations

import math
from functools import partial

import streamlit as st

from ui import cache, parts, present, state
from ui import interventions as ux
from ui.charts import interventions as charts
from ui.charts.common import show_whitespace
from ui.charts.tokens import token_chips_html
from ui.experiments import common
from ui.frame import PageContext
from viz_model.analysis.labs import interventions as iv


def draw(ctx: PageContext) -> None:
    """Clean and corrupted prompts, the share of the answer each patched activation restores."""
    cfg, tok, ids = ctx.config, ctx.tokenizer, tuple(ctx.ids)
    L, T = cfg.n_layer, len(ids)
    st.markdown(
        "**Activation patching** finds *where* the model keeps a piece of information. Run a "
        "**clean** prompt and a **corrupted** one that differs in one token, so the model "
        "predicts differently. Then run the corrupted prompt again, but copy in one activation "
        "from the clean run (the residual stream at one layer and position, or one head's "
        "output). If that alone brings the clean answer back, the information travels there. "
        "We measure the answer by the logit difference $LD$ between the clean run's favourite "
        "next token and the corrupted run's (the clean run's second choice when both runs prefer "
        "the same token), scaled so that 0 is the corrupted run and 1 the clean."
    )
    st.latex(
        r"\text{restored} = \frac{LD_{\text{patched}} - LD_{\text{corrupted}}}"
        r"{LD_{\text{clean}} - LD_{\text{corrupted}}}"
    )
    if T < 2:
        st.info("Type a prompt of at least two tokens in the sidebar.")
        return
    s_end, s_pos, s_token = ux.suggested_experiment(ctx.bundle_id, ids)
    c0, c1, c2 = st.columns(3)
    end = state.selectbox(
        "Predict the token after",
        "patch_end",
        list(range(1, T)),
        s_end,
        container=c0,
        format_func=lambda i: ctx.labels[i],
        help="The clean prompt is the sidebar's, up to this token: its next token is the answer. "
        "The default is the latest token whose next token the model predicts right and a "
        "one-token change flips.",
    )
    clean = ids[: end + 1]
    if end != s_end:
        s_pos, s_token = ux.suggested_corruption(ctx.bundle_id, clean)
    pos = state.selectbox(
        "Token to change",
        "patch_pos",
        list(range(end + 1)),
        s_pos,
        container=c1,
        format_func=lambda i: ctx.labels[i],
        help="The default is the change (of a few common tokens) that moves the prediction most.",
    )
    typed = state.bind(
        c2.text_input,
        "patch_tok",
        state.url_str("patch_tok", show_whitespace(common.label(ctx, s_token)), 40),
        "Replace it with",
        help="One token of this model's vocabulary; ␣ stands for a space, ↵ for a newline.",
    )
    new = tok.encode(iv.typed_text(typed))
    if len(new) != 1:
        st.error(f"“{iv.md_escape(typed)}” is {len(new)} tokens for this model; type one token.")
        return
    corrupted = tuple(iv.corrupt(list(clean), pos, new[0]))
    if corrupted == clean:
        st.info("That is the token already there: choose another to make a corrupted prompt.")
        return
    for name, seq in (("Clean", clean), ("Corrupted", corrupted)):
        chips = token_chips_html([(i, common.label(ctx, i)) for i in seq], marked={pos})
        st.html(f"<div><b>{name}</b></div>{chips}")
    result = ux.patching(ctx.bundle_id, clean, corrupted)
    a, w, top = (
        common.shown_label(ctx, i) for i in (result.answer, result.wrong, result.corrupt_top)
    )
    m1, m2, m3 = st.columns(3)
    m1.metric(
        "Clean favourite",
        f"{a} ({result.p_clean[result.answer]:.2f})",
        help="The answer: the clean run's most likely next token, and its probability.",
    )
    m2.metric(
        "Corrupted favourite",
        f"{top} ({result.p_corrupt[result.corrupt_top]:.2f})",
        help="The corrupted run's own most likely next token, and its probability.",
    )
    m3.metric(
        "LD clean → corrupted",
        f"{result.ld_clean:.2f} → {result.ld_corrupt:.2f}",
        help=f"logit[{a}] - logit[{w}] after the last token.",
    )
    if not math.isfinite(float(result.resid[-1, -1])):
        st.warning(
            "Both prompts give the same logit difference, so nothing can be restored: "
            "change another token."
        )
        return
    st.markdown(iv.patching_claim(result, partial(common.shown_label, ctx)).text)
    rows = [f"into block {i}" for i in range(L)] + [f"after block {L - 1}"]
    present.plot(
        cache.figure(
            charts.patching_map,
            result.resid,
            rows,
            ctx.labels[: end + 1],
            "Patch the residual stream at one layer and position",
        )
    )
    before = (
        "In a causal model the positions before the changed token are the same in both runs, "
        "so patching them restores nothing. "
        if cfg.causal
        else ""
    )
    st.markdown(before + iv.route_claim(result, pos).text)
    present.plot(
        cache.figure(
            charts.layer_head_grid,
            result.heads,
            "Patch one head's output (every position)",
            "share restored",
            zrange=(-1, 1),
            fmt=".2f",
        )
    )
    with parts.numbers_behind_it(key="patching") as opened:
        if opened:  # built only while open
            st.dataframe(
                [
                    {
                        "patched": r,
                        **{ctx.labels[t]: float(result.resid[i, t]) for t in range(end + 1)},
                    }
                    for i, r in enumerate(rows)
                ],
                hide_index=True,
            )
