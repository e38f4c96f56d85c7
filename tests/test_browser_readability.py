"""Readable on a projector (docs/ARCHITECTURE.md, Presenter mode and projectors): at 1024x768, every piece of text plotly draws in
every chart on every page is at least 12 px, and every text (charts, prose, chips, tables,
formulas) at least 16 px in presenter mode (`?present=1`); the sidebar's prompt box and model picker are on screen without scrolling.

The font size is what the browser computed for each SVG `text` element inside each
`[data-testid=stPlotlyChart]`, after the charts have drawn. Charts inside closed expanders and
tabs count too: their text is drawn, only hidden. Pages open with the bundled default model and
prompt, and the Attention and Residual stream pages also with a 43-character prompt and a
128-token one (the default model reads characters, so 128 characters are 128 tokens).

One server and one browser; pages in sequence. Uses the helpers of tests/test_browser.py.
"""

from __future__ import annotations

import os
from urllib.parse import urlencode

import pytest

from serving import jobs
from tests.test_browser import (  # noqa: F401 (browser is a fixture)
    DONE,
    TIMEOUT_MS,
    app_server,
    browser,
    free_port,
    open_home_once,
    start_server,
    stop_server,
    wait_healthy,
)
from ui import nav

pytestmark = pytest.mark.browser

PROJECTOR = {"width": 1024, "height": 768}
FLOOR = 12  # px, every page
PRESENTER_FLOOR = 16  # px, with ?present=1
PROMPT_43 = "KING:\nWhat is the matter with you, my lord?"
PROMPT_128 = (
    "ROMEO:\nBut soft, what light through yonder window breaks? It is the east, "
    "and Juliet is the sun. Arise, fair sun, and kill the e"
)
LONG_PROMPT_PAGES = ("Attention", "Residual_stream")

# Every plotly chart's drawn text: [chart title or number, the text, its computed font size].
FONTS_JS = """() => Array.from(document.querySelectorAll('[data-testid=stPlotlyChart]'))
  .flatMap((chart, i) => {
    const title = chart.querySelector('.gtitle');
    const name = (title && title.textContent.trim()) || ('chart ' + (i + 1));
    // a tspan with its own size: a superscript (10²) or subscript plotly draws at 70%
    return Array.from(chart.querySelectorAll('svg text, svg tspan[style*="font-size"]'))
      .filter(t => t.textContent.trim())
      .map(t => [name, t.textContent.trim().slice(0, 40), parseFloat(getComputedStyle(t).fontSize)]);
  })"""
# How many charts the page has and how many have drawn their plotly SVG, and whether the script
# has finished: a chart mounts a moment after the script ends, and a first run may rerun once.
STATE_JS = """() => {
  const charts = Array.from(document.querySelectorAll('[data-testid=stPlotlyChart]'));
  return [charts.length, charts.filter(c => c.querySelector('.main-svg text')).length,
          !!document.querySelector("[data-testid='stApp'][data-test-script-state='notRunning']")];
}"""
SETTLED_POLLS = 2  # the same finished state this many polls in a row (POLL_MS apart): settled
POLL_MS = 300
# [label, bottom edge in px] of the sidebar's prompt box and model picker.
SIDEBAR_JS = """() => {
  const side = document.querySelector('[data-testid=stSidebarContent]');
  const box = side && side.querySelector('textarea');
  const picker = side && Array.from(side.querySelectorAll('[data-testid=stSelectbox]'))
    .find(s => s.innerText.includes('Model'));
  return [['prompt box', box], ['model picker', picker]]
    .map(([name, el]) => [name, el ? el.getBoundingClientRect().bottom : null]);
}"""


def views() -> list[tuple[str, str, dict[str, str]]]:
    """(name, url path, query) of every page, then the long-prompt views."""
    found = [(p.label, p.url_path, {}) for p in nav.all_pages()]
    for path in LONG_PROMPT_PAGES:
        found.append((f"{path} (43 characters)", path, {"prompt": PROMPT_43}))
        found.append((f"{path} (128 tokens)", path, {"prompt": PROMPT_128}))
    return found


