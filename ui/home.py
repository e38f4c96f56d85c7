"""The Home page's sections, one function each, drawn in order by pages/00_home.py: what the app is
for (`welcome`), the chosen model drawn from its config (`the_model`), the two columns below it
(`columns`), where its parameters are (`where_the_parameters_are`), and the pages to start from
(`where_to_start`).

Not here: the diagram, the sentences about the shape and the parameter bars
(ui/charts/architecture.py), a recurrent model's paragraph (ui/families.py), the registry of
pages (ui/nav.py).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from ui import cache, families, nav, parts, present
from ui.charts.architecture import (
    architecture_figure,
    model_sentences,
    param_counts_figure,
    param_rows,
)
from ui.frame import PageContext
from viz_model.model.recurrent_config import FAMILY_LABELS


def welcome() -> None:
    """What the app does, and that the prompt and the model follow the student."""
    st.markdown(
        "This app opens up a small GPT, the same kind of model as the ones behind ChatGPT, so you "
        "can watch what it does with your text at every step. Type a prompt in the sidebar, pick a "
        "page, and the prompt and the model follow you from page to page (the address bar keeps "
        "them, so a link reopens the same view)."
    )


def the_model(ctx: PageContext) -> None:
    """A GPT's shape in sentences and its diagram; another family's shape in a paragraph."""
    st.subheader(f"The model “{ctx.name}”")
    if ctx.bundle.family == "gpt":
        st.markdown(model_sentences(ctx.config))
        # Both figures depend on the model only: built once per model, not on every visit (15 ms
        # a view).
        architecture = cache.figure(architecture_figure, ctx.config)
        present.plot(architecture, width="stretch", config={"displayModeBar": False})
    else:  # an RNN, LSTM, GRU or CNN: no blocks to draw, a paragraph instead
        st.markdown(families.family_sentences(ctx.config))


def columns() -> tuple[Any, Any]:
    """The parameters (the wider, left) beside where to start."""
    left, right = st.columns([3, 2], gap="large")
    return left, right


def where_the_parameters_are(ctx: PageContext, column: Any) -> None:
    """The parameter count, the largest share in words, the bars, and the table on demand."""
    with column:
        st.subheader("Where the parameters are")
        counts = ctx.model.param_counts()
        total = sum(counts.values())
        rows = param_rows(counts)  # (component, parameters, share)
        biggest = max(rows, key=lambda r: r[1])
        st.markdown(
            f"The model has **{total:,}** parameters, the numbers training adjusts; the largest "
            f"share, {biggest[2]:.0%}, "
            f"sits in the weights of the {biggest[0]}. A LayerNorm has only a scale and a shift "
            "per dimension (an RMSNorm only the scale), so it barely counts."
        )
        shares = cache.figure(param_counts_figure, counts)
        present.plot(shares, width="stretch", config={"displayModeBar": False})
        with parts.numbers_behind_it() as opened:
            if opened:  # built only while open
                lines = [f"| {name} | {n:,} | {share:.1%} |" for name, n, share in rows]
                st.markdown(
                    "| component | parameters | share |\n|---|--:|--:|\n"
                    + "\n".join(lines)
                    + f"\n| **total** | **{total:,}** | 100% |"
                )


def where_to_start(ctx: PageContext, column: Any) -> None:
    """Every lesson page by section, with its description, or why it is not for this model."""
    net = FAMILY_LABELS[ctx.bundle.family]
    with column:
        st.subheader("Where to start")
        section = ""
        for page in nav.lesson_pages():
            if page.section != section:
                section = page.section
                st.caption(section)
            st.page_link(page.file, label=page.label, icon=page.icon)
            if ctx.bundle.family in page.families:
                st.caption(page.description)
            else:  # the frame would refuse it for this model: say so before the click
                st.caption(f"{page.description} A GPT's page: not for this {net}.")
