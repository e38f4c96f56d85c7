"""Interventions, Facts: the training text's facts (a word its first letters almost always
finish), and which layers the model needs to recall them: each layer's attention and MLP
knocked out in turn."""

from __future__ import annotations

import streamlit as st

from ui import cache, parts, present
from ui import interventions as ux
from ui.charts import interventions as charts
from ui.experiments import common
from ui.frame import PageContext


def draw(ctx: PageContext) -> None:
    """The facts found, how many each layer's knock-out loses, and the claim; the list on demand."""
    from viz_model.analysis.labs import facts as fa  # imported when the experiment is chosen

    L = ctx.config.n_layer

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
        cache.figure(charts.facts_by_layer, lost["attention"], lost.get("mlp"), known),
        key="facts_layers",
    )
    st.markdown(fa.ablation_claim(result).text)
    st.caption(
        f"{len(facts)} facts, the most frequent words first. The margin is two standard "
        "deviations of a coin-flip count over the facts recalled: a difference smaller than "
        "that is not told from chance. Means taken over " + common.val_words(ctx) + "."
    )
    with parts.followed_expander("The facts, and which knock-outs lose them", "facts"):
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
