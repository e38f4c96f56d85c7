"""Every shipped lesson, end to end in Chromium at 1024x768 on the models it names: as a student
(answer, reveal, next) or as a teacher presenting (presenter mode); and a lesson's print sheet
turns every figure into an image and prints to PDF."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from serving.models import ENV_VAR
from tests import test_browser
from tests.test_browser import (
    ROOT,
    SHOTS,
    SMALL,
    TIMEOUT_MS,
    app_server,
    wait_drawn,
)
from ui import lesson as ui_lesson
from viz_model.lessons import lesson_file
from viz_model.lessons.lesson_file import load_lessons

pytestmark = pytest.mark.browser
browser = test_browser.browser  # the fixture, shared

PANEL = ".st-key-lesson_panel"
EXCEPTION = "[data-testid='stException']"
SHIPPED, _ = load_lessons(lesson_file.LESSONS_DIR, ui_lesson.catalogue())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A server on the bundled models only: the lessons name them."""
    with app_server(ROOT / "assets" / "models", tmp_path_factory.mktemp("server")) as base:
        yield base


@pytest.fixture
def small_page(browser):
    context = browser.new_context(viewport={"width": SMALL[0], "height": SMALL[1]})
    p = context.new_page()
    yield p
    context.close()


def _wait_for_panel(p, text: str) -> None:
    """Until the lesson panel says `text` and the run has finished (a click's rerun may not have
    started when the old page still reads as done)."""
    p.locator(PANEL).filter(has_text=text).wait_for(timeout=TIMEOUT_MS)
    wait_drawn(p)


def _answer(p, panel) -> None:
    """Commit some answer, as a student who guessed: the first option, 1, or 'e'."""
    panel.get_by_role("button", name="Commit my answer").wait_for(timeout=TIMEOUT_MS)
    panel.locator("input, [role=radiogroup]").first.wait_for(timeout=TIMEOUT_MS)
    wait_drawn(p)
    if panel.locator("[role=radiogroup] label").count():
        panel.locator("[role=radiogroup] label").first.click()
    elif panel.locator("input[type=number]").count():
        box = panel.locator("input[type=number]")
        box.fill("1")
        box.press("Tab")
    else:
        box = panel.locator("input[type=text]")
        box.fill("e")
        box.press("Tab")
    panel.get_by_role("button", name="Commit my answer").click()


# Each lesson once, as a student or (every other lesson) as a teacher presenting: both ways walk
# the same panel, and a walk costs 40-50 s of a CI worker; every stop's view is checked on its
# page by tests/test_page_lessons.py, every chart in presenter mode by test_browser_readability.
WALKS = [
    pytest.param(lesson, i % 2 == 1, id=f"{lesson.id}-{'presenter' if i % 2 else 'student'}")
    for i, lesson in enumerate(SHIPPED)
]


def test_the_walks_take_every_lesson_and_both_ways():
    assert {w.values[0].id for w in WALKS} == {x.id for x in SHIPPED}
    assert {w.values[1] for w in WALKS} == {False, True}


@pytest.mark.parametrize(("lesson", "present"), WALKS)
def test_a_lesson_runs_end_to_end(server, small_page, lesson, present):
    p = small_page
    extra = "&present=1" if present else ""
    p.goto(f"{server}/?lesson={lesson.id}&step=1{extra}")
    wait_drawn(p)
    for step, stop in enumerate(lesson.stops, 1):
        panel = p.locator(PANEL)
        shown = panel.inner_text().replace("\u00a0", " ")  # the stop is held with no-break spaces
        assert f"stop {step} of {len(lesson.stops)}" in shown
        assert stop.question.split("*")[0][:30] in panel.inner_text()
        assert p.locator(EXCEPTION).count() == 0, f"{lesson.id} stop {step}"
        assert f"step={step}" in p.url and f"model={stop.model}" in p.url
        _answer(p, panel)
        _wait_for_panel(p, "model's answer")
        revealed = p.locator(PANEL).inner_text()
        assert "model's answer" in revealed, f"{lesson.id} stop {step}: {revealed[:300]}"
        if present or step == 1:
            SHOTS.mkdir(parents=True, exist_ok=True)
            kind = "present" if present else "student"
            p.screenshot(path=str(SHOTS / f"lesson-{lesson.id}-{step}-{kind}.png"))
        if step < len(lesson.stops):
            p.locator(PANEL).get_by_role("button", name="Next ▶").click()
            _wait_for_panel(p, f"stop {step + 1} of")
    assert p.locator(EXCEPTION).count() == 0


def test_a_print_sheet_holds_each_figure_as_an_image_and_prints(browser, tmp_path):
    lesson = SHIPPED[0]
    done = subprocess.run(
        [sys.executable, "-m", "scripts.lesson_sheets", lesson.id, "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, ENV_VAR: str(ROOT / "assets" / "models")},
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    context = browser.new_context(viewport={"width": SMALL[0], "height": SMALL[1]})
    p = context.new_page()
    p.goto((tmp_path / "teacher.html").as_uri())
    figures = p.locator(".fig").count()
    assert figures >= 1
    p.wait_for_function(
        "document.querySelectorAll('.fig img').length === document.querySelectorAll('.fig').length",
        timeout=TIMEOUT_MS,
    )
    assert p.locator(".fig img[src^='data:image/svg+xml']").count() == figures
    assert p.locator(".fig svg, .fig .plot-container").count() == 0  # nothing live is left
    pdf = p.pdf(format="A4")
    assert pdf.startswith(b"%PDF") and pdf.count(b"/Type /Page") > 1
    context.close()
    student = (tmp_path / "student.md").read_text()
    for stop in lesson.stops:
        assert stop.question in student
