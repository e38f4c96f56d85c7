"""The Residual stream page's sections, one function each, drawn in order by
pages/04_residual_stream.py: the idea and the formula for this model's kind of stream (`intro`),
the logit lens and the norms of one cached run (`lens_report`), the norm after each layer
(`norms`), the logit lens grid (`logit_lens`), and, in a fragment, one position followed through
the layers (`follow_position`) with direct logit attribution of a token there and the numbers
behind it (`explain_token`).

Not here: the measures and claims (viz_model/analysis/residual.py), the chart builders
(ui/charts/residual.py).
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from ui import cache, classroom, parts, present, state
from ui.charts import residual as charts
from ui.charts.common import plotly_text, show_whitespace
from ui.frame import PageContext
from viz_model.analysis import residual as rs

LENS_MAX_T = 24  # positions shown at once in the lens grid: one 12 px character a cell
LENS_MAX_T_PIECES = 12  # ... when a token is often longer (BPE, words): cells need room to read
# How the final norm (cfg.norm_kind) comes in before the unembedding, in the intro's words.
FINAL_NORM = {
    "layernorm": "The final LayerNorm rescales it and",
    "rmsnorm": "The final RMSNorm rescales it and",
    "none": "With no normalization in this model,",
}


# ---- cached results -----------------------------------------------------------------------------


@cache.per_prompt
def lens_numbers(bundle_id: str, ids: tuple[int, ...]) -> rs.LensReport:
    return rs.lens_report(cache.bundle(bundle_id).model, list(ids))


@cache.per_prompt
def attribution(bundle_id: str, ids: tuple[int, ...], position: int, token: int) -> rs.Attribution:
    # One forward pass per prompt (cached by ui.cache.activations); each position/token is then
    # a few dot products.
    model = cache.bundle(bundle_id).model
    acts = cache.activations(bundle_id, ids, tuple(rs.attribution_names(model)))
    return rs.attribution_from_activations(model, acts, position, token)


def token_name(ctx: PageContext, i: int) -> str:
    """Token id `i` as the charts and tables show it (whitespace made visible)."""
    return show_whitespace(ctx.tokenizer.id_to_token(int(i)))


# ---- the idea -----------------------------------------------------------------------------------


def how_it_adds(ctx: PageContext) -> str:
    """What each layer does to the stream in this model: adds to a sum (pre-LN), adds and is
    renormalised (post-LN), or replaces it (no residual connections)."""
    cfg = ctx.config
    if not cfg.residual:
        return (
            "In this model the **residual connections are switched off**: each attention layer and "
            "each MLP *reads* the vector and *replaces* it with its output, so nothing carries the "
            "embeddings or an earlier layer's work past the next layer. The **unembedding** $W_U$ "
            "turns the last vector into one score, a **logit**, per vocabulary token. Train the "
            "same shape with and without them on the Training page and compare the curves."
        )
    if rs.stream_is_a_sum(cfg):
        return (
            "Nothing overwrites it: the embeddings start it, and each attention layer and each MLP "
            "*reads* it and *adds* its output back. So the vector after the last block is just the "
            f"sum of all those outputs. {FINAL_NORM[cfg.norm_kind]} the **unembedding** "
            "$W_U$ (a $d_\\text{model} \\times$ vocabulary matrix) turns it into one score, a "
            "**logit**, per vocabulary token; softmax turns the logits into probabilities."
        )
    return (
        "Each attention layer and each MLP *reads* it and *adds* its output back, and in this "
        "**post-LN** model a LayerNorm then rescales the result after every addition. So the "
        "vector after the last block is a renormalised mixture of the outputs, not a plain sum. "
        "The **unembedding** $W_U$ (a $d_\\text{model} \\times$ vocabulary matrix) turns it "
        "into one score, a **logit**, per vocabulary token; softmax turns the logits into "
        "probabilities."
    )


def stream_formula(ctx: PageContext) -> str:
    """The stream's update and the logits, in LaTeX, for this model's kind of stream."""
    if not ctx.config.residual:
        return r"x \leftarrow \text{attn}(x), \quad x \leftarrow \text{mlp}(x), \quad \text{logits} = x\, W_U"
    if rs.stream_is_a_sum(ctx.config):
        return (
            r"\begin{gathered}x_{\text{final}} = \underbrace{x_{\text{embed}} + x_{\text{pos}}}"
            r"_{\text{embeddings}} + \sum_{l} \text{attn}_l + \sum_{l} \text{mlp}_l\\"
            r"\text{logits} = \text{LN}_{\text{final}}(x_{\text{final}})\, W_U\end{gathered}"
        )
    return (
        r"\begin{gathered}x \leftarrow \text{LN}_1\big(x + \text{attn}(x)\big), \quad "
        r"x \leftarrow \text{LN}_2\big(x + \text{mlp}(x)\big)\\"
        r"\text{logits} = x\, W_U\end{gathered}"
    )


def intro(ctx: PageContext) -> None:
    """The residual stream in words and the formula; where the stream is no sum (post-LN, no
    residual connections), a warning that section 3 is not shown."""
    cfg = ctx.config
    st.markdown(
        "Every token carries a vector of $d_\\text{model}$ numbers through the model, the "
        "**residual stream**. "
        + how_it_adds(ctx)
        + f" This model has {cfg.n_layer} blocks of width {cfg.d_model}"
        + (" and no MLPs (attention only)." if cfg.attn_only else ".")
    )
    st.latex(stream_formula(ctx))
    if not rs.stream_is_a_sum(cfg):
        why = "is post-LN" if cfg.residual else "has no residual connections"
        st.warning(
            f"Because this model {why}, the final vector cannot be split into one share per "
            "component: the logit lens below still works, direct logit attribution (section 3) is "
            "not shown."
        )


def lens_report(ctx: PageContext) -> rs.LensReport:
    """The logit lens and the residual norms of the prompt (one cached run)."""
    return lens_numbers(ctx.bundle_id, tuple(ctx.ids))


# ---- 1. the norm ------------------------------------------------------------------------------


def norms(ctx: PageContext, report: rs.LensReport) -> None:
    """The residual vector's length after each layer, with what it says (its claim)."""
    cfg = ctx.config
    st.subheader("1. How long is the residual vector after each layer?")
    st.markdown(
        "The **norm** $\\lVert x \\rVert = \\sqrt{\\sum_i x_i^2}$ is the length of a token's "
        "vector. Read each column downwards: the row *embed* is the stream before block 0, each "
        "later row the stream after one more block. "
        + (
            "In a pre-LN model like this one each block adds a vector to the stream. One that "
            "points the same way or sideways lengthens it; one that points partly against it can "
            "shorten it. So the norm often grows from block to block, but need not. "
            + rs.growth_claim(rs.mean_norms(report.norms)).text
            if rs.stream_is_a_sum(cfg)
            else "Without residual connections each row is one layer's own output, not a running "
            "sum."
            if not cfg.residual
            else "In a post-LN model like this one every block ends in a LayerNorm, which rescales "
            "each token to about the length of its gain ‖γ‖ (the LayerNorm page shows why); its "
            "gains γ and biases β can still leave tokens of different lengths. "
            + rs.spread_claim(report.norms).text
        )
    )
    present.plot(
        cache.figure(
            charts.resid_norm_heatmap,
            report.norms,
            report.stations,
            ctx.labels,
            "Norm of the residual stream",
        )
    )


