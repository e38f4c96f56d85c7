"""Repetition: greedy decoding, sampling and greedy with CTRL's repetition penalty, from one
prompt, and how much each repeats itself."""

from __future__ import annotations

import streamlit as st

from ui import cache, parts, present, state
from ui.charts import usage as charts
from ui.frame import PageContext
from viz_model.analysis import usage

LABELS = {"greedy": "greedy", "sampling": "sampling", "penalty": "greedy + penalty"}


@cache.per_prompt(spinner="Writing three ways…")
def three_ways(
    bundle_id: str, ids: tuple[int, ...], n_new: int, temperature: float, seed: int, theta: float
) -> dict[str, list[int]]:
    model = cache.bundle(bundle_id).model
    return usage.compare_decoders(model, list(ids), n_new, temperature, seed, theta)


def draw(ctx: PageContext) -> None:
    st.markdown(
        "Greedy decoding takes the most likely token every time, and a small model's most likely "
        "continuation often leads back into a phrase it has just written, and round the same loop "
        "again. Sampling can leave a loop by chance. The **repetition penalty** of CTRL (Keskar "
        "et al., 2019), in the form libraries apply it, pushes against loops on purpose: before "
        "each choice, every token already generated has its logit $z_i$ divided by $\\theta$ "
        "when positive and multiplied by $\\theta$ when negative, so for $\\theta > 1$ its logit "
        "never rises. Its probability usually falls but can rise (the softmax renormalises, and "
        "another penalised token may lose more), and a penalised token can still win: the "
        "penalty makes repeats less likely, it does not forbid them. The chart below measures "
        "how much each text still repeats."
    )
    st.latex(
        r"z_i' = \begin{cases} z_i / \theta & z_i > 0 \\ z_i \, \theta & z_i \le 0 \end{cases}"
        r"\quad\text{for every token } i \text{ already generated}"
    )
    c1, c2, c3, c4 = st.columns(4)
    n_new = state.slider("Tokens", "u_rep_n", 30, 300, 120, step=10, container=c1)
    temperature = state.slider("Sampling T", "u_rep_t", 0.1, 2.0, 1.0, step=0.1, container=c2)
    seed = state.number_input("Seed", "u_rep_seed", 0, 999_999, 0, container=c3)
    theta = state.slider("Penalty θ", "u_theta", 1.0, 3.0, 1.3, step=0.1, container=c4)
    out = three_ways(ctx.bundle_id, tuple(ctx.ids), n_new, temperature, seed, theta)
    tok = ctx.tokenizer
    texts = {k: tok.decode(v) for k, v in out.items()}
    stats = {k: usage.repetition_stats(t) for k, t in texts.items()}
    present.plot(
        cache.figure(
            charts.repetition_bars,
            [LABELS[k] for k in usage.DECODERS],
            [stats[k].repeated_phrases for k in usage.DECODERS],
            [stats[k].distinct_words for k in usage.DECODERS],
        ),
        key="use_repetition_bars",
    )
    st.caption(
        f"Red: the share of {usage.PHRASE_WORDS}-word phrases that had already been written earlier "
        "in the same text. Blue: distinct words over all words (100% = no word used twice)."
    )
    claim = usage.repetition_claim(stats)
    (st.success if claim.made else st.info)(claim.text)
    cols = st.columns(3)
    for col, k in zip(cols, usage.DECODERS, strict=True):
        col.caption(
            f"**{LABELS[k]}**: longest stretch written twice: {stats[k].longest_repeat} characters"
        )
        col.code(texts[k], language=None, wrap_lines=True)
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            parts.numbers_table(
                "The three measures of each text:",
                [
                    {
                        "decoder": LABELS[k],
                        f"{usage.PHRASE_WORDS}-word phrases repeated": stats[k].repeated_phrases,
                        "distinct words": stats[k].distinct_words,
                        "longest stretch written twice (characters)": stats[k].longest_repeat,
                        "tokens": len(out[k]),
                    }
                    for k in usage.DECODERS
                ],
            )
