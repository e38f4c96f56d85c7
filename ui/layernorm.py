"""The LayerNorm page's sections, one function each, drawn in order by pages/05_layernorm.py: the
idea and the formula (`intro`), what a model without a LayerNorm has instead (`needs_a_layernorm`),
one LayerNorm and one token taken apart (`one_layernorm`, a fragment drawing `choices`,
`token_through`, `every_token` and `numbers_behind_it`), where LayerNorm sits, before or after each
sublayer (`pre_versus_post`), the two models that differ only in that (`twins`), and the length of
their residual vectors layer by layer (`stream_length_profiles`).

Not here: the measures and claims (viz_model/analysis/layernorm.py), the choice of twins
(viz_model/analysis/contrasts.py), the chart builders (ui/charts/layernorm.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import streamlit as st

from serving import models
from ui import cache, classroom, parts, present, state
from ui.charts import layernorm as charts
from ui.frame import PageContext
from viz_model.analysis import contrasts as ct
from viz_model.analysis import layernorm as lnx
from viz_model.analysis import training as tr
from viz_model.analysis.residual import layer_labels

PROFILE_TITLE = "Mean length of the residual vector, layer by layer"


@dataclass(frozen=True)
class Chosen:
    """The LayerNorm and token the fragment takes apart, and that LayerNorm's numbers."""

    ln: str  # its module path, e.g. "blocks.0.ln1"
    named: str  # the same for people: "the LayerNorm of block 0, before attention"
    position: int
    stats: lnx.LNStats  # every token's x, normalized, y (T, D), mean, sigma (T,), gamma, beta (D,)


@dataclass(frozen=True)
class Measured:
    """One model of the pre-LN / post-LN pair, measured on the prompt in its own tokens."""

    name: str
    label: str  # "name (pre-LN)", the chart's legend
    lengths: lnx.StreamLengths
    stations: list[str]  # "embed", "after block 0", ...


@dataclass(frozen=True)
class Twins:
    """The pair that differs in where LayerNorm sits (None: no model here does), both measured
    (empty when one could not be), and the other models' config files (their training meta)."""

    pair: ct.Pair | None
    measured: list[Measured]
    raws: dict[str, dict]


# ---- cached measures ------------------------------------------------------------------------------


@cache.per_prompt
def ln_numbers(bundle_id: str, ids: tuple[int, ...]) -> dict[str, lnx.LNStats]:
    """Every LayerNorm of the model on the prompt, from one forward pass."""
    return lnx.all_stats(cache.bundle(bundle_id).model, list(ids))


@cache.per_prompt
def norm_profile(bundle_id: str, ids: tuple[int, ...]) -> np.ndarray:
    """(L + 1,) the mean length of the residual vector at each station of the model."""
    return lnx.resid_norm_profile(cache.bundle(bundle_id).model, list(ids))


@cache.per_prompt
def stream_lengths(bundle_id: str, ids: tuple[int, ...]) -> lnx.StreamLengths:
    """The residual stream's lengths and, post-LN, the closing gains (lnx.stream_lengths)."""
    return lnx.stream_lengths(cache.bundle(bundle_id).model, list(ids))


# ---- the idea -------------------------------------------------------------------------------------


def intro(ctx: PageContext) -> None:
    """Mean, sigma, gain and bias in words and the formula."""
    st.markdown(
        "Before attention or an MLP reads a token's vector, a **LayerNorm** puts it on a standard "
        "scale. It takes the token's $D$ numbers (here $D = d_\\text{model} = "
        f"{ctx.config.d_model}$), subtracts their **mean** $\\mu$ so they are centred on 0, and "
        "divides by their **standard deviation** $\\sigma$ (the typical distance from the mean) so "
        "they have spread 1. A small $\\varepsilon$ keeps the division safe when all numbers are "
        "equal. Then two learned vectors give the model its own scale back: each dimension $i$ is "
        "multiplied by a **gain** $\\gamma_i$ (gamma) and shifted by a **bias** $\\beta_i$ (beta). "
        "Each token is normalised on its own, never mixed with other tokens."
    )
    st.latex(r"\mathrm{LN}(x)_i = \frac{x_i - \mu}{\sigma}\,\gamma_i + \beta_i")
    st.latex(  # a second line: all three are wider than the column at 1024 px
        r"\mu = \frac{1}{D}\sum_{j=1}^{D} x_j, \qquad "
        r"\sigma = \sqrt{\frac{1}{D}\sum_{j=1}^{D} (x_j - \mu)^2 + \varepsilon}"
    )