# ---- 2. the logit lens ------------------------------------------------------------------------


def logit_lens(ctx: PageContext, report: rs.LensReport) -> None:
    """Each layer's top next-token guess at each position, a window of positions at a time."""
    cfg = ctx.config
    st.subheader("2. The logit lens: what would the model say if it stopped here?")
    st.markdown(
        "Take the residual stream after any block and send it straight through the final "
        "LayerNorm and the unembedding $W_U$, as if the remaining blocks were not there"
        + (
            " (a post-LN model has no final LayerNorm: its last block already ends in one). "
            if cfg.norm == "post" and cfg.norm_kind != "none"
            else " (this model has no normalization: the unembedding alone). "
            if cfg.norm_kind == "none"
            else ". "
        )
        + "Each cell "
        "shows the most likely next token read out at that layer (row) and position (column), "
        "coloured by its probability. The last row is the model's real prediction. **Bold** "
        "marks a guess that matches the token that really comes next in your prompt."
    )
    if not cfg.causal:
        st.warning(
            "This model has **no causal mask**: at every position it also sees the token that "
            "comes next, so a bold cell here is copying the answer it can see, not predicting it."
        )
    st.latex(
        r"\text{lens}_l(t) = \operatorname{softmax}\big(\text{LN}_{\text{final}}(x_l(t))\, W_U\big)"
        if ctx.model.ln_final is not None
        else r"\text{lens}_l(t) = \operatorname{softmax}\big(x_l(t)\, W_U\big)"
    )
    cols = lens_window(ctx)
    T, lens = len(ctx.ids), report.lens
    next_pieces = [ctx.pieces[t + 1] if t + 1 < T else None for t in range(T)]
    present.plot(
        cache.figure(
            charts.logit_lens_grid,
            lens.top_probs[:, cols],
            [[token_name(ctx, i) for i in row[cols]] for row in lens.top_ids],
            report.stations,
            ctx.labels[cols],
            next_tokens=next_pieces[cols],
            title="Top next-token guess at each layer",
        )
    )


