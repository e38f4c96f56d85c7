"""Presenter mode's header line in Chromium at 1024x768 (issue 38): at the top of the page, text
of at least 20 px on one line, naming the model and the training step the sidebar's widgets show
and, in a lesson, the stop; left sharp by the lesson's blur."""

from __future__ import annotations

import pytest

from tests import test_browser
from tests.test_browser import (
    DONE,
    SHOTS,
    SMALL,
    TIMEOUT_MS,
    app_server,
)
from ui import lesson as ui_lesson
from ui import present
from viz_model.lessons import lesson_file
from viz_model.lessons.lesson_file import load_lessons

pytestmark = pytest.mark.browser
browser = test_browser.browser  # the fixture, shared

TOP_PX = 120  # the header ends above this: the first line under Streamlit's toolbar
MIN_TEXT_PX = 20
MAX_HEIGHT_PX = 50  # one line
# The header's text box, its font size and what the sidebar's widgets show (folded away, in the
# page all the same): the model picker's value and the training-step slider's.
HEADER_JS = f"""() => {{
  const p = document.querySelector('.st-key-{present.HEADER_KEY} p');
  const side = document.querySelector('[data-testid=stSidebar]');
  const model = side.querySelector('input[aria-label=Model]');
  const step = side.querySelector('[data-testid=stSliderThumbValue]');
  if (!p) return null;
  const box = p.getBoundingClientRect();
  const blurred = p.closest('[data-testid=stMarkdown]');
  return {{text: p.innerText, top: box.top, bottom: box.bottom, height: box.height,
          px: parseFloat(getComputedStyle(p).fontSize), oneLine: p.scrollWidth <= p.clientWidth,
          filter: getComputedStyle(blurred).filter,
          model: model && model.value, step: step && step.textContent}};
}}"""


def _attention_stop() -> tuple[str, int, int]:
    """(lesson id, stop, number of stops) of the first shipped stop on Attention that masks."""
    shipped, _ = load_lessons(lesson_file.LESSONS_DIR, ui_lesson.catalogue())
    return next(
        (x.id, n, len(x.stops))
        for x in shipped
        for n, stop in enumerate(x.stops, 1)
        if stop.page == "Attention" and stop.hide
    )


@pytest.fixture(scope="module")
def server(models_dir, tmp_path_factory):
    """The bundled models (the lessons name them) and the test model."""
    with app_server(models_dir, tmp_path_factory.mktemp("server")) as base:
        yield base


@pytest.fixture(scope="module")
def projector(browser):  # noqa: F811 (the fixture imported above)
    context = browser.new_context(viewport={"width": SMALL[0], "height": SMALL[1]})
    yield context.new_page()
    context.close()


def _header(p, base: str, address: str, shot: str) -> dict:
    p.goto(f"{base}/{address}")
    p.wait_for_selector("[data-testid=stMain] h1", timeout=TIMEOUT_MS)
    p.wait_for_selector(DONE, timeout=TIMEOUT_MS)
    p.wait_for_timeout(1500)  # a first run may rerun once
    p.wait_for_selector(DONE, timeout=TIMEOUT_MS)
    # On a loaded machine the rerun's elements arrive late (grey placeholders, an empty sidebar):
    # measure once the frame's own widgets, drawn before the header, are there.
    p.wait_for_selector(
        "[data-testid=stSidebar] input[aria-label=Model]", state="attached", timeout=TIMEOUT_MS
    )
    p.wait_for_selector(DONE, timeout=TIMEOUT_MS)
    SHOTS.mkdir(parents=True, exist_ok=True)
    p.screenshot(path=str(SHOTS / f"present-header-{shot}.png"))
    found = p.evaluate(HEADER_JS)
    assert found is not None, f"{address}: no header line"
    assert found["bottom"] <= TOP_PX and found["top"] >= 0, f"{address}: {found}"
    assert found["px"] >= MIN_TEXT_PX and found["height"] <= MAX_HEIGHT_PX, f"{address}: {found}"
    assert found["oneLine"], f"{address}: {found['text']}"
    assert found["model"] and f"Model {found['model']}" in found["text"]
    return found


