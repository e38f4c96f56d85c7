"""The Adversarial suffix page's sections, one function each, drawn in order by
pages/22_adversarial.py: the idea and the objective (`intro`), the target and the search's
settings (`choices`), the search itself with p(target) climbing and the suffix found (`search`),
and where the last token's attention goes before and after (`attention`).

Not here: the search, its measures and claims (viz_model/analysis/labs/adversarial.py), the chart
builders (ui/charts/adversarial.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st
import torch

from ui import cache, parts, present, state
from ui.charts import adversarial as charts
from ui.charts.common import show_whitespace
from ui.charts.tokens import token_chips_html
from ui.frame import PageContext
from viz_model.analysis.claims import md_escape
from viz_model.analysis.labs import adversarial as adv
from viz_model.analysis.labs.interventions import typed_text
from viz_model.analysis.tokens import token_text
from viz_model.text.tokenization import Tokenizer

DEFAULT_RANK = 20  # the default target: the model's 20th choice after the prompt
MAX_STEPS, MAX_SUFFIX, MAX_TOP_K = 40, 12, 32


@dataclass(frozen=True)
class Choices:
    """The target token and the search's settings, with the model's ranking after the prompt."""

    target: int  # the token the suffix should make the model predict next
    length: int  # suffix tokens
    steps: int  # at most this many accepted swaps
    top_k: int  # candidate swaps tried at each suffix position
    init: int  # the token the starting suffix repeats (a space where it is one token)
    ranked: tuple[int, ...]  # (V,) the model's next tokens after the prompt, most likely first


# ---- cached measures ------------------------------------------------------------------------------


@cache.per_prompt
def ranked_after(bundle_id: str, ids: tuple[int, ...]) -> tuple[int, ...]:
    """The model's next tokens after the prompt, most likely first."""
    with torch.no_grad():
        logits = cache.bundle(bundle_id).model(torch.tensor(ids))[-1]  # (V,)
    return tuple(int(i) for i in torch.argsort(logits, descending=True))


@cache.per_prompt
def searched(
    bundle_id: str,
    ids: tuple[int, ...],
    target: int,
    length: int,
    steps: int,
    top_k: int,
    init: int,
) -> adv.SuffixSearch:
    return adv.search(cache.bundle(bundle_id).model, ids, target, length, steps, top_k, init)


@cache.per_prompt
def attention_on_suffix(bundle_id: str, ids: tuple[int, ...], length: int) -> np.ndarray:
    """(n_layers,) the last position's attention on the suffix, averaged over the heads."""
    return adv.suffix_attention(cache.bundle(bundle_id).model, ids, length)


def shown(tok: Tokenizer, i: int) -> str:
    """Token `i`'s text with its spaces and newlines visible (␣, ↵), as the target box reads."""
    return show_whitespace(token_text(tok, i))


# ---- the sections ---------------------------------------------------------------------------------


def intro() -> None:
    """What an adversarial suffix is, how GCG searches for one, and the objective."""
    st.markdown(
        "A language model's next-token probabilities can be pushed where you want by text that "
        "means nothing to a reader. An **adversarial suffix** is a few tokens appended to a prompt, "
        "searched so that the model predicts a chosen **target** next. Greedy coordinate gradient "
        "(GCG, Zou et al. 2023) asks the gradient which single-token swap in the suffix would raise "
        "p(target) most, tries the best few candidates at every suffix position for real, keeps the "
        "best, and repeats. Attacks of this kind made aligned chat models say what they were trained "
        "to refuse; here the target is one token of a small model, and every step is visible."
    )
    st.latex(
        r"\text{suffix}^* = \arg\max_{s_1 \dots s_L}\; \log p(\text{target} \mid "
        r"\text{prompt}, s_1 \dots s_L)"
    )


