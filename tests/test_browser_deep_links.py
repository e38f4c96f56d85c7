"""Every link the app has ever given out, opened first on a fresh server in the system Chromium.

With `st.navigation` in app.py and the page scripts in `pages/`, a fresh server's first request
goes to Streamlit's legacy `pages/` router when its path is a file-derived one, and the page is
drawn bare: no sections, no shared sidebar (ui/nav.py says why the files are named as they are).
So each deep link gets a server of its own, and must open its page inside the app: the page's
title, the navigation with every section, the shared sidebar holding the linked model and prompt,
and the page's own URL choices kept; then the page is checked as every page is (check_page:
screenshots at 1280 and 1024 px, nothing cut, a chart, no exception or JavaScript error).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import quote, urlparse

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture skips (or fails under CI) with the reason
    expect = None

from serving.models import ENV_VAR
from tests import test_browser
from tests.test_browser import (
    NAV,
    TIMEOUT_MS,
    check_page,
    query,
    start_server,
    stop_server,
    wait_drawn,
    wait_healthy,
)
from ui import nav

pytestmark = pytest.mark.browser

browser, page = test_browser.browser, test_browser.page  # the fixtures, shared
PORTS = range(8700, 8750)
PROMPT = "KING:\nWhat is the matter?"
# A bundled model that is not the default (so the link, not the default, chose it), small, and
# naming its training text (N-grams counts it: on test-char, which names none, it draws nothing)
MODEL = "shakespeare-tiny"


def free_port() -> int:
    """A port of PORTS nothing listens on (127.0.0.1)."""
    for port in PORTS:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {PORTS.start}-{PORTS.stop - 1}")


@pytest.fixture
def fresh_server(models_dir, tmp_path):
    """A streamlit server that has served nothing yet."""
    port = free_port()
    proc = start_server(port, {**os.environ, ENV_VAR: str(models_dir)}, tmp_path / "server.log")
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, proc)
        yield base
    finally:
        stop_server(proc)


@pytest.mark.parametrize(
    "entry", nav.all_pages(), ids=[p.url_path or "Home" for p in nav.all_pages()]
)
def test_a_deep_link_opens_its_page_inside_the_app_on_a_fresh_server(fresh_server, page, entry):
    page.goto(f"{fresh_server}/{entry.url_path}?model={MODEL}&layer=1&prompt={quote(PROMPT)}")
    wait_drawn(page)
    # the legacy router's "Page not found" notice over the page (issue 37: the page beneath was
    # inert until it was closed) is closed by the app on that first run
    notice = page.locator("[role='dialog']").filter(has_text="Page not found")
    expect(notice).to_have_count(0, timeout=TIMEOUT_MS)

    heading = page.locator("[data-testid='stMain'] h1").first.inner_text()
    assert entry.title in heading
    links = page.locator(f"{NAV} [data-testid='stSidebarNavLink']").all_inner_texts()
    # each link reads "<icon name>\n\n<label>": the Material icon is a ligature
    assert [text.split("\n")[-1] for text in links] == [p.label for p in nav.all_pages()]
    nav_text = page.locator(NAV).inner_text()
    assert all(section in nav_text for section in nav.SECTIONS)
    side = page.locator("[data-testid='stSidebar']")
    expect(side.locator("textarea")).to_have_value(PROMPT, timeout=TIMEOUT_MS)
    expect(side).to_contain_text(f"About “{MODEL}”", timeout=TIMEOUT_MS)
    assert page.locator("[data-testid='stException']").count() == 0
    assert urlparse(page.url).path.strip("/") == entry.url_path
    assert query(page)["model"] == MODEL and query(page)["prompt"] == PROMPT
    # and the page itself, as every page is looked at: drawn, no text or formula cut at 1024 px,
    # a chart (but on Lessons, a list, and Live class, forms), no JavaScript error
    check_page(page, Path(entry.file).stem, charts=entry.url_path not in ("Lessons", "Class"))


def test_the_attention_link_opens_on_its_layer_and_head(fresh_server, page):
    page.goto(f"{fresh_server}/Attention?model={MODEL}&layer=1&head=1&prompt={quote(PROMPT)}")
    wait_drawn(page)
    for label in ("Layer", "Head"):
        slider = page.locator(f"[data-testid='stMain'] input[type='range'][aria-label='{label}']")
        assert slider.input_value() == "1"
    assert query(page)["layer"] == "1" and query(page)["head"] == "1"
