"""The Next token page's sections, one function each, drawn in order by pages/07_next_token.py:
the idea, softmax with temperature, top-k and top-p (`intro`), the model's numbers on the prompt
(`prompt`, cached), the sampling and view controls (`controls`), the distribution they reshape
(`distribution`), its entropy (`entropy`), how surprised the model is by each prompt token
(`surprisal`), the same numbers named as the training loss, cross-entropy, beside accuracy and the
untrained twin (`loss_named`), and the numbers behind it (`numbers_behind_it`).

Not here: the measures and claims (viz_model/analysis/next_token.py), the sampling sliders shared
with Generation (ui/controls.py), the training-text sections (ui/training_text.py), the chart
builders (ui/charts/next_token.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np
import streamlit as st

from ui import cache, parts, present, state
from ui import controls as sampling
from ui.charts import next_token as charts
from ui.charts.common import plotly_text, show_whitespace
from ui.frame import PageContext
from viz_model.analysis import next_token as nt
from viz_model.analysis.tokens import token_text
from viz_model.model.sampling import Distribution, SamplingSettings


@dataclass(frozen=True)
class Prompt:
    """The logits after the last prompt token (V,), each prompt token's surprisal (T,) and whether
    the model's top token there was that token (T,; 1.0 or 0.0, NaN for the first)."""

    last_logits: np.ndarray
    surprisal: np.ndarray
    hits: np.ndarray


@dataclass(frozen=True)
class View:
    """The sampling settings and how the distribution is shown."""

    settings: SamplingSettings
    n_bars: int
    log_y: bool


@dataclass(frozen=True)
class Shown:
    """The distribution the sampler draws from and the most likely tokens the chart shows."""

    dist: Distribution
    top: nt.TopTokens


