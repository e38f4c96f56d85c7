"""Page parts more than one page draws: a token as text, "the numbers behind it", and a scroll
to a heading.

    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            parts.numbers_table("Each token's mean and sigma:", {"token": labels, "μ": mean})
    st.markdown(f"The newest token, “{parts.md_token(parts.token_label(tok, i))}”, ...")

A token shown to a student always has its invisible characters made visible (␣ ↵ ⇥) and its
partial bytes spelled out (<c3>); inside Markdown (a sentence, a button label) it is escaped too,
with the one escaper the app uses (viz_model/analysis/claims.md_escape).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import streamlit as st

from ui import nav, state
from ui.charts.common import show_whitespace
from viz_model.analysis.claims import md_escape
from viz_model.analysis.tokens import token_text
from viz_model.text.tokenization import Tokenizer

NUMBERS_TITLE = "The numbers behind it"


def token_label(tokenizer: Tokenizer, i: int) -> str:
    """Vocabulary entry `i` as a student reads it: "␣the", "↵", "<c3>"."""
    return show_whitespace(token_text(tokenizer, int(i)))


def md_token(text: str) -> str:
    """Token text inside Markdown: whitespace visible, every Markdown character escaped."""
    return md_escape(show_whitespace(text))


NUMBERS_KEY = "numbers"  # numbers_behind_it's default key (a session-state key: open or not)


def numbers_key(key: str = NUMBERS_KEY) -> str:
    """The session-state key of a "numbers behind it" section (tests open it with it)."""
    return f"_open_{key}"


@contextmanager
def numbers_behind_it(container: Any = None, key: str = NUMBERS_KEY) -> Iterator[bool]:
    """The collapsed section under a picture that holds its numbers, the same on every page;
    yields whether it is open. Its tables are built only while it is open (Streamlit's lazy
    expander: opening it reruns the page), so the many page runs nobody opens it in (a class
    following the teacher: one run per student per move) do not pay for them. A page with
    more than one gives each its own `key`."""
    box = (container or st).expander(NUMBERS_TITLE, key=numbers_key(key), on_change="rerun")
    with box:
        yield bool(box.open)


def numbers_table(caption: str | None, table: Any, **dataframe_args: Any) -> None:
    """One table of numbers with the sentence that says what it is (no index column, full width
    unless `width` says otherwise)."""
    if caption:
        st.markdown(caption)
    st.dataframe(table, **{"hide_index": True, "width": "stretch", **dataframe_args})


# Scrolls the page to an element id once it is drawn (it may mount a moment after this script);
# gives up after ~5 s. Only the id goes in, from code: never text a student typed.
_SCROLL_JS = """<script>
(function find(tries) {
  const target = document.getElementById(%s);
  if (target) target.scrollIntoView({behavior: "smooth", block: "start"});
  else if (tries > 0) setTimeout(() => find(tries - 1), 100);
})(50);
</script>"""


def scroll_to(anchor: str) -> None:
    """Bring the heading with this anchor into view (e.g. the live panel after Start, which on a
    1024x768 projector was below the screen, under the set-up form)."""
    st.html(_SCROLL_JS % json.dumps(anchor), unsafe_allow_javascript=True)


def contrast_links(*links: tuple[str, str]) -> None:
    """contrast_link for each (key, label), one under another (side by side, a label is cut
    short in a 1024 px column)."""
    for key, label in links:
        contrast_link(key, label)


def contrast_link(key: str, label: str, container: Any = st) -> None:
    """A link to one contrast of Architecture contrasts (ctr=key in its URL): where a page's "why"
    is answered by two models trained side by side."""
    page = nav.find("Architecture_contrasts")
    container.page_link(page.file, label=label, icon=page.icon, query_params={"ctr": key})


def page_link(url_path: str, label: str, container: Any = st, **query: str) -> None:
    """A link to another page of the app (by its url_path), opening the view `query` names."""
    page = nav.find(url_path)
    container.page_link(page.file, label=label, icon=page.icon, query_params=query or None)


def chosen_part(
    parts: dict[str, tuple[str, Callable[..., None]]], key: str, default: str
) -> Callable[..., None]:
    """A page made of parts: a row of radio buttons naming them (the choice in the URL under
    `key`), and the chosen part's draw function."""
    part = state.radio(
        "Part",
        key,
        list(parts),
        default,
        format_func=lambda p: parts[p][0],
        horizontal=True,
        label_visibility="collapsed",
    )
    return parts[part][1]