def needs_a_layernorm(ctx: PageContext) -> None:
    """On a model with RMSNorm or no normalization, say what it has instead and stop the run: the
    page's views take a LayerNorm's mean, sigma and beta apart."""
    kind = ctx.config.norm_kind
    if kind == "layernorm":
        return
    if kind == "rmsnorm":
        st.info(
            "This model normalizes with **RMSNorm** (as Llama does), not LayerNorm: it skips the "
            "mean and the bias, dividing each vector by its root mean square "
            "$\\sqrt{\\tfrac{1}{D}\\sum_j x_j^2 + \\varepsilon}$ and then multiplying by the gain γ. "
            "This page takes LayerNorms apart: open a model with LayerNorm to see them (the "
            "Training page trains one with either, under Customise the shape)."
        )
        st.latex(
            r"\mathrm{RMSNorm}(x)_i = \frac{x_i}{\sqrt{\frac{1}{D}\sum_j x_j^2 + \varepsilon}}\,\gamma_i"
        )
        parts.contrast_link("rmsnorm", "RMSNorm beside LayerNorm, trained side by side")
    else:
        st.info(
            "This model has **no normalization** at all: nothing rescales the vectors between "
            "its layers, so there is no LayerNorm here to take apart. Train the same shape "
            "with and without one on the Training page and compare their curves on Compare "
            "models to see what it is for."
        )
        parts.contrast_link("layernorm-lr", "LayerNorm against none, across learning rates")
    st.stop()


# ---- one LayerNorm, one token ---------------------------------------------------------------------


def choices(ctx: PageContext) -> Chosen:
    """The LayerNorm (every one of the model, in forward order) and the token to take apart."""
    T = len(ctx.ids)
    names = lnx.layernorm_names(ctx.model)
    c1, c2 = st.columns([3, 2])
    ln = state.selectbox(
        "LayerNorm",
        "ln",
        names,
        names[0],
        format_func=lambda n: lnx.describe(ctx.model, n),
        container=c1,
        help="Every LayerNorm of this model, in the order the forward pass meets them.",
    )
    position = state.slider(
        "Token", "ln_pos", 0, T - 1, T - 1, container=c2, help="Which token's vector to take apart."
    )
    if T == 1:
        c2.markdown(f"Token: {ctx.labels[0]} (the prompt has one token)")
    stats = ln_numbers(ctx.bundle_id, tuple(ctx.ids))[ln]
    return Chosen(ln, lnx.title(ctx.model, ln), position, stats)


