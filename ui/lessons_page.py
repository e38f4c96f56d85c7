"""The Lessons page's sections, one function each, drawn in order by pages/17_lessons.py: what a
lesson is (`intro`), every lesson of assets/lessons/ with its buttons, stops and sheets
(`catalogue`), and how to write one, with every kind of answer a stop can measure
(`write_your_own`).

Not here: reading the lesson files, a lesson's place and its panel on a page (ui/lesson.py), the
exercise sheets' buttons (ui/sheets_view.py), the answer kinds (viz_model/lessons/registry.py).
"""

from __future__ import annotations

import streamlit as st

from ui import lesson, sheets_view
from viz_model.analysis.claims import md_escape
from viz_model.lessons.lesson_file import Lesson
from viz_model.lessons.registry import ANSWERS


def intro() -> None:
    """Predict, then reveal: what a lesson does, and that its place is in the address."""
    st.markdown(
        "A **lesson** strings pages into a lecture. Each stop opens a page in an exact view and "
        "asks a question; you **predict** first (the page is blurred until you answer), then the "
        "app **reveals** the answer, measured on the model on screen, never typed into the "
        "lesson. If the model does not show what the lesson expects, the reveal says so. Your "
        "place is in the address bar (`?lesson=…&step=…`), so a link resumes the lesson."
    )


def catalogue() -> None:
    """Every lesson file: a card each, and each file that could not be loaded, said with why."""
    found, errors = lesson.lessons()
    for error in errors:
        st.error(f"This lesson file could not be loaded: {md_escape(str(error))}", icon="⚠️")
    if not found:
        st.info(f"No lesson files in {lesson.lessons_dir()}.")
    for item in found:
        _card(item)


def _card(item: Lesson) -> None:
    """One lesson: its title and summary, Start and Present, its stops, its exercise sheets."""
    with st.container(border=True):
        st.markdown(f"### {item.title}")
        meta = [item.lecture, f"model {item.model}", f"{len(item.stops)} stops"]
        st.caption(" · ".join(m for m in meta if m))
        if item.summary:
            st.markdown(item.summary)
        c1, c2, _ = st.columns([1, 1, 2])
        if c1.button("Start", key=f"start_{item.id}", type="primary"):
            lesson.go(item, 1)
        if c2.button("Present", key=f"present_{item.id}", help="Presenter mode: large type."):
            st.session_state["present"] = True
            lesson.go(item, 1)
        with st.expander("The stops"):
            for i, stop in enumerate(item.stops, 1):
                page = lesson.page_of(stop)
                st.markdown(f"{i}. **{page.label}**: {stop.question}")
        sheets_view.downloads(item)


def write_your_own() -> None:
    """The lesson file's format in words, and a table of every kind of answer with its args."""
    st.subheader("Write your own")
    st.markdown(
        "A lesson is a TOML file in `assets/lessons/`: copy one, edit it, and reload this page. "
        "The file names its `model`, and each `[[stop]]` names a `page` (as in its address, e.g. "
        "`Attention`), its `view` (the page's address keys, e.g. `{ layer = 1, head = 2 }`), an "
        "`instruction`, a `question` and an `answer`: one of the kinds below, with its `args`. A "
        "mistake (an unknown page, a view key the page does not have, a model that is not "
        "installed) is reported above with its line, and the other lessons still load."
    )
    st.dataframe(
        [
            {
                "answer": name,
                "form": kind.form,
                "args": ", ".join(
                    p.name + ("" if p.required else f" = {p.default!r}") for p in kind.params
                ),
                "what it measures": kind.summary,
            }
            for name, kind in sorted(ANSWERS.items())
        ],
        hide_index=True,
    )