@cache.per_prompt
def prompt_numbers(
    bundle_id: str, ids: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The logits after the last prompt token (V,), each prompt token's surprisal (T,) and top-1
    agreement (T,)."""
    logits = nt.prompt_logits(cache.bundle(bundle_id).model, list(ids))
    return logits[-1], nt.surprisal(logits, list(ids)), nt.top_is_next(logits, list(ids))


@cache.per_prompt
def twin_surprisal(bundle_id: str, ids: tuple[int, ...]) -> np.ndarray:
    """Each prompt token's surprisal under the model's untrained twin (analysis/untrained.py)."""
    logits = nt.prompt_logits(cache.untrained(bundle_id).model, list(ids))
    return nt.surprisal(logits, list(ids))


def intro() -> None:
    """Logits, softmax, temperature, top-k and top-p, in words and the formula."""
    st.markdown(
        "After reading the prompt, the model gives every token of its vocabulary a score, its "
        "**logit** $z_i$. The **softmax** turns the scores into probabilities that add up to 1. "
        "Before that, the scores are divided by the **temperature** $T$: below 1 the distribution "
        "sharpens (the most likely token gets likelier still), above 1 it flattens, and $T = 0$ "
        "always takes the most likely token (*greedy*). **Top-k** keeps only the $k$ most likely "
        "tokens, **top-p** (nucleus) keeps the fewest most likely tokens whose probabilities add "
        "up to at least $p$; the cut tokens get probability 0 and the rest are scaled up again "
        "(*renormalised*) to add up to 1. With both on, **top-k is applied first** and top-p then "
        "works on the tokens top-k kept, renormalised over them, so together they can keep fewer "
        "tokens than either alone."
    )
    st.latex(r"p_i = \frac{\exp(z_i / T)}{\sum_{j=1}^{V} \exp(z_j / T)}")


def prompt(ctx: PageContext) -> Prompt:
    """The model's numbers on the prompt (one cached forward pass)."""
    return Prompt(*prompt_numbers(ctx.bundle_id, tuple(ctx.ids)))


def controls(ctx: PageContext) -> View:
    """Temperature, top-k and top-p (shared with Generation), then the bars shown and log scale."""
    settings = sampling.sampling_controls(ctx.tokenizer.vocab_size, st.columns(3, gap="large"))
    # the view settings on a row of their own: a fourth narrow column at 1024 px hid their labels
    c4, c5, _ = st.columns(3, gap="large", vertical_alignment="bottom")
    n_bars = state.select_slider(
        "Bars shown", "bars", [10, 15, 20, 30, 50], 20, container=c4, help="The most likely tokens."
    )
    log_y = state.toggle(
        "Log scale",
        "log",
        False,
        container=c5,
        help="Shows the small probabilities too, where temperature and the cuts change the most.",
    )
    return View(settings, n_bars, log_y)


def distribution(ctx: PageContext, numbers: Prompt, view: View) -> Shown:
    """The most likely next tokens before and after the settings, and what top-k then top-p
    keep."""
    V = ctx.tokenizer.vocab_size
    settings = view.settings
    dist = nt.distribution(numbers.last_logits, settings)
    top = nt.top_tokens(dist, view.n_bars, partial(token_text, ctx.tokenizer))
    last = show_whitespace(ctx.pieces[-1])
    present.plot(  # built once per distinct view and shared: a class's followers draw the same one
        cache.figure(
            charts.distribution_bars,
            top.labels,
            top.base_probs,
            top.scaled_probs,
            top.probs,
            top.kept,
            log_y=view.log_y,
            title=f"What comes after “{plotly_text(last)}”? The {len(top.ids)} most likely of {V:,} tokens",
        ),
    )
    n_kept = int(dist.kept.sum())
    st.caption(
        f"Green bars: probabilities after the temperature; grey bars: tokens top-k/top-p cut "
        f"(they can no longer be picked); dark blue: the renormalised probabilities the sampler "
        f"draws from; red ticks: the model's own probabilities (T = 1, nothing cut). "
        f"{n_kept:,} of {V:,} tokens can still be picked."
    )

    if settings.temperature > 0 and settings.top_k > 0 and settings.top_p < 1:
        cuts = nt.cut_counts(numbers.last_logits, settings)
        st.markdown(
            f"**Top-k first, then top-p.** Top-k keeps the {cuts.top_k} most likely tokens. Top-p "
            f"then renormalises those {cuts.top_k} and keeps the fewest whose probabilities add up "
            f"to at least {settings.top_p:g}: **{cuts.both} token{'s' * (cuts.both != 1)} "
            f"survive{'s' * (cuts.both == 1)}**. Top-p alone, on all {V} tokens, would keep "
            f"{cuts.top_p}."
        )
    return Shown(dist, top)


def entropy(ctx: PageContext, shown: Shown) -> None:
    """The distribution's entropy in nats and bits, and the fair pick it equals."""
    V = ctx.tokenizer.vocab_size
    h_nats = shown.dist.entropy
    m1, m2, m3 = st.columns(3)
    m1.metric("Entropy (nats)", f"{h_nats:.3f}")
    m2.metric("Entropy (bits)", f"{nt.entropy_bits(h_nats):.3f}")
    m3.metric(  # a short label (a third of a 1024 px column); the meaning in help=
        "Fair pick among",
        # Past 1,000 the unit is dropped: with GPT-2's 50,257 tokens "43032.3 tokens" was cut short
        f"{fair:,.0f}" if (fair := math.exp(h_nats)) >= 1000 else f"{fair:.1f} tokens",
        help="exp(entropy): the distribution is as uncertain as a fair pick among this many tokens.",
    )
    st.markdown(
        r"**Entropy** $H = -\sum_i p_i \log p_i$ measures how spread out the distribution the "
        f"sampler uses is: 0 means the next token is certain; {math.log(V):.2f} nats "
        f"({math.log2(V):.2f} bits) would mean all {V:,} tokens are equally likely. "
        "In bits, it is (to within one question) the average number of yes/no questions the best "
        "questioning needs to learn which token comes."
    )


def surprisal(ctx: PageContext, numbers: Prompt) -> None:
    """Each prompt token's surprisal as chips, and the prompt's perplexity with its claim."""
    st.subheader("How surprised is the model by your prompt?")
    st.markdown(
        "Run the same question at every position: how likely did the model find the token that "
        "actually came next? Its **surprisal** is $-\\log p$: near 0 when the model expected it, "
        "large when it did not. The first token has none, because nothing came before it. The "
        "**perplexity** of the whole text is $e$ to the mean surprisal."
    )
    st.latex(r"\text{surprisal}(x_t) = -\log p(x_t \mid x_{<t})")
    st.latex(  # its own line: side by side they are wider than the column at 1024 px
        r"\text{perplexity} = \exp\Big(\frac{1}{T-1}\sum_{t=2}^{T} -\log p(x_t \mid x_{<t})\Big)"
    )
    st.html(charts.surprisal_chips(ctx.pieces, numbers.surprisal))
    ppl = nt.perplexity(numbers.surprisal)
    if math.isnan(ppl):
        st.info("The prompt has one token: type at least two to measure surprisal.")
    else:
        p1, p2 = st.columns([1, 3])
        p1.metric("Perplexity", f"{ppl:.2f}")
        claim = nt.perplexity_claim(ppl, ctx.tokenizer.vocab_size, ctx.config.causal)
        p2.markdown(claim.text + " Hover a token to see its numbers.")

    parts.page_link(
        "Using_a_model",
        "One forward pass gives all these surprisals at once (teacher forcing); scoring answers",
        use_part="forcing",
    )


MAX_LOSS_BARS = 30  # positions the loss chart shows (the latest); the loss is over all of them


def loss_named(ctx: PageContext, numbers: Prompt) -> None:
    """The surprisals named: their mean is the cross-entropy, the loss training minimised
    (maximum likelihood), against ln V and the untrained twin, with accuracy beside it."""
    st.subheader("The loss, named: cross-entropy")
    st.markdown(
        "These surprisals are exactly what training measured. At every position the model gave "
        "the token that actually came next a probability $p(\\text{next})$; its $-\\ln p$ is "
        "that token's **negative log-likelihood**, and their mean over a text is the "
        "**cross-entropy** of the text under the model: the **loss** the training minimised "
        "(there on training text, here on your prompt). Making it small is **maximum "
        "likelihood**: training moved the weights to make these $p(\\text{next})$ as large as it "
        "could on the training text."
    )
    st.latex(r"L = -\frac{1}{T-1}\sum_{t=2}^{T} \ln p(x_t \mid x_{<t})")
    V = ctx.tokenizer.vocab_size
    ours = nt.loss_numbers(numbers.surprisal, numbers.hits, V)
    if ours.nll.size == 0:
        st.info("The prompt has one token: type at least two to measure the loss.")
        return
    twin_loss = nt.mean_loss(twin_surprisal(ctx.bundle_id, tuple(ctx.ids)))
    m1, m2, m3 = st.columns(3)
    m1.metric("Loss (nats per token)", f"{ours.loss:.3f}", help="Mean −ln p(next): cross-entropy")
    m2.metric("Perplexity e^loss", f"{ours.perplexity:,.2f}")
    m3.metric("Accuracy (top-1)", f"{ours.accuracy:.0%}")
    m4, m5, _ = st.columns(3)
    m4.metric(
        "Blind guess ln V", f"{ours.blind:.3f}", help=f"Every one of {V:,} tokens equally likely"
    )
    m5.metric(
        "Random weights",
        f"{twin_loss:.3f}",
        help=f"Its untrained twin: {cache.untrained(ctx.bundle_id).source}",
    )
    n = ours.nll.size
    shown = min(n, MAX_LOSS_BARS)
    labels = ctx.labels[len(ctx.labels) - shown :]  # each bar is named by the token that came next
    present.plot(
        cache.figure(
            charts.nll_bars,
            labels,
            ours.nll[n - shown :],
            ours.hits[n - shown :],
            ours.loss,
            ours.blind,
            title="−ln p(next) at each position"
            + (f": the last {shown} of {n}" if shown < n else ""),
        ),
        key="nt_loss_bars",
    )
    st.caption(
        "Each bar is the token that came next, and how surprised the model was by it; green where "
        "its most likely token was that token. "
        + (
            f"Only the last {shown} of the {n} positions are drawn; every number is over all {n}."
            if shown < n
            else ""
        )
    )
    claim = nt.cross_entropy_claim(ours.loss, twin_loss, V, ctx.config.causal)
    st.markdown(claim.text)
    st.markdown(
        nt.accuracy_text(ours)
        + " Training uses the log loss, not accuracy: if $p(\\text{next})$ rises from 0.2 to "
        f"0.4 without becoming the top token, accuracy does not move, while $-\\ln p$ falls "
        f"from {-math.log(0.2):.2f} to {-math.log(0.4):.2f} nats; and the log loss changes "
        "smoothly with every weight (it is differentiable), so its gradient says which way to "
        "move them."
    )


def numbers_behind_it(ctx: PageContext, numbers: Prompt, shown: Shown) -> None:
    """The highest-scoring tokens and each prompt token's probability and surprisal, as tables."""
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            top = shown.top
            st.markdown(f"The {len(top.ids)} highest-scoring tokens after the prompt:")
            st.dataframe(top.rows(), hide_index=True)
            st.markdown("Each prompt token's probability and surprisal given the tokens before it:")
            st.dataframe(
                [
                    {
                        "position": i,
                        "token": ctx.labels[i],
                        "p": None if np.isnan(s) else float(math.exp(-s)),
                        "surprisal (nats)": None if np.isnan(s) else float(s),
                        "surprisal (bits)": None if np.isnan(s) else float(s / math.log(2)),
                    }
                    for i, s in enumerate(numbers.surprisal)
                ],
                hide_index=True,
            )
