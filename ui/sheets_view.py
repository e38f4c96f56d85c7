"""The Lessons page's exercise sheets: made on demand in a child process, then downloaded.

Making a lesson's sheets runs the app headless at every stop (scripts/lesson_sheets.py), about a
second or two a stop, so it runs once per change of the lesson file and the files are kept in
runs/sheets/<lesson>/ for every session and server process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import streamlit as st

from viz_model.lessons.lesson_file import Lesson

ROOT = Path(__file__).resolve().parent.parent
SHEETS_DIR = ROOT / "runs" / "sheets"
FILES = {  # file -> (button label, MIME type)
    "student.html": ("Student sheet (print)", "text/html"),
    "teacher.html": ("Teacher sheet (print)", "text/html"),
    "student.md": ("Student sheet (Markdown)", "text/markdown"),
    "teacher.md": ("Teacher sheet (Markdown)", "text/markdown"),
}
TIMEOUT_S = 600


def made(lesson: Lesson) -> Path | None:
    """The folder of the lesson's sheets when all are there and newer than the lesson file."""
    folder = SHEETS_DIR / lesson.id
    paths = [folder / name for name in FILES]
    if not all(p.is_file() for p in paths) or lesson.path is None:
        return None
    newest_source = lesson.path.stat().st_mtime
    return folder if min(p.stat().st_mtime for p in paths) >= newest_source else None


def make(lesson: Lesson) -> str | None:
    """Make the sheets in a child process; the error text when it failed."""
    command = [sys.executable, "-m", "scripts.lesson_sheets", lesson.id]
    try:
        done = subprocess.run(
            command, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        return f"Making the sheets took over {TIMEOUT_S} s and was stopped."
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or ["no message"])[-1]
    return None


def downloads(lesson: Lesson) -> None:
    """Download buttons for a lesson's sheets, or a button that makes them."""
    folder = made(lesson)
    if folder is None:
        if st.button(
            "Make the exercise sheets",
            key=f"sheets_{lesson.id}",
            help="Questions with the figures they refer to; the teacher's has the model's answers.",
        ):
            with st.spinner(f"Opening each of the {len(lesson.stops)} stops to draw its figure…"):
                error = make(lesson)
            if error:
                st.error(f"The sheets could not be made: {error}")
            else:
                st.rerun()
        return
    st.caption(
        "Exercise sheets: open a print sheet in the browser and print it (or save it as PDF); the "
        "figures are images of the charts each stop shows."
    )
    columns = st.columns(len(FILES))
    for column, (name, (label, mime)) in zip(columns, FILES.items(), strict=True):
        column.download_button(
            label,
            (folder / name).read_bytes,  # read on the click (an HTML sheet is ~5 MB)
            file_name=f"{lesson.id}-{name}",
            mime=mime,
            on_click="ignore",
            key=f"dl_{lesson.id}_{name}",
        )