def test_the_header_shows_the_sidebars_model_and_step_on_a_lesson_stop(server, projector):
    lesson_id, n, stops = _attention_stop()
    found = _header(
        projector, server, f"Attention?lesson={lesson_id}&step={n}&present=1", "attention-lesson"
    )
    assert found["step"] and f"training step {found['step']}" in found["text"]
    assert found["step"].endswith("(final)")
    assert f"stop {n} of {stops}" in found["text"]
    assert found["filter"] == "none"  # the page under the question is blurred, not the header


def test_the_header_follows_a_snapshot_and_home_has_it(server, projector):
    found = _header(projector, server, "Attention?model=test-char&train_step=37&present=1", "step")
    assert found["model"] == "test-char" and found["step"] == "37"
    assert found["text"].endswith("training step 37")
    found = _header(projector, server, "?present=1", "home")
    assert f"training step {found['step']}" in found["text"] and "stop" not in found["text"]


def test_there_is_no_header_outside_presenter_mode(server, projector):
    projector.goto(f"{server}/Attention")
    projector.wait_for_selector("[data-testid=stMain] h1", timeout=TIMEOUT_MS)
    projector.wait_for_selector(DONE, timeout=TIMEOUT_MS)
    assert projector.evaluate(HEADER_JS) is None


# Where each chart of the main area is, beside the header line's bottom edge and the spotlight's
# label: the spotlight must bring each chart wholly on screen under the header.
SPOTLIGHT_JS = f"""() => {{
  const header = document.querySelector('.st-key-{present.HEADER_KEY}');
  const label = document.querySelector('#{present.SPOTLIGHT_ID} span');
  const box = document.getElementById('{present.SPOTLIGHT_ID}');
  const charts = [...document.querySelectorAll('[data-testid=stMain] [data-testid=stPlotlyChart]')]
    .map((c) => c.getBoundingClientRect()).filter((r) => r.height > 20)
    .map((r) => [r.top, r.bottom]);
  return {{header: header && header.getBoundingClientRect().bottom, charts,
          label: label && label.textContent, shown: !!box && getComputedStyle(box).display !== 'none',
          screen: innerHeight}};
}}"""


def _spotlight(p) -> dict:
    p.wait_for_timeout(400)  # the scroll is instant; the label follows on the next frame
    return p.evaluate(SPOTLIGHT_JS)


def test_the_spotlight_puts_each_figure_on_screen_under_the_header(server, projector):
    """Issue 38: a page's figures one click apart, never a scroll: each Next (or a clicker's
    Page Down) brings the next chart wholly on screen under the header line, which stays in view
    with the model and step; Previous goes back; outside presenter mode there is no spotlight."""
    _header(projector, server, "Attention?model=test-char&present=1", "spotlight")
    first = _spotlight(projector)
    n = len(first["charts"])
    assert first["shown"] and n >= 3 and first["label"] == f"{n} figures"
    next_button = projector.locator(f"#{present.SPOTLIGHT_ID} button[aria-label='Next figure']")
    for k in range(n):
        if k % 2:
            projector.keyboard.press("PageDown")
        else:
            next_button.click()
        seen = _spotlight(projector)
        top, bottom = seen["charts"][k]
        assert seen["label"] == f"Figure {k + 1} of {n}", seen
        assert seen["header"] - 1 <= top < seen["header"] + 30, (k, seen)  # right under it
        assert bottom <= seen["screen"], (k, seen)  # wholly on screen
        assert 0 < seen["header"] <= TOP_PX, seen  # the header stays in view
        SHOTS.mkdir(parents=True, exist_ok=True)
        projector.screenshot(path=str(SHOTS / f"present-spotlight-{k + 1}.png"))
    projector.locator(f"#{present.SPOTLIGHT_ID} button[aria-label='Previous figure']").click()
    assert _spotlight(projector)["label"] == f"Figure {n - 1} of {n}"
    projector.goto(f"{server}/Attention?model=test-char")
    projector.wait_for_selector(DONE, timeout=TIMEOUT_MS)
    assert not _spotlight(projector)["shown"]
