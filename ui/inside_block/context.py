"""Inside a block, part 4: contextual embeddings, one token wherever it occurs in snippets of the
training text, followed up the residual stream layer by layer."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ui import cache, parts, present, state
from ui.charts.block import context as charts
from ui.frame import PageContext
from ui.inside_block.common import vocab_label
from viz_model.analysis.claims import md_escape as md
from viz_model.analysis.labs import contextual as cx
from viz_model.analysis.residual import layer_labels


@cache.per_model(spinner="Reading corpus snippets through the model…", keep=2)
def corpus_resid(bundle_id: str) -> tuple:
    """(windows, residual stream at every station (S, N, W, D)): large, so two models at most."""
    b = cache.bundle(bundle_id)
    windows = cx.windows_for(b.model, b.tokenizer, cx.corpus_text(b.meta))
    return windows, cx.resid_by_station(b.model, windows.ids)


@cache.per_model(keep=2)
def baseline_of(bundle_id: str) -> np.ndarray:
    """(S,) the mean cosine between two different tokens at each station (anisotropy)."""
    windows, resid = corpus_resid(bundle_id)
    return cx.anisotropy(resid, windows.ids)


@cache.per_prompt
def contexts_of(bundle_id: str, token: int) -> cx.Contexts:
    windows, resid = corpus_resid(bundle_id)
    return cx.token_contexts(resid, windows, token)


def draw(ctx: PageContext) -> None:
    cfg = ctx.config
    st.markdown(
        "The embedding table gives a token one vector, whatever surrounds it: a **static** "
        "embedding. Each block then adds what attention gathered from "
        + ("the tokens before" if cfg.causal else "the other tokens (this model has no mask)")
        + ", so "
        "higher up the same token has a different vector in every context: a **contextual** "
        "embedding. Here one token, wherever it occurs in snippets of the training text, followed "
        "up the residual stream."
    )
    windows, _ = corpus_resid(ctx.bundle_id)
    options = cx.frequent_tokens(windows)
    token = state.selectbox(
        "Token",
        "ctx_token",
        options,
        options[0],
        format_func=lambda i: vocab_label(ctx, i),
        help="The corpus's most frequent tokens.",
    )
    c = contexts_of(ctx.bundle_id, token)
    n, name = c.vectors.shape[1], vocab_label(ctx, token)
    if n < 3:
        st.info(f"“{md(name)}” occurs too rarely in the snippets; pick another token.")
        return
    stations = layer_labels(cfg.n_layer)
    profile = cx.context_profile(c.vectors)
    baseline = baseline_of(ctx.bundle_id)
    points, shares = cx.layer_projections(c.vectors)
    groups = [vocab_label(ctx, t) if t >= 0 else "other" for t in cx.previous_groups(c.previous)]
    present.plot(
        cache.figure(
            charts.context_similarity,
            stations,
            profile.to_layer0,
            profile.to_layer0_min,
            profile.between,
            title=f"“{name}” in {n} contexts: how alike its vectors are, by layer",
            baseline=baseline if np.isfinite(baseline).all() else None,
        )
    )
    st.markdown(cx.context_claim(profile.between, profile.to_layer0, n, cfg.pos).text)
    if np.isfinite(baseline).all():
        st.markdown(cx.anisotropy_claim(profile.between, baseline, f"“{md(name)}”").text)
    present.plot(
        cache.figure(
            charts.context_projections,
            points,
            shares,
            stations,
            groups,
            c.snippets,
            title="Each layer's vectors of the token in 2D (each panel its own PCA)",
        )
    )
    st.caption(
        "Colour: the token just before. Hover a dot for its context. Each panel shows the two "
        "directions along which that layer's vectors differ most; the percentage is the share of "
        "their spread those two directions show."
    )
    with parts.followed_expander("The contexts", "contexts"):
        st.dataframe(
            {
                "context (ending at the token)": [s.replace("\n", "↵") for s in c.snippets],
                "cosine to its layer-0 vector, last layer": cx.cosines_to_layer0(c.vectors)[
                    -1
                ].round(3),
            },
            hide_index=True,
        )
