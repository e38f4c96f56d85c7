"""The class server's warm-up plan (serving/warm.py): every page on the default model, every
lesson stop, each other model's Home; every page on every model only when asked. The warm-up
itself runs against real processes in tests/test_class_serving.py."""

from __future__ import annotations

import urllib.parse

from serving.models import DEFAULT_MODEL
from serving.warm import EVERY_PAGE, plan
from ui import lesson as ui_lesson
from viz_model.lessons import lesson_file

LESSON = 'title = "x"\nmodel = "m"\n[[stop]]\npage = "Attention"\n[[stop]]\npage = "Generation"\n'


def _q(**query) -> str:
    return urllib.parse.urlencode(query)


def test_the_plan_is_the_default_models_pages_every_lesson_stop_and_each_models_home(
    tmp_path, monkeypatch
):
    monkeypatch.setenv(lesson_file.LESSONS_ENV, str(tmp_path))
    (tmp_path / "a.toml").write_text(LESSON)
    (tmp_path / "broken.toml").write_text("[[stop")  # the Lessons page reports it; no warm-up
    views = plan(["other", DEFAULT_MODEL])
    assert views.sessions == {
        DEFAULT_MODEL: [("", _q(model=DEFAULT_MODEL)), (EVERY_PAGE, _q(model=DEFAULT_MODEL))],
        "lesson a": [("Attention", _q(lesson="a", step=1)), ("Generation", _q(lesson="a", step=2))],
        "other": [("", _q(model="other"))],
    }
    assert views.views == 5


def test_every_model_gets_every_page_when_asked(tmp_path, monkeypatch):
    monkeypatch.setenv(lesson_file.LESSONS_ENV, str(tmp_path))
    views = plan(["other", DEFAULT_MODEL], every_model=True)
    assert views.sessions["other"] == [("", _q(model="other")), (EVERY_PAGE, _q(model="other"))]
    assert set(views.sessions) == {"other", DEFAULT_MODEL}  # no lessons in an empty folder


def test_the_shipped_lessons_stops_are_all_in_the_plan(monkeypatch):
    monkeypatch.delenv(lesson_file.LESSONS_ENV, raising=False)
    lessons, errors = lesson_file.load_lessons(lesson_file.LESSONS_DIR, ui_lesson.catalogue())
    assert lessons and not errors
    sessions = plan([DEFAULT_MODEL]).sessions
    for lesson in lessons:
        pages = [page for page, _ in sessions[f"lesson {lesson.id}"]]
        assert pages == [stop.page for stop in lesson.stops]
