"""The run's name and Start: a free name offered (name-2 when a shared link names a taken one), the
teacher password or a class's budget, a double click that starts one run, not two.
"""

from __future__ import annotations

import time

import streamlit as st

from serving import jobs
from ui import classroom, state

DEFAULT_NAME = "our-model"
START_GUARD_S = 5.0  # a second Start within this long of the first is a double click
_JUST_STARTED = "_t_just_started"  # (name, time) of this session's last Start


def _name_problem(name: str) -> str | None:
    try:
        path = jobs.run_dir(name)
    except jobs.JobError as exc:
        return str(exc)
    if path.exists() or (jobs.bundled_dir() / name).exists():
        return f"A run or model named {name!r} already exists; choose another name."
    return None


def _free_name(base: str = DEFAULT_NAME) -> str:
    """base, or base-2, base-3, ... : the first name no run has."""
    names = (base, *(f"{base}-{i}" for i in range(2, 1000)))
    return next((n for n in names if _name_problem(n) is None), base)


def draw_name_and_start(
    settings, text, auth: jobs.Auth, problems: list[str], promised: dict | None = None
) -> str | None:
    left, right = st.columns([2, 1], vertical_alignment="bottom")
    first_draw = "t_name" not in st.session_state
    wanted = state.url_str("t_name", _free_name(), 64)
    if first_draw and _name_problem(wanted) and (jobs.runs_root() / wanted).is_dir():
        wanted = _free_name(wanted)  # a shared link names the teacher's run: offer name-2
        state.set_value("t_name", wanted)
    name = state.bind(
        left.text_input,
        "t_name",
        wanted,
        "Run name",
        help="Letters, digits, '-' and '_'; the model appears under this name in the picker.",
    )
    name_problem = _name_problem(name)
    auth = classroom.run_grant(settings) or auth  # a class's budget lets its students train
    locked = auth.required and not auth.given
    clicked = right.button(
        "Start training",
        key="t_start",
        type="primary",
        disabled=bool(problems or name_problem or locked or settings is None),
        use_container_width=True,
    )
    if name_problem:
        st.error(name_problem)
    if locked:
        st.info("Starting a run needs the teacher password.")
    if not clicked:
        return None
    just = st.session_state.get(_JUST_STARTED)
    if just and time.monotonic() - just[1] < START_GUARD_S:  # a double click: one run, not two
        st.info(f"“{just[0]}” has just started; it is below.")
        return None
    try:
        jobs.start(name, settings, text=text, auth=auth, estimate=promised)
    except jobs.JobError as exc:
        st.error(str(exc))
        return None
    st.session_state[_JUST_STARTED] = (name, time.monotonic())
    st.success(f"Started “{name}”.")
    classroom.run_started(name)  # on the class's leaderboard, or why not
    state.set_value("t_name", _free_name(name))  # the form is ready for the next run
    return name