def choices(ctx: PageContext) -> Choices:
    """The target box and the three sliders; the run stops with words when the target is not
    one token or the suffix leaves no room in the context."""
    tok = ctx.tokenizer
    ranked = ranked_after(ctx.bundle_id, tuple(ctx.ids))
    c1, c2, c3, c4 = st.columns(4)
    typed = state.bind(
        c1.text_input,
        "adv_target",
        state.url_str("adv_target", shown(tok, ranked[min(DEFAULT_RANK, len(ranked) - 1)]), 40),
        "Target token",
        help="One token of this model's vocabulary; ␣ stands for a space, ↵ for a newline. The "
        "default is the model's 20th choice after your prompt.",
    )
    length = state.slider("Suffix tokens", "adv_len", 1, MAX_SUFFIX, 6, container=c2)
    steps = state.slider("Steps", "adv_steps", 1, MAX_STEPS, 15, container=c3)
    top_k = state.slider(
        "Candidates per position",
        "adv_k",
        1,
        MAX_TOP_K,
        8,
        container=c4,
        help="How many swaps the gradient proposes at each suffix position; all are tried.",
    )
    target_ids = tok.encode(typed_text(typed))
    if len(target_ids) != 1:
        st.error(
            f"“{md_escape(typed)}” is {len(target_ids)} tokens for this model: type exactly one "
            "token."
        )
        st.stop()
    if ctx.config.n_ctx - length < 1:
        st.info(f"A suffix of {length} tokens leaves no room in this model's context: shorten it.")
        st.stop()
    space = tok.encode(" ")
    init = space[0] if len(space) == 1 else ranked[-1]
    return Choices(target_ids[0], length, steps, top_k, init, ranked)


def search(ctx: PageContext, chosen: Choices) -> adv.SuffixSearch:
    """Run the search (cached): p(target) before and after, the claim, the climb, the prompt with
    the suffix found, and the suffix after each accepted swap."""
    with st.spinner("Searching for a suffix…"):
        result = searched(
            ctx.bundle_id,
            tuple(ctx.ids),
            chosen.target,
            chosen.length,
            chosen.steps,
            chosen.top_k,
            chosen.init,
        )
    _before_and_after(ctx, chosen, result)
    _suffix_found(ctx, result)
    return result


def _before_and_after(ctx: PageContext, chosen: Choices, result: adv.SuffixSearch) -> None:
    """The three metrics, the claim and the climb chart."""
    label = shown(ctx.tokenizer, chosen.target)
    rank_before = chosen.ranked.index(chosen.target) + 1
    m1, m2, m3 = st.columns(3)
    m1.metric(
        "p(target) before",
        adv.probability_text(result.p_target[0]),
        help=f"After the prompt and the starting suffix (spaces). After the prompt alone the "
        f"target is the model's choice number {rank_before} of {len(chosen.ranked):,}.",
    )
    m2.metric("p(target) after", adv.probability_text(result.p_target[-1]))
    m3.metric("Candidate texts run", f"{result.evaluated:,}")
    st.markdown(adv.search_claim(result, f"“{md_escape(label)}”").text)
    present.plot(cache.figure(charts.climb_chart, result.p_target, label), key="adv_climb")


def _suffix_found(ctx: PageContext, result: adv.SuffixSearch) -> None:
    """The prompt and the suffix as chips (the suffix outlined), and each accepted swap's suffix."""
    tok = ctx.tokenizer
    chips = [(i, token_text(tok, i)) for i in result.final]
    n_prompt = len(result.prompt)
    st.markdown("**The prompt and the suffix found** (the suffix outlined):")
    st.html(token_chips_html(chips, marked=set(range(n_prompt, len(chips)))))
    if len(result.prompt) < len(ctx.ids):
        st.caption(
            f"The first {len(ctx.ids) - len(result.prompt)} tokens of the prompt were cut to "
            f"leave room for the suffix in the model's context of {ctx.config.n_ctx}."
        )
    with parts.followed_expander("The suffix after each accepted swap", "swaps"):
        st.table(
            {
                "step": list(range(len(result.suffixes))),
                "suffix": ["".join(shown(tok, i) for i in s) for s in result.suffixes],
                "p(target)": [adv.probability_text(p) for p in result.p_target],
            }
        )


def attention(ctx: PageContext, chosen: Choices, result: adv.SuffixSearch) -> None:
    """Each layer's attention from the last token onto the suffix, with the starting suffix and
    with the one found, and the claim about the change."""
    st.subheader("How the suffix works: attention")
    start_ids = result.prompt + result.suffixes[0]
    before = attention_on_suffix(ctx.bundle_id, start_ids, chosen.length)
    after = attention_on_suffix(ctx.bundle_id, result.final, chosen.length)
    present.plot(cache.figure(charts.attention_bars, before, after), key="adv_attention")
    st.markdown(adv.attention_claim(before, after).text)
    st.caption(
        "The share of the last token's attention (its row of the pattern, averaged over the heads "
        "of each layer) that lands on the suffix's positions. Open the Attention page on the text "
        "with the suffix to see which heads: paste it into the prompt."
    )
