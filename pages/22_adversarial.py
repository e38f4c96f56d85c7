"""Adversarial suffix: a few tokens appended to the prompt, found by greedy coordinate gradient
(GCG), that make the model predict a chosen token next; the probability climbing step by step,
and where the last token's attention goes."""

import numpy as np
import streamlit as st
import torch

import ui
from ui import cache, parts, present, state
from ui.charts import adversarial as charts
from ui.charts.common import show_whitespace
from ui.charts.tokens import token_chips_html
from viz_model.analysis import adversarial as adv
from viz_model.analysis.claims import md_escape
from viz_model.analysis.interventions import typed_text
from viz_model.analysis.tokens import token_text

DEFAULT_RANK = 20  # the default target: the model's 20th choice after the prompt
MAX_STEPS, MAX_SUFFIX, MAX_TOP_K = 40, 12, 32

ctx = ui.context()
tok = ctx.tokenizer

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


@cache.per_prompt
def ranked_after(bundle_id: str, ids: tuple[int, ...]) -> tuple[int, ...]:
    """The model's next tokens after the prompt, most likely first."""
    with torch.no_grad():
        logits = cache.bundle(bundle_id).model(torch.tensor(ids))[-1]
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
    return adv.suffix_attention(cache.bundle(bundle_id).model, ids, length)


def shown(i: int) -> str:
    return show_whitespace(token_text(tok, i))


ranked = ranked_after(ctx.bundle_id, tuple(ctx.ids))
c1, c2, c3, c4 = st.columns(4)
typed = state.bind(
    c1.text_input,
    "adv_target",
    state.url_str("adv_target", shown(ranked[min(DEFAULT_RANK, len(ranked) - 1)]), 40),
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
        f"“{md_escape(typed)}” is {len(target_ids)} tokens for this model: type exactly one token."
    )
    st.stop()
if ctx.config.n_ctx - length < 1:
    st.info(f"A suffix of {length} tokens leaves no room in this model's context: shorten it.")
    st.stop()
target = target_ids[0]
init = tok.encode(" ")[0] if len(tok.encode(" ")) == 1 else ranked[-1]
with st.spinner("Searching for a suffix…"):
    result = searched(ctx.bundle_id, tuple(ctx.ids), target, length, steps, top_k, init)
label = shown(target)
rank_before = ranked.index(target) + 1

m1, m2, m3 = st.columns(3)
m1.metric(
    "p(target) before",
    adv.probability_text(result.p_target[0]),
    help=f"After the prompt and the starting suffix (spaces). After the prompt alone the target "
    f"is the model's choice number {rank_before} of {len(ranked):,}.",
)
m2.metric("p(target) after", adv.probability_text(result.p_target[-1]))
m3.metric("Candidate texts run", f"{result.evaluated:,}")
st.markdown(adv.search_claim(result, f"“{md_escape(label)}”").text)
present.plot(cache.figure(charts.climb_chart, result.p_target, label), key="adv_climb")

chips = [(i, token_text(tok, i)) for i in result.final]
n_prompt = len(result.prompt)
st.markdown("**The prompt and the suffix found** (the suffix outlined):")
st.html(token_chips_html(chips, marked=set(range(n_prompt, len(chips)))))
if len(result.prompt) < len(ctx.ids):
    st.caption(
        f"The first {len(ctx.ids) - len(result.prompt)} tokens of the prompt were cut to leave "
        f"room for the suffix in the model's context of {ctx.config.n_ctx}."
    )
with parts.followed_expander("The suffix after each accepted swap", "swaps"):
    st.table(
        {
            "step": list(range(len(result.suffixes))),
            "suffix": ["".join(shown(i) for i in s) for s in result.suffixes],
            "p(target)": [adv.probability_text(p) for p in result.p_target],
        }
    )

st.subheader("How the suffix works: attention")
start_ids = result.prompt + result.suffixes[0]
before = attention_on_suffix(ctx.bundle_id, start_ids, length)
after = attention_on_suffix(ctx.bundle_id, result.final, length)
present.plot(cache.figure(charts.attention_bars, before, after), key="adv_attention")
st.markdown(adv.attention_claim(before, after).text)
st.caption(
    "The share of the last token's attention (its row of the pattern, averaged over the heads "
    "of each layer) that lands on the suffix's positions. Open the Attention page on the text "
    "with the suffix to see which heads: paste it into the prompt."
)