def open_view(p, base: str, path: str, query: dict[str, str]) -> None:
    """Open a view and wait until its script has finished and every chart has drawn."""
    p.goto(f"{base}/{path}" + (f"?{urlencode(query)}" if query else ""))
    p.wait_for_selector("[data-testid=stMain] h1", timeout=TIMEOUT_MS)  # the script has begun
    p.wait_for_selector(DONE, timeout=TIMEOUT_MS)
    seen, same = None, 0
    for _ in range(TIMEOUT_MS // POLL_MS):
        now = p.evaluate(STATE_JS)
        done = now[2] and now[0] == now[1]
        same = same + 1 if done and now == seen else 0
        if same >= SETTLED_POLLS:
            return
        seen = now
        p.wait_for_timeout(POLL_MS)
    raise AssertionError(f"{path}: the charts did not settle ({seen}: charts, drawn, finished)")


def small_text(p, floor: float) -> list[tuple[str, str, float]]:
    """The chart text on the open page drawn under `floor` px."""
    return [(chart, text, size) for chart, text, size in p.evaluate(FONTS_JS) if size < floor]


def smallest(p) -> float | None:
    sizes = [size for _, _, size in p.evaluate(FONTS_JS)]
    return min(sizes) if sizes else None


@pytest.fixture(scope="module")
def server(models_dir, tmp_path_factory):
    """One server, with the test model and an empty runs folder of its own (the Training test
    starts a run there); Home opened once, as a teacher does before sharing a deep link."""
    runs = tmp_path_factory.mktemp("runs")
    env = {jobs.RUNS_ENV: str(runs), "VIZ_JOB_THREADS": "1"}
    try:
        with app_server(models_dir, tmp_path_factory.mktemp("server"), **env) as base:
            yield base
    finally:
        _stop_runs(runs)


def _stop_runs(runs) -> None:
    old = os.environ.get(jobs.RUNS_ENV)
    os.environ[jobs.RUNS_ENV] = str(runs)
    try:
        for view in jobs.list_runs():
            if view.live:
                jobs.stop(view.name, auth=jobs.Auth())
    finally:
        if old is None:
            os.environ.pop(jobs.RUNS_ENV, None)
        else:
            os.environ[jobs.RUNS_ENV] = old


@pytest.fixture(scope="module")
def projector(browser):  # noqa: F811 (the fixture imported above)
    context = browser.new_context(viewport=PROJECTOR)
    yield context.new_page()
    context.close()


# Every text of the page itself (not a chart's: small_text measures those) under `floor` px:
# prose, chips, tables, code, formulas. Not the hidden MathML copy of a formula, nor KaTeX's
# zero-width spacers, nor a script of a script in a formula (a subscript's subscript).
HTML_TEXT_JS = """(floor) => { const out = [];
  for (const e of document.querySelectorAll('[data-testid=stMain] *')) {
    if (![...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
    if (e.closest('[data-testid=stPlotlyChart], .katex-mathml, .katex .mtight .mtight')) continue;
    if ((e.className || '').toString().includes('vlist-s')) continue;
    const style = getComputedStyle(e), box = e.getBoundingClientRect();
    if (!box.width || style.visibility === 'hidden' || style.display === 'none') continue;
    const px = parseFloat(style.fontSize);
    if (px < floor) out.push([e.textContent.trim().slice(0, 40), px]);
  }
  return out; }"""


# [the header line's bottom edge on the page, [title, height] of every chart]: presenter mode.
FIT_JS = """() => {
  const header = document.querySelector('.st-key-present_header');
  const top = header ? header.getBoundingClientRect().bottom + window.scrollY : null;
  return [top, Array.from(document.querySelectorAll('[data-testid=stPlotlyChart]')).map((c, i) => {
    const title = c.querySelector('.gtitle');
    return [(title && title.textContent.trim()) || ('chart ' + (i + 1)),
            c.getBoundingClientRect().height]; })];
}"""


def too_tall(p) -> list[str]:
    """Presenter mode: the charts that would not fit the screen under the header line."""
    top, charts = p.evaluate(FIT_JS)
    if top is None:
        return ["no header line"]
    room = PROJECTOR["height"] - top
    return [f"“{title}” is {h:g} px, {room:g} px under the header" for title, h in charts
            if h > room]  # fmt: skip


def check_every_view(p, base: str, floor: float, extra: dict[str, str], html: bool = False) -> None:
    """Every chart's text on every view at `floor` px or more; with `html`, every other text of
    the page too and every chart within the screen under the header line (presenter mode's
    promise: nothing under 16 px on a projector, and a figure seen whole)."""
    failures = []
    for name, path, query in views():
        open_view(p, base, path, {**query, **extra})
        failures += [
            f"{name}: “{text}” in “{chart}” is {size:g} px"
            for chart, text, size in small_text(p, floor)
        ]
        if html:
            found = p.evaluate(HTML_TEXT_JS, floor)
            failures += [f"{name}: “{text}” is {size:g} px" for text, size in found[:5]]
            failures += [f"{name}: {why}" for why in too_tall(p)]
    assert not failures, f"at 1024x768, floor {floor} px:\n" + "\n".join(failures)


def test_every_chart_is_readable_at_1024x768(server, projector):
    check_every_view(projector, server, FLOOR, {})


def test_every_text_is_readable_in_presenter_mode(server, projector):
    """Issue 38: in presenter mode at 1024x768 chips were 13-15 px, code 14 px, activations 12 px,
    formulas' subscripts 13.6 px (125 texts under 16 px on N-grams alone); and charts were up to
    1,476 px tall (MLP neurons), 1,397 px (the attention heatmap) on a 768-px screen."""
    check_every_view(projector, server, PRESENTER_FLOOR, {"present": "1"}, html=True)


def test_prompt_box_and_model_picker_need_no_scrolling(server, projector):
    open_view(projector, server, "Attention", {})
    # the sidebar's widgets can arrive after the main area's on a loaded machine
    projector.wait_for_selector(
        "[data-testid=stSidebarContent] textarea", state="attached", timeout=TIMEOUT_MS
    )
    for name, bottom in projector.evaluate(SIDEBAR_JS):
        assert bottom is not None, f"no {name} in the sidebar"
        assert bottom <= PROJECTOR["height"], f"the {name} ends at {bottom:g} px, below the screen"


def test_presenter_mode_starts_with_the_sidebar_folded_away(server, projector):
    open_view(projector, server, "Attention", {"present": "1"})
    side = projector.locator("[data-testid=stSidebar]")
    assert side.get_attribute("data-collapsed") == "true"
    assert side.bounding_box()["x"] + side.bounding_box()["width"] <= 0  # off the screen
    assert "present=1" in projector.url  # the URL keeps it, for the next page and a shared link


def test_start_on_training_brings_the_live_panel_into_view(server, projector):
    open_view(projector, server, "Training", {})
    projector.locator(".st-key-t_start button").click()
    projector.wait_for_selector("[data-testid='stProgress']", timeout=TIMEOUT_MS)
    projector.wait_for_function(
        """() => { const h = document.getElementById('runs');
                   const top = h && h.getBoundingClientRect().top;
                   return top !== null && top >= 0 && top < window.innerHeight / 2; }""",
        timeout=TIMEOUT_MS,
    )