def lens_window(ctx: PageContext) -> slice:
    """The positions the lens grid shows: all of a short prompt, else a window a slider moves
    (the last positions first)."""
    first, window = 0, LENS_MAX_T if ctx.tokenizer.kind == "char" else LENS_MAX_T_PIECES
    if len(ctx.ids) > window:
        last = len(ctx.ids) - window  # the window's last possible first position
        first = state.slider(
            f"First position shown (the grid shows {window} at a time)",
            "lens_from",
            0,
            last,
            last,
        )
    return slice(first, first + window)


# ---- one position through the layers, then who pushed its prediction -------------------------
# Fragments: moving the position slider reruns only this part, choosing a token only section 3.


@classroom.view_fragment
def follow_position(ctx: PageContext, report: rs.LensReport) -> None:
    """The position slider, how sure each layer is of the final prediction there, then section 3
    (direct logit attribution) for it."""
    T, lens = len(ctx.ids), report.lens
    position = state.slider(
        "Position to look at",
        "pos",
        0,
        T - 1,
        T - 1,
        help="Which token's prediction to follow through the layers (and to attribute below).",
    )
    final_id = int(lens.final_ids[position])
    present.plot(
        cache.figure(
            charts.prediction_through_layers,
            lens.final_probs[:, position],
            lens.top_probs[:, position],
            [token_name(ctx, i) for i in lens.top_ids[:, position]],
            report.stations,
            token_name(ctx, final_id),
            title=f"After {plotly_text(ctx.labels[position])}: how sure is each layer of the final prediction?",
        )
    )
    st.caption(
        f"Red: the probability each layer gives to “{token_name(ctx, final_id)}”, the model's "
        f"final prediction after token {ctx.labels[position]}. Dotted grey: each layer's own "
        "favourite (its top token written above the point)."
    )
    st.subheader("3. Direct logit attribution: who pushed this token?")
    if not rs.stream_is_a_sum(ctx.config):
        st.info(
            "Not available for this model (see the note at the top). Pick a pre-LN model with "
            "residual connections in the sidebar to see it."
        )
    explain_token(ctx, report, position)


@classroom.view_fragment
def explain_token(ctx: PageContext, report: rs.LensReport, position: int) -> None:
    """Section 3 for `position` where the stream is a sum, then the numbers behind the page."""
    att = draw_attribution(ctx, report, position) if rs.stream_is_a_sum(ctx.config) else None
    numbers_behind(ctx, report, position, att)


# ---- 3. direct logit attribution ----------------------------------------------------------------


