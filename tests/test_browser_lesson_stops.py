"""Every lesson stop on a projector (issue 38): each stop of each shipped lesson
(assets/lessons/*.toml) opened by its address, `<Page>?lesson=<id>&step=<n>&present=1`, in
Chromium at 1024x768, and measured as the room would see it: every text at least 16 px (chart
text and the page's own), every chart within the screen under the header line, and the header
naming the stop ("stop n of N"), the model and the training step the sidebar's widgets hold.

A stop that asks before it shows blurs the page (ui/lesson.py MASK_FILTER) until the student
answers: the text under the blur is measured as it is (a filter leaves the font size alone: it is
the text the room reads once it is revealed), and the stop is then answered with "Just show me",
so the reveal's own text (the model's answer and why) is measured too.

One server and one browser page; the stops in sequence. Uses the helpers of
tests/test_browser_readability.py and the header's of tests/test_browser_present.py; a
screenshot of each stop goes to artifacts/screenshots/ (gitignored) for a person to look at.
"""

from __future__ import annotations

import time

import pytest

from tests import test_browser
from tests.test_browser import DONE, SHOTS, TIMEOUT_MS, app_server
from tests.test_browser_present import HEADER_JS
from tests.test_browser_present import SPOTLIGHT_JS as FIGURES_JS
from tests.test_browser_readability import (
    FIT_JS,
    FONTS_JS,
    HTML_TEXT_JS,
    PRESENTER_FLOOR,
    PROJECTOR,
    open_view,
    small_text,
    too_tall,
)
from ui import lesson as ui_lesson
from ui import present
from viz_model.lessons.lesson_file import LESSONS_DIR, load_lessons

pytestmark = pytest.mark.browser
browser = test_browser.browser  # the fixture, shared

SHOW_ME = "Just show me"
MAX_FAILURES_A_STOP = 5  # texts listed per stop and kind: enough to see the pattern
NEXT_FIGURE = f"#{present.SPOTLIGHT_ID} button[aria-label='Next figure']"


def stops() -> list[tuple[str, int, int, str, str]]:
    """(lesson id, stop, number of stops, page, model) of every stop of every shipped lesson."""
    shipped, errors = load_lessons(LESSONS_DIR, ui_lesson.catalogue())
    assert not errors, errors
    return [
        (x.id, n, len(x.stops), stop.page, stop.model)
        for x in shipped
        for n, stop in enumerate(x.stops, 1)
    ]


@pytest.fixture(scope="module")
def server(models_dir, tmp_path_factory):
    """The bundled models (the lessons name them) and the test model."""
    with app_server(models_dir, tmp_path_factory.mktemp("server")) as base:
        yield base


@pytest.fixture(scope="module")
def projector(browser):  # noqa: F811 (the fixture imported above)
    context = browser.new_context(viewport=PROJECTOR)
    yield context.new_page()
    context.close()


def readability(p, where: str) -> list[str]:
    """What the open view draws under PRESENTER_FLOOR px, and its charts too tall for the screen."""
    charts = [
        f"{where}: “{text}” in “{chart}” is {size:g} px"
        for chart, text, size in small_text(p, PRESENTER_FLOOR)
    ]
    html = [
        f"{where}: “{text}” is {px:g} px" for text, px in p.evaluate(HTML_TEXT_JS, PRESENTER_FLOOR)
    ]
    return (
        charts[:MAX_FAILURES_A_STOP]
        + html[:MAX_FAILURES_A_STOP]
        + [f"{where}: {why}" for why in too_tall(p)]
    )


