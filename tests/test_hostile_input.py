"""Hostile input, one row per case, on every page that takes a prompt: each page finishes with no
exception, says something when there is nothing to show, and never draws the student's text as
live HTML (a <script> or an <img onerror> from the prompt must stay text).
"""

from __future__ import annotations

import pytest

from tests.apptest_util import app_test
from ui import nav

PAGES = [page.file for page in nav.available_pages()]

# (case, prompt). The URL carries the prompt, as in a shared link.
PROMPTS = [
    ("empty", ""),
    ("whitespace only", " \t \n "),
    ("100,000 characters", "to be or not to be " * 5_300),
    ("emoji, right-to-left, combining marks", "🙂 שָׁלוֹם مرحبا e\u0301 👨‍👩‍👧 ROMEO"),
    ("control characters", "RO\x00ME\x07O\x1b[31m:\x7f\u200b\ufeff"),
    ("markup and script", '<script>alert("x")</script><img src=x onerror=alert(1)> **ROMEO**'),
]
DANGEROUS = ("<script", "onerror=")


# Pages that draw the prompt's own tokens as HTML (st.html chips): there the escaped prompt must
# be found, so the check below is known to look at the right elements.
DRAW_PROMPT_AS_HTML = {"pages/1_Tokenization.py", "pages/7_Next_token.py", "pages/8_Generation.py"}


def _live_html(at) -> list[str]:
    """The bodies of every element the browser renders as HTML: st.html, and markdown or
    captions drawn with unsafe_allow_html."""
    bodies = [element.proto.body for element in at.get("html")]
    for kind in ("markdown", "caption"):
        bodies += [e.proto.body for e in at.get(kind) if getattr(e.proto, "allow_html", False)]
    return bodies


@pytest.mark.parametrize("case,prompt", PROMPTS, ids=[c for c, _ in PROMPTS])
@pytest.mark.parametrize("page", PAGES, ids=[p.split("/")[-1][:-3] for p in PAGES])
def test_every_page_survives_a_hostile_prompt(models_dir, page, case, prompt):
    at = app_test(models_dir, page, query={"prompt": prompt})
    assert not at.exception, f"{case} on {page}: {at.exception[0].value}"
    bodies = _live_html(at)
    for body in bodies:
        lowered = body.lower()
        assert not any(bad in lowered for bad in DANGEROUS), f"{case} drawn as HTML on {page}"
    if case == "markup and script" and page in DRAW_PROMPT_AS_HTML:
        assert any("&lt;" in body for body in bodies), f"the escaped prompt is not on {page}"
    if not prompt and page != "pages/9_Training.py":  # whitespace is tokens; empty is not
        shown = " ".join(e.value for e in at.info)
        assert "Type a prompt" in shown or "prompt" in shown.lower()
