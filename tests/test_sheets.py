"""Exercise-sheet builds (serving/sheets.py): four requests at once start one child process, a
second lesson waits its turn, the teacher password guards a build, and the sheets land in the
runs folder the app uses (VIZ_RUNS_DIR).

The child is a stand-in for scripts.lesson_sheets (the real one runs the whole app headless for
a minute): it counts its own starts, waits a moment and writes the four files, or fails.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from serving import jobs, sheets
from serving.jobs import JobError
from viz_model.lessons.lesson_file import Lesson

FAKE = """
import sys, time, pathlib
out = pathlib.Path(sys.argv[-1])
with open(out.parent / "started.txt", "a") as log:
    log.write(sys.argv[2] + "\\n")
time.sleep(float(sys.argv[1]))
if sys.argv[2] == "broken":
    sys.exit("KeyError: 'no such page'")
for name in ("student.html", "teacher.html", "student.md", "teacher.md"):
    (out / name).write_text("a sheet")
"""


def fake_build(seconds: float = 1.5):
    """A stand-in for sheets.command: the liveness check still finds SCRIPT and the folder."""
    return lambda lesson_id, out: [
        sys.executable,
        "-c",
        FAKE,
        str(seconds),
        lesson_id,
        sheets.SCRIPT,
        "--out",
        str(out),
    ]


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """A runs folder of its own (VIZ_RUNS_DIR), no teacher password, the stand-in build."""
    root = tmp_path / "runs"
    monkeypatch.setenv(jobs.RUNS_ENV, str(root))
    monkeypatch.delenv(jobs.PASSWORD_ENV, raising=False)
    monkeypatch.setattr(sheets, "command", fake_build())
    yield root
    for path in sheets.sheets_root(root).glob("*/"):  # nothing left running
        if (build := sheets.running(path.name, root)) is not None:
            sheets.stop(build)


def lesson(tmp_path: Path, name: str = "demo") -> Lesson:
    """A lesson called `name` whose file exists (only its time matters here)."""
    source = tmp_path / "lesson.toml"
    source.write_text("# a lesson file")
    return Lesson(id=name, title=name, model="m", stops=(), path=source)


def starts(root: Path) -> list[str]:
    path = sheets.sheets_root(root) / "started.txt"
    return path.read_text().split() if path.is_file() else []


def test_four_requests_at_once_start_one_process_and_the_sheets_land_in_viz_runs_dir(
    runs, tmp_path
):
    demo = lesson(tmp_path)
    gate, builds, errors = threading.Barrier(4), [], []

    def click() -> None:
        gate.wait()
        try:
            builds.append(sheets.start(demo, auth=jobs.Auth()))
        except JobError as error:
            errors.append(error)

    clicks = [threading.Thread(target=click) for _ in range(4)]
    for thread in clicks:
        thread.start()
    for thread in clicks:
        thread.join()
    assert not errors and len(builds) == 4
    assert len({b.pid for b in builds}) == 1  # every request got the one build
    assert sheets.wait(demo) is None
    assert starts(runs) == ["demo"]  # one child process
    assert sheets.made(demo) == runs / "sheets" / "demo"
    assert sorted(p.name for p in (runs / "sheets" / "demo").glob("*.html")) == [
        "student.html",
        "teacher.html",
    ]


def test_a_second_lesson_waits_until_the_first_is_made(runs, tmp_path):
    first, second = lesson(tmp_path, "first"), lesson(tmp_path, "second")
    sheets.start(first, auth=jobs.Auth())
    with pytest.raises(JobError, match="1 lesson\\(s\\) at a time; being made now: first"):
        sheets.start(second, auth=jobs.Auth())
    assert sheets.wait(first) is None
    sheets.start(second, auth=jobs.Auth())
    assert sheets.wait(second) is None
    assert starts(runs) == ["first", "second"]


def test_with_a_teacher_password_only_the_right_one_starts_a_build(runs, tmp_path, monkeypatch):
    monkeypatch.setenv(jobs.PASSWORD_ENV, "s3cret")
    demo = lesson(tmp_path)
    with pytest.raises(JobError, match="needs the teacher password"):
        sheets.start(demo, auth=jobs.Auth.resolve(None))
    with pytest.raises(JobError, match="wrong teacher password"):
        sheets.start(demo, auth=jobs.Auth.resolve("guess"))
    assert starts(runs) == []
    sheets.start(demo, auth=jobs.Auth.resolve("s3cret"))
    assert sheets.wait(demo) is None and starts(runs) == ["demo"]


def test_a_failed_build_says_why_and_can_be_asked_again(runs, tmp_path):
    broken = lesson(tmp_path, "broken")
    sheets.start(broken, auth=jobs.Auth())
    assert sheets.wait(broken) == "KeyError: 'no such page'"
    assert sheets.made(broken) is None
    sheets.start(broken, auth=jobs.Auth())  # nothing is held by the failed one
    sheets.wait(broken)
    assert starts(runs) == ["broken", "broken"]


def test_a_build_past_its_time_is_stopped(runs, tmp_path, monkeypatch):
    monkeypatch.setattr(sheets, "command", fake_build(seconds=60))
    demo = lesson(tmp_path)
    build = sheets.start(demo, auth=jobs.Auth())
    monkeypatch.setattr(sheets, "TIMEOUT_S", 0.5)
    assert "took over 0.5 s and was stopped" in sheets.wait(demo)
    deadline = time.monotonic() + 30
    while sheets.running("demo") is not None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert build.pid  # gone: a new request starts a new build
    assert sheets.start(demo, auth=jobs.Auth()).pid != build.pid


def test_a_lesson_file_name_that_is_no_folder_name_is_refused(runs, tmp_path):
    odd = lesson(tmp_path, "../escape")
    with pytest.raises(JobError, match="letters, digits"):
        sheets.start(odd, auth=jobs.Auth())


def test_the_script_writes_to_the_runs_folder_by_default(runs, tmp_path, monkeypatch):
    from scripts import lesson_sheets
    from viz_model.lessons import lesson_file

    (tmp_path / "lessons").mkdir()
    monkeypatch.setenv(lesson_file.LESSONS_ENV, str(tmp_path / "lessons"))
    (tmp_path / "lessons" / "tiny.toml").write_text(
        'title = "Tiny"\nmodel = "shakespeare-char"\n\n[[stop]]\npage = "Attention"\n'
        'instruction = "Look."\nquestion = "How many tokens?"\nanswer = "token_count"\n'
    )
    written = []
    monkeypatch.setattr(lesson_sheets, "write_sheets", lambda item, out: written.append(out) or [])
    assert lesson_sheets.main(["tiny"]) == 0
    assert written == [runs / "sheets" / "tiny"]