def token_through(ctx: PageContext, chosen: Chosen) -> None:
    """The chosen token's vector at each step as bars, then the formula with its real numbers,
    the mean and sigma before and after, and how long the output is."""
    s, named, ln, position = chosen.stats, chosen.named, chosen.ln, chosen.position
    x, n, y = s.x[position], s.normalized[position], s.y[position]  # (D,) each
    mu, sigma = float(s.mean[position]), float(s.sigma[position])
    st.subheader(f"Token {ctx.labels[position]} through {named} :small[:gray[`{ln}`]]")
    present.plot(cache.figure(charts.ln_steps, x, mu, sigma, n, s.gamma, s.beta, y))
    i = int(np.argmax(np.abs(x - mu)))  # the dimension furthest from the mean: the clearest example
    st.markdown(
        f"The same steps in numbers. The vector entering {named} has the "
        f"mean and standard deviation below; as an example, take dimension **{i}**, the one "
        "furthest from the mean (the longest bar in chart 1):"
    )
    mantissa, exponent = f"{s.eps:.0e}".split("e")
    eps_tex = rf"{mantissa} \times 10^{{{int(exponent)}}}"
    st.latex(
        rf"\mu = {mu:.4f}, \qquad \sigma = \sqrt{{\underbrace{{{sigma**2 - s.eps:.4g}}}_{{\text{{variance}}}}"
        rf" + \underbrace{{{eps_tex}}}_{{\varepsilon}}}} = {sigma:.4f}"
    )
    st.latex(  # aligned over three lines, so it fits a 1024 px column
        rf"\begin{{aligned}}\mathrm{{LN}}(x)_{{{i}}} &= \frac{{{x[i]:.4f} - ({mu:.4f})}}"
        rf"{{{sigma:.4f}}} \times {s.gamma[i]:.4f} + ({s.beta[i]:.4f})\\"
        rf"&= {n[i]:.4f} \times {s.gamma[i]:.4f} + ({s.beta[i]:.4f})\\ &= {y[i]:.4f}\end{{aligned}}"
    )
    m1, m2, m3, m4 = st.columns(4)
    # short labels: four metrics share a 1024 px column; the words are in help=
    m1.metric("μ before", f"{mu:.4f}", help="The mean of the vector entering the LayerNorm.")
    m2.metric("σ before", f"{sigma:.4f}", help="Its standard deviation (with ε).")
    m3.metric("mean after", f"{float(y.mean()):.4f}", help="mean(γ · normalized) + mean(β)")
    m4.metric("σ after", f"{float(y.std()):.4f}", help="The standard deviation of the output.")
    st.caption(
        f"After normalising, the mean is 0 and the standard deviation 1. Then γ and β move them: "
        f"the mean after is mean(γ · normalized) + mean(β) = {float((s.gamma * n).mean()):.4f} + "
        f"{float(s.beta.mean()):.4f}. With γ = 1 and β = 0 it would stay 0 and 1."
    )
    st.markdown(f"**How long is the output?** {lnx.output_length_claim(s).text}")


def every_token(ctx: PageContext, chosen: Chosen) -> None:
    """Each token's mean and sigma (the chosen one red), and all values before and after."""
    s = chosen.stats
    st.subheader("Every token of the prompt")
    st.markdown(
        "Each token gets its own μ and σ: a token whose vector is large (often the first token, or a "
        "frequent one) is divided by a large σ, so after the LayerNorm all tokens are on the same "
        "scale. The chosen token is red."
    )
    present.plot(
        cache.figure(charts.ln_stats_per_token, s.mean, s.sigma, ctx.labels, chosen.position)
    )
    present.plot(
        cache.figure(
            charts.ln_histograms,
            s.x,
            s.y,
            title=f"All {len(ctx.ids) * ctx.config.d_model:,} numbers of the prompt, before and "
            "after this LayerNorm",
        )
    )
    st.caption(
        "Left: the values entering the LayerNorm, at whatever scale the residual stream has reached. "
        "Right: after it, on the scale γ and β give them. Note the different x axes."
    )


def numbers_behind_it(ctx: PageContext, chosen: Chosen) -> None:
    """The chosen token dimension by dimension, and every token's mean and sigma, as tables."""
    s, position = chosen.stats, chosen.position
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            st.markdown(
                f"Token {ctx.labels[position]}, dimension by dimension ({chosen.named}, "
                f"`{chosen.ln}`):"
            )
            st.dataframe(
                {
                    "dimension": np.arange(ctx.config.d_model),
                    "x (before)": s.x[position].round(4),
                    "(x − μ) / σ": s.normalized[position].round(4),
                    "γ": s.gamma.round(4),
                    "β": s.beta.round(4),
                    "y (after)": s.y[position].round(4),
                },
                hide_index=True,
            )
            st.markdown("Every token's mean and standard deviation before the LayerNorm:")
            st.dataframe(
                {"token": ctx.labels, "μ": s.mean.round(4), "σ": s.sigma.round(4)}, hide_index=True
            )


