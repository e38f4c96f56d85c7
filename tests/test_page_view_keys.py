"""The registry's view keys (ui/nav.py) are the keys each page really puts in its URL: what a
lesson stop's `view` may set is checked against them, so they must not drift from the pages."""

from __future__ import annotations

import pytest

from tests.apptest_util import ROOT, open_link
from ui import lesson as ui_lesson
from ui import nav

MODELS = ROOT / "assets" / "models"
FRAME = {"model", "prompt", *ui_lesson.FRAME_KEYS, ui_lesson.LESSON, ui_lesson.STEP, "present"}


@pytest.mark.parametrize("page", nav.all_pages(), ids=lambda p: p.url_path or "Home")
def test_every_key_a_page_writes_is_in_the_registry(page):
    at = open_link(MODELS, page.file, {"model": "shakespeare-char"})
    assert not at.exception
    written = set(at.query_params.keys()) - FRAME
    assert written <= set(page.view_keys), sorted(written - set(page.view_keys))
    assert len(page.view_keys) == len(set(page.view_keys))
