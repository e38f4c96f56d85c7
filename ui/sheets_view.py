"""The Lessons page's exercise sheets: made on demand in a child process, then downloaded.

Making a lesson's sheets runs the app headless at every stop, about a second or two a stop, so it
runs once per change of the lesson file, in a child process that serving/sheets.py starts (with
the teacher password when the server has one; one build per lesson and one lesson at a time on
the server) and the files are kept in sheets/<lesson>/ of the runs folder for every session and
server process. While a build runs, every session showing the lesson watches it end.
"""

from __future__ import annotations

import streamlit as st

from serving import sheets
from serving.jobs import JobError
from ui import teacher
from viz_model.analysis.claims import md_escape
from viz_model.lessons.lesson_file import Lesson

FILES = {  # file -> (button label, MIME type)
    "student.html": ("Student sheet (print)", "text/html"),
    "teacher.html": ("Teacher sheet (print)", "text/html"),
    "student.md": ("Student sheet (Markdown)", "text/markdown"),
    "teacher.md": ("Teacher sheet (Markdown)", "text/markdown"),
}
WATCH_S = 2.0  # seconds between two looks at a build in progress
_ASKED = "sheets_asked_{}"  # session key: this session asked for the lesson's sheets


def downloads(lesson: Lesson) -> None:
    """Download buttons for a lesson's sheets, or what makes them."""
    try:
        folder = sheets.made(lesson)
        build = sheets.running(lesson.id)
    except JobError as error:  # a lesson file whose name is no folder name
        st.caption(f"No exercise sheets: {md_escape(str(error))}.")
        return
    if build is not None:
        st.fragment(_watch, run_every=WATCH_S)(lesson)
        return
    asked = st.session_state.pop(_ASKED.format(lesson.id), False)
    if folder is None:
        _maker(lesson, asked)
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


def _maker(lesson: Lesson, asked: bool) -> None:
    """The button that starts a build (the password field beside it when the server has one),
    and, when this session `asked` for the build that just ended, why it made no sheets."""
    if asked and (why := sheets.outcome(lesson)):
        st.error(f"The sheets could not be made: {md_escape(why)}")
    auth = teacher.password_field(f"sheets_password_{lesson.id}")
    if not st.button(
        "Make the exercise sheets",
        key=f"sheets_{lesson.id}",
        help="Questions with the figures they refer to; the teacher's has the model's answers.",
    ):
        return
    try:
        sheets.start(lesson, auth=auth)
    except JobError as error:
        st.error(f"The sheets could not be made: {md_escape(str(error))}")
        return
    st.session_state[_ASKED.format(lesson.id)] = True
    st.rerun()


def _watch(lesson: Lesson) -> None:
    """A build in progress: say so, and rerun the page once it has ended."""
    build = sheets.running(lesson.id)
    if build is None:
        st.rerun()  # the whole page: the downloads, or why there are none
    st.caption(
        f"Making the exercise sheets: opening each of the {len(lesson.stops)} stops to draw its "
        f"figure ({build.age:.0f} s so far; about two seconds a stop)."
    )
