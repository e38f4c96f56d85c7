"""Interventions: knock parts of the model out, patch activations from one prompt into another,
steer generation with a direction, scramble the positions, and see what breaks."""

from __future__ import annotations

import math

import streamlit as st

import ui
from ui import interventions as ux
from ui import parts, present, state
from ui.charts import interventions as charts
from ui.charts.common import show_whitespace
from ui.charts.tokens import token_chips_html
from viz_model.analysis import interventions as iv
from viz_model.analysis.tokens import token_text

ctx = ui.context()
cfg, tok, ids = ctx.config, ctx.tokenizer, tuple(ctx.ids)
L, H, T = cfg.n_layer, cfg.n_head, len(ids)
shown = tok.decode(list(ids))  # the prompt as the model reads it (cut to its context)
N_BARS = 12

st.markdown(
    "Every other page *watches* the model. Here we **change** one part of it while it runs and "
    "measure what breaks: if the loss jumps when a head is removed, that head was doing work the "
    "rest of the model relies on. Each change is made for this one run only (a hook replaces an "
    "activation on its way through); the model itself is never edited."
)
EXPERIMENTS = ["Ablation", "Patching", "Steering", "Positions", "Facts"]
experiment = state.radio("Experiment", "exp", EXPERIMENTS, "Ablation", horizontal=True)
windows = ux.windows(ctx.bundle_id, ids)
_, found_val = ux.validation_ids(ctx.bundle_id)
VAL_WORDS = (
    f"{windows.numel() - windows.shape[0]} tokens of held-out text (the end of the model's "
    "training text, which it never trained on)"
    if found_val
    else "the prompt (this model does not say what it was trained on)"
)


def label(i: int) -> str:
    return token_text(tok, int(i))


def shown_label(i: int) -> str:
    """A token as sentences show it: whitespace visible (␣ ↵)."""
    return parts.token_label(tok, i)


def effect_picture(eff: iv.Effect, title: str, what: str) -> None:
    """Bars before/after, the losses and how much probability moved, the claim about the loss
    (beyond noise or not); the numbers on demand."""
    top = eff.changed_tokens(N_BARS)
    present.plot(
        charts.before_after_bars(
            [label(i) for i in top], eff.p_before[top], eff.p_after[top], title
        )
    )
    m1, m2, m3 = st.columns(3)
    m1.metric(
        "Loss as trained", f"{eff.loss_before:.3f}", help=f"Mean nats per token on {VAL_WORDS}."
    )
    m2.metric(
        "Loss after",
        f"{eff.loss_after:.3f}",
        f"{eff.loss_change:+.3f}",
        delta_color="inverse",
        help="Higher is worse: the model predicts the held-out text less well.",
    )
    m3.metric(
        "Probability moved",
        f"{eff.total_variation():.1%}",
        help="Half the sum of |p_after - p_before| over the vocabulary: how much of the "
        "next-token distribution changed hands.",
    )
    st.markdown(iv.loss_change_claim(eff, what).text)
    with parts.numbers_behind_it(key="effect") as opened:
        if opened:  # built only while open
            st.dataframe(
                [
                    {
                        "token": label(i),
                        "p before": float(eff.p_before[i]),
                        "p after": float(eff.p_after[i]),
                        "change": float(eff.p_after[i] - eff.p_before[i]),
                    }
                    for i in top
                ],
                hide_index=True,
            )


# ---- ablation ---------------------------------------------------------------------------------