def draw_attribution(ctx: PageContext, report: rs.LensReport, position: int) -> rs.Attribution:
    """The linearised final LayerNorm in words and the formula, the token to explain, and each
    component's and each head's share of its logit."""
    st.markdown(
        "Because the final stream is a sum, its logit for a token can be split into one share per "
        "component: the embeddings, each attention layer (and inside it each **head**), and each "
        "MLP. The one non-linear step, the final LayerNorm, is **linearised**: we keep the mean and "
        "the scale $\\sigma$ it really measured at this position, so each component $c$ is centred "
        "(minus its own mean), divided by that $\\sigma$, multiplied by the LayerNorm's gain $\\gamma$ "
        "and dotted with the token's column of $W_U$. The shares plus the LayerNorm's bias term "
        "$\\beta \\cdot W_U[:, \\text{token}]$ add up to the logit exactly."
    )
    st.latex(
        r"\begin{aligned}\text{logit} = &\sum_{c} \frac{c - \operatorname{mean}(c)}{\sigma}"
        r" \odot \gamma \cdot W_U[:, \text{token}]\\ &+ \beta \cdot W_U[:, \text{token}]"
        r"\end{aligned}"
    )
    token = token_to_explain(ctx, report, position)
    att = attribution(ctx.bundle_id, tuple(ctx.ids), position, token)
    present.plot(
        cache.figure(
            charts.attribution_waterfall,
            att.labels,
            att.values,
            att.ln_bias,
            att.logit,
            title=f"Who pushes the logit of “{plotly_text(token_name(ctx, token))}” after "
            f"{plotly_text(ctx.labels[position])}?",
        )
    )
    st.caption(
        "Each bar is one component's share: red pushes the token up, blue down. The last bar is the "
        "logit they add up to (the LN bias bar is the final LayerNorm's β term)."
    )
    present.plot(
        cache.figure(
            charts.head_attribution_heatmap,
            att.head_values,
            title="The attention layers split by head (without the output bias)",
        )
    )
    return att


def token_to_explain(ctx: PageContext, report: rs.LensReport, position: int) -> int:
    """The output token whose logit is attributed: one of the 10 most likely at `position`, or
    the real next token, each shown with its probability."""
    logits = report.logits[position]  # (V,)
    options = [int(i) for i in np.argsort(-logits)[:10]]
    actual_next = ctx.ids[position + 1] if position + 1 < len(ctx.ids) else None
    if actual_next is not None and actual_next not in options:
        options.append(int(actual_next))
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()

    def option_label(i: int) -> str:
        note = " (the real next token)" if i == actual_next else ""
        return f"“{token_name(ctx, i)}”  p = {probs[i]:.3f}{note}"

    return state.selectbox(
        "Output token to explain",
        "token",
        options,
        options[0],
        format_func=option_label,
        help="The 10 most likely next tokens at this position, and the real next token.",
    )


# ---- the numbers --------------------------------------------------------------------------------


def numbers_behind(
    ctx: PageContext, report: rs.LensReport, position: int, att: rs.Attribution | None
) -> None:
    """The attribution's shares, the lens at `position` and the residual norms, as tables (built
    only while open)."""
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            if att is not None:
                attribution_tables(ctx, position, att)
            lens = report.lens
            final_id = int(lens.final_ids[position])
            st.markdown(
                f"The logit lens at position {position}: each layer's top guess and its probability."
            )
            st.dataframe(
                {
                    "station": report.stations,
                    "top guess": [token_name(ctx, i) for i in lens.top_ids[:, position]],
                    "p(top guess)": lens.top_probs[:, position].round(4),
                    f"p(“{token_name(ctx, final_id)}”)": lens.final_probs[:, position].round(4),
                },
                hide_index=True,
            )
            st.markdown("The residual norms (rows: stations, columns: positions):")
            st.dataframe(
                {"station": report.stations}
                | {lab: report.norms[:, t].round(3) for t, lab in enumerate(ctx.labels)},
                hide_index=True,
            )


def attribution_tables(ctx: PageContext, position: int, att: rs.Attribution) -> None:
    """Each component's share of the logit (they add up to it), then each head's."""
    st.markdown(
        f"Shares of the logit of “{token_name(ctx, att.token)}” at position {position}. Their sum "
        f"plus the LN bias term is **{att.values.sum() + att.ln_bias:.4f}**; the model's own "
        f"logit is **{att.logit:.4f}**."
    )
    st.dataframe(
        [
            {"component": lab, "share of the logit": float(v)}
            for lab, v in zip(att.labels, att.values, strict=True)
        ]
        + [{"component": "final LN bias (β · W_U)", "share of the logit": att.ln_bias}],
        hide_index=True,
    )
    st.markdown("Each head's share (heads + the output bias = the attention layer's share):")
    st.dataframe(
        [
            {
                "layer": i,
                **{f"head {h}": float(v) for h, v in enumerate(row)},
                "output bias": float(att.attn_bias[i]),
            }
            for i, row in enumerate(att.head_values)
        ],
        hide_index=True,
    )
