"""A lesson's exercise sheets, made on the server: one child process per lesson, a few at most.

    build = sheets.start(lesson, auth=auth)   # a Build: this one, or the one already making them
    sheets.running(lesson.id)                 # the Build in progress (any server process's), or None
    sheets.made(lesson)                       # the folder once all four files are newer than the lesson
    sheets.outcome(lesson)                    # after a build: None when made, else why not

Making a lesson's sheets runs the app headless at every stop (`python -m scripts.lesson_sheets
LESSON --out FOLDER`): a second or two a stop, and some 450 MB while it runs. So, as for training
jobs (serving/jobs.py, whose lock, password check and liveness check this reuses): a build starts
only with the teacher password when the server has one (`jobs.Auth`); a lesson has at most one
build at a time (a second request, from any session or server process, gets the first one); at
most MAX_BUILDS run on the server at once; these are checked, and the build is recorded, under
the runs folder's lock (RUNS/.jobs.lock). A build older than TIMEOUT_S is stopped by the next
request or wait.

Everything is in the runs folder the app uses (VIZ_RUNS_DIR, else <repo>/runs; serving/paths.py):

    sheets/<lesson>/student.md, teacher.md, student.html, teacher.html   the sheets
    sheets/<lesson>/build.json   {"pid", "pid_started", "started"}: the last build of the lesson
    sheets/<lesson>/build.log    the script's output: the stops done, and why it failed

Not here: what a sheet says (viz_model/lessons/sheets.py), the page's part (ui/sheets_view.py).
"""

from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from serving import jobs
from serving.jobs import JobError
from serving.paths import runs_root
from viz_model.bundles.files import write_json
from viz_model.lessons.lesson_file import Lesson

SCRIPT = "scripts.lesson_sheets"  # the module a build runs (its liveness looks for it)
FILES = ("student.html", "teacher.html", "student.md", "teacher.md")
FOLDER = "sheets"
BUILD_FILE = "build.json"
LOG_FILE = "build.log"
MAX_BUILDS = 1  # builds at once on the server: each holds the whole app (~450 MB) and a core
TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Build:
    """A build of a lesson's sheets: its process and when it started (time.time())."""

    lesson: str
    pid: int
    started: float

    @property
    def age(self) -> float:
        return time.time() - self.started


def sheets_root(root: Path | None = None) -> Path:
    """Where every lesson's sheets live: <runs root>/sheets."""
    return (root or runs_root()) / FOLDER


def folder(lesson_id: str, root: Path | None = None) -> Path:
    """The folder of a lesson's sheets, after checking the id is a safe folder name."""
    try:
        return jobs.run_dir(lesson_id, sheets_root(root))
    except JobError:
        raise JobError(
            f"the sheets of a lesson need a file name of letters, digits, '-' or '_'; "
            f"{lesson_id!r} is not one"
        ) from None


def command(lesson_id: str, out: Path) -> list[str]:
    """The child process of a build."""
    return [sys.executable, "-m", SCRIPT, lesson_id, "--out", str(out)]


def made(lesson: Lesson, root: Path | None = None) -> Path | None:
    """The folder of the lesson's sheets when all are there and newer than the lesson file."""
    path = folder(lesson.id, root)
    files = [path / name for name in FILES]
    if lesson.path is None or not all(p.is_file() for p in files):
        return None
    return path if min(p.stat().st_mtime for p in files) >= lesson.path.stat().st_mtime else None


def running(lesson_id: str, root: Path | None = None) -> Build | None:
    """The build making this lesson's sheets now (started by any session or process), or None."""
    path = folder(lesson_id, root)
    try:
        data = jobs.read_json(path / BUILD_FILE, {})
    except JobError:  # torn by a crash: no build can be running from it
        return None
    pid, started = data.get("pid"), data.get("pid_started")
    if not jobs.worker_alive(pid, path, started, command=SCRIPT):
        return None
    return Build(lesson_id, int(pid), float(data.get("started", started)))


def _running_all(root: Path) -> list[Build]:
    base = sheets_root(root)
    found = []
    for path in base.iterdir() if base.is_dir() else ():
        with contextlib.suppress(JobError):  # a folder no build made
            found.append(running(path.name, root))
    return [b for b in found if b is not None]


def start(lesson: Lesson, *, auth: jobs.Auth, root: Path | None = None) -> Build:
    """Start making the lesson's sheets in a child process, or return the build already making
    them. JobError (shown as it is) for a wrong password, a bad lesson id, a full server or a
    runs folder that cannot be written."""
    jobs.check(auth)
    root = root or runs_root()
    out = folder(lesson.id, root)
    with jobs.locked(root):
        others = []
        for build in _running_all(root):
            if build.age > TIMEOUT_S:
                stop(build)
            elif build.lesson == lesson.id:
                return build
            else:
                others.append(build.lesson)
        if len(others) >= MAX_BUILDS:
            raise JobError(
                f"the server makes the sheets of {MAX_BUILDS} lesson(s) at a time; being made "
                f"now: {', '.join(others)}. Try again when they are done"
            )
        return _launch(lesson.id, out)


def _launch(lesson_id: str, out: Path) -> Build:
    out.mkdir(parents=True, exist_ok=True)
    (out / LOG_FILE).unlink(missing_ok=True)  # this build's log, not the last one's too
    # a training job's share of the cores
    proc = jobs.spawn(command(lesson_id, out), out / LOG_FILE, jobs.Limits.from_env().threads)
    build = Build(lesson_id, proc.pid, time.time())
    record = {"pid": proc.pid, "pid_started": jobs.process_started(proc.pid)}
    try:
        write_json(out / BUILD_FILE, {**record, "started": build.started})
    except BaseException:  # unrecorded, it would escape the cap: stop it
        proc.kill()
        raise
    return build


def stop(build: Build) -> None:
    """End a build (one that ran past TIMEOUT_S)."""
    with contextlib.suppress(psutil.Error):
        psutil.Process(build.pid).kill()


def wait(lesson: Lesson, root: Path | None = None, poll_s: float = 0.2) -> str | None:
    """Wait for the lesson's build to end (stopping it past TIMEOUT_S); outcome() then."""
    while (build := running(lesson.id, root)) is not None:
        if build.age > TIMEOUT_S:
            stop(build)
            return f"making the sheets took over {TIMEOUT_S:g} s and was stopped"
        time.sleep(poll_s)
    return outcome(lesson, root)


def outcome(lesson: Lesson, root: Path | None = None) -> str | None:
    """None when the sheets are made, else why the last build did not make them: the last line
    of its output (the error), or a plain sentence when there is none."""
    if made(lesson, root) is not None:
        return None
    try:
        text = (folder(lesson.id, root) / LOG_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "no build has made them"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "the build ended without a message"
