"""Interventions, Ablation: knock heads, MLPs or neurons out (zero or mean), see the next token
and the held-out loss change, sweep every head alone against its untrained twin, and retrain the
damaged copy."""

from __future__ import annotations

import streamlit as st

from ui import cache, parts, present, state
from ui import interventions as ux
from ui.charts import interventions as charts
from ui.experiments import common
from ui.frame import PageContext
from viz_model.analysis.labs import interventions as iv


def draw(ctx: PageContext) -> None:
    """The chosen heads, MLPs or neurons ablated (zero or mean): the effect on the next token and
    the loss; every head ablated alone; the damaged copy retrained."""
    cfg, ids = ctx.config, tuple(ctx.ids)
    L, H = cfg.n_layer, cfg.n_head
    st.markdown(
        "**Ablation** knocks a part out. *Zero* ablation replaces its output with 0; *mean* "
        "ablation replaces it with its average over a reference text, which removes what it says "
        "about *this* input while keeping its usual, constant contribution. For a head $h$ of "
        "layer $\\ell$ we replace its weighted sum of values $z_h$ (its result is "
        "$z_h W_O^h$); for an MLP its whole output; for a neuron its activation. Then compare "
        "the next token and the loss $\\mathcal{L}$ on held-out text."
    )
    st.latex(
        r"z_h \leftarrow 0 \;\;\text{or}\;\; z_h \leftarrow \mathbb{E}_{\text{ref}}[z_h],"
        r"\qquad \Delta\mathcal{L} = \mathcal{L}_{\text{ablated}} - \mathcal{L}"
    )
    c1, c2 = st.columns(2)
    how = state.radio(
        "Replace with",
        "how",
        list(iv.HOW),
        "zero",
        container=c1,
        horizontal=True,
        format_func=lambda h: {"zero": "zero", "mean": "the mean"}[h],
    )
    ref = "validation"
    if how == "mean":
        ref = state.radio(
            "Mean over",
            "mean_ref",
            ["validation", "prompt"],
            "validation",
            container=c2,
            horizontal=True,
            format_func=lambda r: {"validation": "held-out text", "prompt": "the prompt"}[r],
        )
    st.markdown("**Heads to ablate** (one row per layer):")
    heads = ux.pills_grid(
        [f"Layer {i}" for i in range(L)],
        [f"H{h}" for h in range(H)],
        "heads",
        st.columns([3, 2])[0],
    )
    mlps: list[int] = []
    neurons: list[tuple[int, int]] = []
    if not cfg.attn_only:
        c3, c4 = st.columns(2)
        mlps = [i for _, i in ux.pills_grid(["MLP"], [str(i) for i in range(L)], "mlps", c3)]
        text = state.bind(
            c4.text_input,
            "neurons",
            state.url_str("neurons", "", 300),
            "Neurons",
            placeholder="L1N37, L0N5",
            help=f"Layer and neuron, e.g. L1N37 (layers 0-{L - 1}, neurons 0-{cfg.d_mlp - 1}); "
            "the MLP neurons page shows what each one does.",
        )
        neurons, problems = iv.parse_neurons(text, L, cfg.d_mlp)
        for problem in problems:
            st.warning(problem)
    chosen = ux.ablation(heads, mlps, neurons, how)
    if chosen.empty:
        st.info("Choose heads, an MLP layer or neurons above to ablate them.")
    else:
        eff = ux.ablation_effect(
            ctx.bundle_id, ids, chosen.heads, chosen.mlps, chosen.neurons, how, ref
        )
        common.effect_picture(
            ctx,
            eff,
            f"Next token with {chosen.describe()} {how}-ablated",
            f"Ablating {chosen.describe()}",
        )

    st.subheader("Which heads matter?")
    st.markdown(
        f"Ablate each head alone ({how} ablation) and measure how much the loss on "
        f"{common.val_words(ctx)} goes up: the heads the rest of the model relies on stand out in red."
    )
    if state.toggle("Ablate each head in turn", "sweep", True):
        stats = ux.head_sweep(ctx.bundle_id, ids, how, ref)
        sweep = stats.increase
        present.plot(
            cache.figure(
                charts.layer_head_grid,
                sweep,
                f"Loss increase when one head is {how}-ablated",
                "loss increase (nats)",
                marked=chosen.heads,
            )
        )
        blank = ux.untrained_head_sweep(ctx.bundle_id, ids, how, ref)
        st.markdown(iv.head_sweep_claim(stats, untrained=blank).text)
        st.caption("Outlined: the heads ablated above; pick a head's pill above to see its effect.")
        with parts.numbers_behind_it(key="head_sweep") as opened:
            if opened:  # built only while open
                st.dataframe(
                    [
                        {
                            "layer": a,
                            **{f"head {h}": float(sweep[a, h]) for h in range(H)},
                            **{f"± 2 SE, head {h}": 2 * float(stats.se[a, h]) for h in range(H)},
                        }
                        for a in range(L)
                    ],
                    hide_index=True,
                )
    ux.retrain_form(ctx, chosen, ref)