def header_problems(p, where: str, n: int, total: int, model: str) -> list[str]:
    """The header line names this stop, and the model and step the sidebar's widgets hold; the
    model picker holds the stop's model."""
    found = p.evaluate(HEADER_JS)
    if found is None:
        return [f"{where}: no header line"]
    text, out = found["text"], []
    if f"stop {n} of {total}" not in text:
        out.append(f"{where}: the header “{text}” does not name stop {n} of {total}")
    if not found["model"] or f"Model {found['model']}" not in text:
        out.append(f"{where}: the header “{text}” does not name the model {found['model']!r}")
    if found["model"] != model:
        out.append(f"{where}: the model picker holds {found['model']!r}, the stop names {model!r}")
    step = found["step"]
    if step is not None and f"training step {step}" not in text:
        out.append(f"{where}: the header “{text}” does not name the training step {step!r}")
    if step is None and "training step" in text:
        out.append(f"{where}: the header “{text}” names a step the sidebar has no slider for")
    return out


def extremes(p, where: str, seen: dict) -> None:
    """Keep in `seen` the smallest chart text, the smallest other text and the tallest chart over
    every stop (what issue 38 asks to quote), each with where it was."""
    found = [
        ("smallest chart text", size, f"“{text}” in “{chart}”")
        for chart, text, size in p.evaluate(FONTS_JS)
    ]
    found += [
        ("smallest other text", px, f"“{text}”") for text, px in p.evaluate(HTML_TEXT_JS, 1e9)
    ]
    found += [("tallest chart", -h, f"“{title}”") for title, h in p.evaluate(FIT_JS)[1]]
    for kind, value, what in found:
        if kind not in seen or value < seen[kind][0]:
            seen[kind] = (value, f"{what} at {where}")


def first_figure(p, where: str) -> list[str]:
    """The spotlight's first step puts the page's first figure wholly on screen under the header
    line, as a presenter's first click does."""
    button = p.locator(NEXT_FIGURE)
    if not p.evaluate(FIGURES_JS)["charts"] or not button.count():
        return []
    button.click()
    p.wait_for_timeout(400)  # the scroll is instant; the layout settles on the next frame
    seen = p.evaluate(FIGURES_JS)
    top, bottom = seen["charts"][0]
    if top < seen["header"] - 1 or bottom > seen["screen"]:
        return [
            f"{where}: the first figure spans {top:g}-{bottom:g} px, the screen under the header "
            f"{seen['header']:g}-{seen['screen']:g} px"
        ]
    return []


def reveal(p) -> bool:
    """Answer the stop with "Just show me", if it asks; True once the reveal has drawn."""
    button = p.get_by_role("button", name=SHOW_ME)
    if not button.count():
        return False
    button.click()
    p.wait_for_selector(f"button:has-text('{SHOW_ME}')", state="detached", timeout=TIMEOUT_MS)
    p.wait_for_selector(DONE, timeout=TIMEOUT_MS)
    p.wait_for_timeout(500)  # the charts the mask covered draw again
    p.wait_for_selector(DONE, timeout=TIMEOUT_MS)
    return True


def test_every_lesson_stop_reads_on_a_projector(server, projector):
    """Issue 38's "Done when": every lesson stop in presenter mode at 1024x768, before the answer
    and after its reveal: no text under 16 px, every chart under the header on one screen, and
    a header line with the stop, model and step the view holds."""
    p, failures, seen, started = projector, [], {}, time.monotonic()
    SHOTS.mkdir(parents=True, exist_ok=True)
    for lesson_id, n, total, page, model in stops():
        where = f"{lesson_id} stop {n} ({page})"
        open_view(p, server, page, {"lesson": lesson_id, "step": str(n), "present": "1"})
        p.screenshot(path=str(SHOTS / f"lesson-{lesson_id}-{n}@1024.png"))
        failures += header_problems(p, where, n, total, model)
        failures += readability(p, where)
        extremes(p, where, seen)
        if reveal(p):
            failures += readability(p, f"{where}, revealed")
            extremes(p, f"{where}, revealed", seen)
        failures += first_figure(p, where)
        p.screenshot(path=str(SHOTS / f"lesson-{lesson_id}-{n}-figure@1024.png"))
    took = time.monotonic() - started
    print(f"\n{len(stops())} lesson stops in {took:.0f} s")
    for kind, (value, what) in seen.items():
        print(f"{kind}: {abs(value):g} px, {what}")
    assert not failures, f"{len(failures)} problems at 1024x768:\n" + "\n".join(failures)
