"""Interventions, Steering: the difference of two prompt sets' mean residual streams, added while
the model writes, its push towards A against random directions, and the text with and without."""

from __future__ import annotations

import streamlit as st

from ui import cache, parts, present, state
from ui import interventions as ux
from ui.charts import interventions as charts
from ui.experiments import common
from ui.frame import PageContext
from viz_model.analysis.labs import interventions as iv


def draw(ctx: PageContext) -> None:
    """Prompt sets A and B, the direction between them added at a layer, its push, and the text."""
    tok, ids, L = ctx.tokenizer, tuple(ctx.ids), ctx.config.n_layer
    shown = tok.decode(list(ids))  # the prompt as the model reads it (cut to its context)
    st.markdown(
        "**Steering** pushes the model along a direction while it writes. Give two sets of "
        "prompts, A and B; the direction $v$ is the difference of their mean residual streams "
        "entering a block. Adding $\\alpha v$ to the residual stream at that point, at every "
        "position, nudges the model towards A (or, with a negative $\\alpha$, towards B). Any "
        "vector added to the stream also just damages the text, so we measure the push: how "
        "much likelier the model finds the A texts than the B texts (mean log-probability per "
        "token), with steering minus without, against what a random direction of the same "
        "length does. Both generated texts below use the same random seed."
    )
    st.latex(
        r"v = \overline{x_\ell}(A) - \overline{x_\ell}(B), \qquad x_\ell \leftarrow x_\ell + \alpha\, v"
    )
    da, db = ux.steering_defaults(ctx.bundle_id, shown)
    c1, c2 = st.columns(2)
    a_text = state.bind(
        c1.text_area,
        "steer_a",
        state.url_str("steer_a", da, 2000),
        "Prompts A (a blank line between two prompts)",
        height=150,
    )
    b_text = state.bind(
        c2.text_area, "steer_b", state.url_str("steer_b", db, 2000), "Prompts B", height=150
    )
    a = _prompts(ctx, a_text)
    b = _prompts(ctx, b_text)
    if not a or not b:
        st.info("Give at least one prompt in each set.")
        return
    c3, c4, c5, c6 = st.columns(4)
    layer = state.slider("Layer", "steer_layer", 0, L - 1, L // 2, container=c3)
    strength = state.slider(
        "Strength α", "strength", -10.0, 10.0, iv.STEER_DEFAULT_ALPHA, step=0.5, container=c4
    )
    n_tokens = state.slider("Tokens", "steer_len", 20, 200, 100, step=10, container=c5)
    seed = state.number_input("Seed", "steer_seed", 0, 10_000, 0, container=c6)
    push = ux.steering_push(ctx.bundle_id, a, b, layer, float(strength))
    present.plot(
        cache.figure(
            charts.steering_push,
            push.alphas,
            push.push,
            push.chance,
            float(strength),
            f"Push towards A with the direction added entering block {layer}",
        )
    )
    st.markdown(iv.steering_claim(push, float(strength)).text)
    plain, pushed = ux.steered(ctx.bundle_id, ids, a, b, layer, strength, n_tokens, seed)
    left, right = st.columns(2)
    left.markdown("**Without steering**")
    left.code(shown + tok.decode(plain), language=None, wrap_lines=True)
    right.markdown(f"**With α = {strength:g} at layer {layer}**")
    right.code(shown + tok.decode(pushed), language=None, wrap_lines=True)
    with parts.numbers_behind_it(key="steering") as opened:
        if opened:  # built only while open
            report = ux.direction_report(ctx.bundle_id, a, b, layer)
            st.markdown(
                f"$\\lVert v \\rVert$ = {report.norm:.2f}. Read straight through the unembedding, "
                "the direction raises and lowers these tokens most:"
            )
            st.dataframe(
                [
                    {
                        "raised": common.label(ctx, up),
                        "by": dy,
                        "lowered": common.label(ctx, down),
                        "by ": dn,
                    }
                    for (up, dy), (down, dn) in zip(report.raised, report.lowered, strict=True)
                ],
                hide_index=True,
            )


def _prompts(ctx: PageContext, text: str) -> tuple[tuple[int, ...], ...]:
    """Blocks separated by blank lines, each encoded and cut to the context; empty ones skipped."""
    blocks = [b.strip("\n") for b in text.split("\n\n")]
    tok, n_ctx = ctx.tokenizer, ctx.config.n_ctx
    encoded = [tok.encode(b)[-n_ctx:] for b in blocks if b.strip()]
    return tuple(tuple(e) for e in encoded if e)