def ablation_section() -> None:
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
        effect_picture(
            eff,
            f"Next token with {chosen.describe()} {how}-ablated",
            f"Ablating {chosen.describe()}",
        )

    st.subheader("Which heads matter?")
    st.markdown(
        f"Ablate each head alone ({how} ablation) and measure how much the loss on "
        f"{VAL_WORDS} goes up: the heads the rest of the model relies on stand out in red."
    )
    if state.toggle("Ablate each head in turn", "sweep", True):
        stats = ux.head_sweep(ctx.bundle_id, ids, how, ref)
        sweep = stats.increase
        present.plot(
            charts.layer_head_grid(
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


# ---- patching ---------------------------------------------------------------------------------


def patching_section() -> None:
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
        state.url_str("patch_tok", show_whitespace(label(s_token)), 40),
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
        chips = token_chips_html([(i, label(i)) for i in seq], marked={pos})
        st.html(f"<div><b>{name}</b></div>{chips}")
    result = ux.patching(ctx.bundle_id, clean, corrupted)
    a, w, top = (shown_label(i) for i in (result.answer, result.wrong, result.corrupt_top))
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
    st.markdown(iv.patching_claim(result, shown_label).text)
    rows = [f"into block {i}" for i in range(L)] + [f"after block {L - 1}"]
    present.plot(
        charts.patching_map(
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
        charts.layer_head_grid(
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


# ---- steering ---------------------------------------------------------------------------------


def steering_section() -> None:
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
    a = _prompts(a_text)
    b = _prompts(b_text)
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
        charts.steering_push(
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
                    {"raised": label(up), "by": dy, "lowered": label(down), "by ": dn}
                    for (up, dy), (down, dn) in zip(report.raised, report.lowered, strict=True)
                ],
                hide_index=True,
            )


def _prompts(text: str) -> tuple[tuple[int, ...], ...]:
    """Blocks separated by blank lines, each encoded and cut to the context; empty ones skipped."""
    blocks = [b.strip("\n") for b in text.split("\n\n")]
    encoded = [tok.encode(b)[-cfg.n_ctx :] for b in blocks if b.strip()]
    return tuple(tuple(e) for e in encoded if e)


# ---- positions --------------------------------------------------------------------------------


def positions_section() -> None:
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
        charts.surprisal_lines(
            ctx.labels,
            out["before"],
            out["after"],
            after,
            "How surprised the model is by each prompt token",
        )
    )
    what = "Removing the position embeddings" if mode == "remove" else "Shuffling the positions"
    effect_picture(out["effect"], f"Next token with the {after}", what)


def facts_section() -> None:
    """The training text's facts (a word its first letters almost always finish), and which
    layers the model needs to recall them: each layer's attention and MLP knocked out in turn."""
    from viz_model.analysis import facts as fa

    st.markdown(
        "Where does a model keep what it learned by heart? One picture from the lectures: "
        "attention moves information between tokens, the **MLPs act as a memory** of facts "
        "(Geva et al. 2021; the ROME edits of Meng et al. 2022 change a fact by changing one "
        "MLP). Here a *fact* is what a small model can know of its training text: a frequent "
        "word its first letters almost always finish (at least 90% of the words that start so "
        "are this word). The model is given the first letters and recalls the fact when its "
        "greedy continuation writes the rest exactly. Then each layer's attention, and each "
        "layer's MLP, is replaced by its mean over held-out text, one at a time, and the facts "
        "are counted again."
    )
    found = ux.fact_ablations(ctx.bundle_id)
    if found is None:
        st.info(
            f"“{ctx.name}” does not say what text it was trained on, so its facts cannot be "
            "found. Pick a model trained by this app."
        )
        return
    facts, result = found
    if result is None:
        st.info("No word of the training text is frequent and predictable enough to be a fact.")
        return
    known = int(result.clean.sum())
    lost = fa.lost_counts(result)
    present.plot(
        charts.facts_by_layer(lost["attention"], lost.get("mlp"), known), key="facts_layers"
    )
    st.markdown(fa.ablation_claim(result).text)
    st.caption(
        f"{len(facts)} facts, the most frequent words first. The margin is two standard "
        "deviations of a coin-flip count over the facts recalled: a difference smaller than "
        "that is not told from chance. Means taken over " + VAL_WORDS + "."
    )
    with st.expander("The facts, and which knock-outs lose them"):
        rows = {
            "fact (prompt|answer)": [f"{f.prompt.strip()}|{f.answer}" for f in facts],
            "in the text": [f.count for f in facts],
            "recalled": ["yes" if r else "no" for r in result.clean],
            "lost to attention": [
                ", ".join(str(i) for i in range(L) if c and not result.attention[i, j]) or "–"
                for j, c in enumerate(result.clean)
            ],
        }
        if result.mlp is not None:
            rows["lost to MLP"] = [
                ", ".join(str(i) for i in range(L) if c and not result.mlp[i, j]) or "–"
                for j, c in enumerate(result.clean)
            ]
        st.dataframe(rows, hide_index=True)


SECTIONS = {
    "Facts": facts_section,
    "Ablation": ablation_section,
    "Patching": patching_section,
    "Steering": steering_section,
    "Positions": positions_section,
}
SECTIONS[experiment]()
