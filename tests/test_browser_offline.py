"""The app runs offline: opening its pages in Chromium asks nothing of any machine but its own
server. Every request and websocket the browser makes is recorded (the page's, its frames' and
workers'), and any host other than 127.0.0.1 or localhost fails the test (issue 39: a favicon
fetched from fonts.gstatic.com on every page load, the pages' Material icons; ui/nav.APP_ICON).
"""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

from tests import test_browser
from tests.test_browser import (
    ROOT,
    app_server,
    wait_drawn,
)

pytestmark = pytest.mark.browser
browser = test_browser.browser  # the fixture, shared

LOCAL = {"127.0.0.1", "localhost"}
# Home, a page with charts, a lesson's stop (its panel and its page) and the Live class page
PATHS = ("/", "/Attention", "/?lesson=1_tokens&step=1", "/Class")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A server on the bundled models only: the lesson names them."""
    with app_server(ROOT / "assets" / "models", tmp_path_factory.mktemp("server")) as base:
        yield base


def elsewhere(urls: list[str]) -> list[str]:
    """The URLs that leave this machine: a host that is not the server's (data: and blob: URLs
    have none and never leave the browser).

    >>> elsewhere(["http://127.0.0.1:8501/x", "data:image/svg+xml,<svg/>", "https://a.com/f"])
    ['https://a.com/f']
    """
    return [u for u in urls if urlparse(u).hostname not in LOCAL | {None}]


def test_elsewhere_names_only_other_hosts():
    urls = ["http://localhost/", "ws://127.0.0.1:1/_stcore/stream", "blob:http://127.0.0.1/a"]
    assert elsewhere(urls) == []
    far = "https://fonts.gstatic.com/s/i/x.svg"
    assert elsewhere([*urls, far]) == [far]


def test_opening_pages_requests_nothing_but_the_server(server, browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    asked: list[str] = []
    context.on("request", lambda request: asked.append(request.url))
    p = context.new_page()
    p.on("websocket", lambda ws: asked.append(ws.url))
    try:
        for path in PATHS:
            p.goto(server + path)
            wait_drawn(p)
            p.wait_for_timeout(1000)  # a favicon or a late font is asked for after the draw
            assert p.locator("[data-testid='stException']").count() == 0, path
        icon = p.locator("link[rel='shortcut icon']").get_attribute("href")
    finally:
        context.close()
    assert any(urlparse(u).hostname == "127.0.0.1" for u in asked)  # the recorder saw the pages
    assert elsewhere(asked) == [], sorted(set(elsewhere(asked)))
    assert icon and icon.startswith("data:image/svg+xml"), icon  # the tab has the app's own icon