# A fragment: choosing another LayerNorm or token reruns only this part of the page.
@classroom.view_fragment
def one_layernorm(ctx: PageContext) -> None:
    """The chosen LayerNorm and token: its steps, every token of the prompt, the numbers."""
    chosen = choices(ctx)
    token_through(ctx, chosen)
    every_token(ctx, chosen)
    numbers_behind_it(ctx, chosen)


# ---- pre-LN versus post-LN ------------------------------------------------------------------------


def pre_versus_post() -> None:
    """The two placements side by side in formulas, and what changes between them."""
    st.subheader("Before or after? Pre-LN versus post-LN")
    left, right = st.columns(2)
    left.markdown(
        "**Pre-LN** (GPT-2 and most models today): each sublayer reads a normalised *copy*; "
        "the residual stream itself is never normalised until the final LayerNorm.\n\n"
        "$x \\leftarrow x + \\mathrm{Attn}(\\mathrm{LN}_1(x))$  \n"
        "$x \\leftarrow x + \\mathrm{MLP}(\\mathrm{LN}_2(x))$  \n"
        "$\\text{logits} = \\mathrm{LN}_\\text{final}(x)\\,W_U$"
    )
    right.markdown(
        "**Post-LN** (the original 2017 Transformer): the LayerNorm sits *on* the residual "
        "stream, after each addition, so the stream is renormalised twice per block.\n\n"
        "$x \\leftarrow \\mathrm{LN}_1(x + \\mathrm{Attn}(x))$  \n"
        "$x \\leftarrow \\mathrm{LN}_2(x + \\mathrm{MLP}(x))$  \n"
        "$\\text{logits} = x\\,W_U$"
    )
    st.markdown(
        "What changes: in pre-LN the stream is a plain sum, as long as that sum comes to; no "
        "LayerNorm bounds it until the final one, and a gradient has a clean path straight from the "
        "loss to the embeddings, which is why deep pre-LN models train stably without a "
        "learning-rate warm-up. In post-LN the stream after each block is a LayerNorm's output, so "
        "its length is set by that LayerNorm's gain (about ‖γ‖, as above), not by the sum of what "
        "came before; and every path from the loss goes through all LayerNorms, which makes deep "
        "post-LN models harder to train. The chart below shows the first effect: the average "
        "length of the residual vector at each point of two models, on your prompt."
    )
    parts.contrast_links(
        ("norm", "Pre-LN beside post-LN, trained side by side"),
        ("rmsnorm", "RMSNorm (Llama) beside LayerNorm"),
    )
    parts.contrast_link(
        "layernorm-lr", "What LayerNorm is for: with and without, across learning rates"
    )


def _config_file(path: Path) -> dict | None:
    """A bundle's config.json, or None when it is missing or holds no model config."""
    try:
        raw = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return raw if isinstance(raw, dict) and isinstance(raw.get("model"), dict) else None


def twins(ctx: PageContext) -> Twins:
    """Two models that differ only in where LayerNorm sits (the one on screen when it has such a
    twin), each measured on the prompt in its own tokens; none measured when one cannot be (a
    broken bundle, a prompt it reads as no tokens): compare with nothing rather than fail."""
    found = models.discover()
    raws = {n: r for n, p in found.items() if n != ctx.name and (r := _config_file(p)) is not None}
    configs = {ctx.name: ctx.config.to_dict()} | ct.shape_configs(raws)
    pair = ct.like_pair(ctx.name, configs, "norm")
    measured: list[Measured] = []
    for name in () if pair is None else (pair.first, pair.second):
        if name == ctx.name:
            bid, other_ids = ctx.bundle_id, list(ctx.ids)
        else:
            bid = models.bundle_id(found[name])
            try:
                other_bundle = cache.bundle(bid)
            except Exception:  # a broken bundle: compare with nothing rather than fail the page
                return Twins(pair, [], raws)
            other_ids = other_bundle.tokenizer.encode(ctx.prompt)[-other_bundle.config.n_ctx :]
        if not other_ids:
            return Twins(pair, [], raws)
        lengths = stream_lengths(bid, tuple(other_ids))
        label = f"{name} ({lengths.norm}-LN)"
        measured.append(Measured(name, label, lengths, layer_labels(configs[name]["n_layer"])))
    return Twins(pair, measured, raws)


