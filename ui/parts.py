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


# The URL key of the page's open "numbers" sections, "Attention:numbers,effect": part of the view,
# so a class sees the numbers the teacher opened and a link reopens them. The route says which
# page they were opened on: on any other page the value opens nothing.
OPEN_KEY = "open"


@contextmanager
def numbers_behind_it(container: Any = None, key: str = NUMBERS_KEY) -> Iterator[bool]:
    """The collapsed section under a picture that holds its numbers, the same on every page;
    yields whether it is open. Its tables are built only while it is open (Streamlit's lazy
    expander: opening it reruns the page), so the many page runs nobody opens it in (a class
    following the teacher: one run per student per move) do not pay for them. A page with
    more than one gives each its own `key`. Whether it is open is in the URL (OPEN_KEY): a
    followed view or a link opens or closes it; the reader's own click changes it."""
    with followed_expander(NUMBERS_TITLE, key, container) as is_open:
        yield is_open


@contextmanager
def followed_expander(label: str, key: str, container: Any = None) -> Iterator[bool]:
    """A collapsed section (st.expander) whose open or closed state is part of the view: in the
    URL under OPEN_KEY with this page's other open sections, so a class following the teacher
    sees what the teacher opened and a link reopens it; yields whether it is open. `key` is
    unique on its page; the reader's own click changes it until the next view arrives."""
    ss, widget = st.session_state, numbers_key(key)
    raw = _open_value()
    view = (ss.get(state.ROUTE), raw)
    if ss.get(_applied(widget)) != view:  # a view arrived (a follow, a link, a page): it decides
        ss[widget] = key in _open_sections(raw)
        ss[_applied(widget)] = view
    box = (container or st).expander(label, key=widget, on_change=_toggled, args=(key,))
    with box:
        yield bool(box.open)


def _applied(widget: str) -> str:
    return f"_view{widget}"  # (route, OPEN_KEY value) this section last took its state from


def _open_sections(raw: str) -> set[str]:
    """The section keys `raw` opens on this page (none when it names another page)."""
    route, _, keys = raw.partition(":")
    if route != st.session_state.get(state.ROUTE):
        return set()
    return {k for k in keys.split(",") if k}


def _toggled(key: str) -> None:
    """The reader opened or closed section `key`: the URL (and so the class) says so."""
    sections = _open_sections(_open_value())
    sections = sections | {key} if st.session_state[numbers_key(key)] else sections - {key}
    _publish(sections, key)


def followed_tabs(labels: list[str], key: str, container: Any = None) -> list[Any]:
    """st.tabs whose chosen tab is part of the view, as followed_expander's open state is: a tab
    other than the first is in the URL under OPEN_KEY as "key=index", so a class following the
    teacher sees the tab the teacher chose. Every tab's content is still drawn."""
    ss, widget = st.session_state, numbers_key(key)
    raw = _open_value()
    view = (ss.get(state.ROUTE), raw)
    if ss.get(_applied(widget)) != view:  # a view arrived: it chooses the tab
        index = next(
            (
                int(v)
                for k, _, v in (s.partition("=") for s in _open_sections(raw))
                if k == key and v.isdigit()
            ),
            0,
        )
        ss[widget] = labels[index if index < len(labels) else 0]
        ss[_applied(widget)] = view
    return (container or st).tabs(labels, key=widget, on_change=_tab_chosen, args=(key, labels))


def _tab_chosen(key: str, labels: list[str]) -> None:
    chosen = st.session_state[numbers_key(key)]
    index = labels.index(chosen) if chosen in labels else 0
    sections = {s for s in _open_sections(_open_value()) if s.partition("=")[0] != key}
    _publish(sections | ({f"{key}={index}"} if index else set()), key)


def _publish(sections: set[str], key: str) -> None:
    """This page's open sections (and chosen tabs) into the session and the URL."""
    ss = st.session_state
    route = ss.get(state.ROUTE, "")
    raw = f"{route}:{','.join(sorted(sections))}" if sections else ""
    ss[OPEN_KEY] = raw
    ss[_applied(numbers_key(key))] = (route, raw)
    state.mirror(OPEN_KEY, raw, drop_empty=True)


def _open_value() -> str:
    """OPEN_KEY's value, from the session, else the URL; an empty one is no key in the URL."""
    ss = st.session_state
    raw = state.parse_str(
        ss[OPEN_KEY] if OPEN_KEY in ss else st.query_params.get(OPEN_KEY), "", 200
    )
    ss[OPEN_KEY] = raw
    state.mirror(OPEN_KEY, raw, drop_empty=True)
    return raw


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
