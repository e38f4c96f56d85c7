"""Inside a block, part 7: prompts written from a template ("My lord, you are {}."), each
filler's last-token vector at every layer in 2D, and whether a layer tells two groups of fillers
apart better than shuffled groups do."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ui import cache, present, state
from ui.charts.block import context as charts
from ui.charts.common import plotly_text
from ui.frame import PageContext
from viz_model.analysis.labs import contextual as cx
from viz_model.analysis.residual import layer_labels

DEFAULT_TEMPLATE = "My lord, you are {}."
DEFAULT_FILLERS = "kind, gentle, noble, good, sweet, fair | cruel, false, vile, foul, base, proud"


@cache.per_prompt
def measured(
    bundle_id: str,
    prompts: tuple[tuple[int, ...], ...],
    at: tuple[int, ...],
    labels: tuple[int, ...],
):
    """(vectors (S, n, D), 2D points (S, n, 2), variance shares (S, 2), accuracy (S,), chance (S,))."""
    model = cache.bundle(bundle_id).model
    vectors = cx.template_vectors(model, [list(p) for p in prompts], list(at))
    points, shares = cx.layer_projections(vectors)
    y = np.array(labels)
    return vectors, points, shares, cx.separation(vectors, y), cx.separation_chance(vectors, y)


def draw(ctx: PageContext) -> None:
    st.markdown(
        "Write one sentence with a slot, `{}`, and two groups of words to put in it. Each filled "
        "prompt goes through the model, and we keep the residual vector of the **filler's last "
        "token** (a character model: its last letter, having read the sentence up to it), "
        "layer by layer. Words that mean alike in the text the model read should land near each "
        "other; whether a layer *separates* the groups is measured, not eyeballed: each prompt is "
        "left out in turn and given to the nearer group mean (cosine), against the same test "
        "with the groups shuffled."
    )
    c1, c2 = st.columns([2, 3])
    template = state.bind(
        c1.text_input,
        "tpl",
        state.url_str("tpl", DEFAULT_TEMPLATE, 200),
        "Template, with {} for the slot",
    )
    fillers = state.bind(
        c2.text_input,
        "tpl_fill",
        state.url_str("tpl_fill", DEFAULT_FILLERS, 1000),
        "Two groups of fillers, split by |",
        help="Commas between words; a | between the two groups.",
    )
    if cx.SLOT not in template:
        st.info("The template needs a slot, {}, where each filler goes.")
        return
    groups = cx.parse_groups(fillers)
    if len(groups) != 2 or min(len(g) for g in groups) < 2:
        st.info(
            "Give two groups of at least two fillers each, split by |: “kind, good | cruel, base”."
        )
        return
    words = [w for g in groups for w in g][: cx.MAX_FILLERS]
    labels = tuple(0 if i < len(groups[0]) else 1 for i in range(len(words)))
    if len(words) < sum(len(g) for g in groups):
        st.caption(f"The first {cx.MAX_FILLERS} fillers are used.")
    if min(labels.count(0), labels.count(1)) < 2:
        st.info("Each group needs at least two fillers among the first ones used.")
        return
    texts = [cx.fill(template, w) for w in words]
    ends = cx.filler_ends(ctx.tokenizer, template, words)
    if any(len(ids) == 0 for ids, _ in ends):
        st.info("A filled prompt has no tokens for this model: write a template with some text.")
        return
    prompts = tuple(tuple(ids) for ids, _ in ends)
    at = tuple(end for _, end in ends)
    vectors, points, shares, accuracy, chance = measured(ctx.bundle_id, prompts, at, labels)
    stations = layer_labels(ctx.config.n_layer)
    names = [f"{plotly_text(groups[0][0])}, …", f"{plotly_text(groups[1][0])}, …"]  # a legend
    present.plot(
        cache.figure(
            charts.context_projections,
            points,
            shares,
            stations,
            [names[y] for y in labels],
            texts,
            title="Each filler's last-token vector in 2D (each panel its own PCA)",
            legend_title="group:",
        )
    )
    st.markdown(cx.template_claim(stations, accuracy, chance, len(words)).text)
    st.dataframe(
        {
            "layer": stations,
            "groups told apart (leave one out)": [f"{a:.0%}" for a in accuracy],
            "shuffled groups, 95th percentile": [f"{c:.0%}" for c in chance],
        },
        hide_index=True,
    )
    st.caption(
        f"Colour: the group. Hover a dot for its prompt. {len(words)} prompts; the shuffled "
        f"level is the 95th percentile of {cx.SHUFFLES} shuffles of the group labels."
    )