def _tokens_seen(ctx: PageContext, found: Twins) -> list[str]:
    """ "name N" for each model of the pair: the tokens it read in training (by its snapshot's
    step, for a snapshot on screen)."""
    seen = []
    for n in (found.pair.first, found.pair.second):
        meta = ctx.bundle.meta if n == ctx.name else (found.raws[n].get("meta") or {})
        t = meta.get("tokens_seen")
        if n == ctx.name and ctx.bundle.step is not None:  # a snapshot: what it had read by then
            t = tr.tokens_at(meta, ctx.bundle.train_config, ctx.config.n_ctx, ctx.bundle.step)
            n = f"{n} (step {ctx.bundle.step:,})"
        seen.append(f"{n} {t:,.0f}" if isinstance(t, int | float) else f"{n} not recorded")
    return seen


def _pair_profiles(ctx: PageContext, found: Twins) -> None:
    """Both models' lengths in one chart, what else they differ in, and the claims about them."""
    pair, measured = found.pair, found.measured
    if pair.differs:
        st.markdown(
            f"No model here differs from **{pair.first}** only in where LayerNorm sits, so the "
            f"nearest one is set beside it; they also differ in {', '.join(pair.differs)}. Read "
            "the difference between the lines with that in mind."
        )
    elif ctx.name not in (pair.first, pair.second):
        st.markdown(
            f"No model here differs from **{ctx.name}** only in where LayerNorm sits, so the "
            f"chart compares **{pair.first}** and **{pair.second}**, which differ in that alone "
            "(the same layers, width, heads, vocabulary and every other setting of the model)."
        )
    profiles = {m.label: m.lengths.lengths for m in measured}
    stations = {m.label: m.stations for m in measured}
    present.plot(cache.figure(charts.norm_profiles, profiles, stations, title=PROFILE_TITLE))
    pre = next((m.label, m.lengths) for m in measured if m.lengths.norm == "pre")
    post = next((m.label, m.lengths) for m in measured if m.lengths.norm == "post")
    st.markdown(  # each line a claim computed from the lengths in the chart
        f"On your prompt:\n- {lnx.pre_post_claim(pre, post).text}\n"
        f"- **{pre[0]}**: {lnx.growth_claim(pre[1].lengths).text}\n"
        f"- **{post[0]}**: {lnx.post_ln_gain_claim(post[1]).text}"
    )
    st.caption(
        "The same prompt, in each model's own tokens. Tokens seen in training: "
        + "; ".join(_tokens_seen(ctx, found))
        + "."
    )


def _one_profile(ctx: PageContext) -> None:
    """The model on screen alone, and how to train the other placement."""
    cfg = ctx.config
    other = "post" if cfg.norm == "pre" else "pre"
    label = f"{ctx.name} ({cfg.norm}-LN)"
    present.plot(
        cache.figure(
            charts.norm_profiles,
            {label: norm_profile(ctx.bundle_id, tuple(ctx.ids))},
            {label: layer_labels(cfg.n_layer)},
            title=PROFILE_TITLE,
        )
    )
    st.info(
        f"Only {cfg.norm}-LN models are available here, so there is just one line. A {other}-LN "
        "model can be trained from the command line, e.g. `python -m viz_model.training --corpus "
        f"shakespeare --tokenizer char --preset small --norm {other} --minutes 5 --out "
        f"runs/shakespeare-{other}ln`; it then appears in the model picker and beside this one."
    )


def stream_length_profiles(ctx: PageContext, found: Twins) -> None:
    """The residual vector's mean length layer by layer: the pair's two lines with their claims,
    or the model on screen alone when no pair could be measured."""
    if len(found.measured) == 2:
        _pair_profiles(ctx, found)
    else:
        _one_profile(ctx)
