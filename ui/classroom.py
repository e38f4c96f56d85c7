"""A live class in the browser: who this session is in the class, the teacher's view published,
the students' views following it, and the question of the moment.

    run = classroom.enter(page)      # app.py, first: a student moved by the watcher takes the keys
    classroom.boxes(page, side, top) # app.py, after the frame: the class box
    try: page.run()
    finally: classroom.after_run(page, run)  # the teacher's view, once the page has drawn

The teacher's session publishes its view (the page's URL path and its query params, which carry
the model, the prompt and every choice the page offers) when it changes, as the page *settled*:
at the end of a full run that was neither replaced (a newer click's run: its view may be half
applied, and the browser's address, which a run starts from, may lag the screen) nor overtaken,
and at the end of a page's fragment (`view_fragment`), as the keys that fragment changed. The
teacher's box, a fragment on a short timer that runs only between full runs, publishes the view
of a run that stopped (st.stop) as the frame left it when no newer run began, and retries a view
the database refused; it never reads the address. The Live class page, the
teacher's control room, is never published. A student's class box is a fragment; this
process's watcher (ui/class_watch.py) runs the teacher's page in the student's session when the
teacher moves (`enter` then gives that run the teacher's keys) and reruns the box when a question
changes; where Streamlit cannot be nudged, the box polls every POLL_S and applies a move itself
(`apply_view`: the keys, then st.switch_page). Presenter mode is the teacher's own and is not
followed. A student's seat (their member token) and the teacher's key are kept in the session
and in a cookie of that browser, never in an address (students share links; a projector shows
the address bar), so a reload, or a browser that reconnects to another server process, is
still in the class, and a shared link opens the view, not the seat.

Not here: the class database and who may do what (serving/classroom/), the Live class page.
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any

import streamlit as st
from cachetools import TTLCache

from serving import jobs
from serving.classroom import board, classes, questions
from serving.classroom.store import ClassRefused, ClassStateError
from ui import class_watch, lesson, nav, present, state, teacher
from ui import streamlit_internals as internals
from viz_model.analysis.claims import md_escape
from viz_model.lessons.truth import Truth, visible_token
from viz_model.training.settings import RunSettings

SEAT = class_watch.SEAT  # the URL key a seat once rode in: never read, dropped where met
PRIVATE = frozenset({SEAT, "present", "join"})  # URL keys that are one browser's, never followed
POLL_S = 1.0  # a student box's timer where the watcher cannot push (ui/class_watch.py)
SAFETY_S = 120.0  # its timer where the watcher pushes (and asks again): a net for a lost watcher
PUBLISH_S = 0.5  # the teacher's fragment: retries a settled view the database refused
LEAD_S = 2.0  # the teacher's lesson panel: the count of answers to this stop's question
BOX_KEY = lesson.CLASS_BOX_KEY  # the student's box: kept out of the lesson's mask
DASHBOARD_TTL_S = 2.0  # the teacher's counts: live enough, and a class's runs read rarely
HEARTBEAT_S = 5.0  # a student's "I am here, on this page" (a write): the dashboard's 15 s window
_KEY = "_class"  # this session's Membership
_RUN = "_class_run"  # the number of this session's newest full run (app.py's)
_COOKIE = "_class_cookie"  # {cookie name: (value, max-age)}, written on the next run
_PANEL_DREW = "_class_panel_drew"  # the room's question as the student's lesson panel last drew it
_COOKIES_READ = "_class_cookies_read"
_UNREACHABLE = "_class_unreachable"  # why the class database could not be asked who this is
RECONNECT_S = 2.0  # while it cannot: how often the box asks again  # this session looked for its class in the cookies
TEACHER_COOKIE = "viz_class_teacher"  # the teacher's class id and key, in their browser only
SEAT_COOKIE = "viz_class_seat"  # a student's member token, in their browser only
COOKIE_S = 12 * 3600  # a class day
CLASS_ROUTE = "Class"  # the Live class page: the teacher's control room, never followed

_dashboards: TTLCache = TTLCache(maxsize=16, ttl=DASHBOARD_TTL_S)  # class id -> Dashboard
_boards: TTLCache = TTLCache(maxsize=16, ttl=DASHBOARD_TTL_S)  # class id -> leaderboard rows


@dataclass
class Membership:
    """This session's place in a class: a teacher (secret = the teacher key) or a student
    (secret = the member token)."""

    class_id: int
    code: str
    title: str
    role: str  # "teacher" | "student"
    secret: str | jobs.Auth = field(repr=False)  # the teacher key, the password, or the token
    name: str = ""
    following: bool = True
    seen_version: int = 0  # the teacher's view version this session last applied (students)
    published: str = ""  # what this session last published (teachers): page + params as text
    settled: tuple[str, dict[str, str]] | None = None  # the view as the page last settled
    draft: tuple[int, str, dict[str, str]] | None = None  # (run, view) as the frame left it
    answers: dict[int, str] = field(default_factory=dict)  # question id -> this student's answer
    looked_up: set[int] = field(default_factory=set)  # questions whose answer was read (once)
    beat_at: float = 0.0  # the last heartbeat (students without a watcher)
    beat_page: str = ""

    @property
    def teacher(self) -> bool:
        return self.role == "teacher"


# ---- who this session is ----------------------------------------------------------------------


def membership() -> Membership | None:
    """This session's class, from the session, else (a student on a new session: a reload, a
    server process that died) the browser's seat cookie, else (a teacher who reloaded) the
    browser's teacher cookie; None outside. A seat in an address (`seat=`, as links once carried
    it, or a classmate's shared link) is dropped unread: a link opens a view, never a seat."""
    ss = st.session_state
    if _KEY in ss:
        return ss[_KEY]
    if SEAT in st.query_params:
        del st.query_params[SEAT]
    if ss.get(_COOKIES_READ):  # the cookies are the session's first request's: read once
        return None
    try:
        found = _from_cookies()
    except ClassStateError as error:  # the class database is out: look again on the next run
        ss[_UNREACHABLE] = str(error)
        return None
    ss.pop(_UNREACHABLE, None)
    ss[_COOKIES_READ] = True
    if found is not None:
        ss[_KEY] = found
    return found


def _from_cookies() -> Membership | None:
    """The class this browser's cookies hold a place in: a seat, else the teacher's key. A seat
    the class database refuses (old, another server's, its class ended) is removed; a database
    that cannot be reached raises ClassStateError and removes nothing."""
    token = browser_cookie(SEAT_COOKIE)
    if not token:
        return _teacher_back()
    try:
        me = classes.member(token)
        info = classes.get_class(me.class_id)
    except ClassRefused:
        info = None
    if info is None or not info.active:
        _set_cookie(SEAT_COOKIE, "", 0)
        return None
    return Membership(info.id, info.code, info.title, "student", token, name=me.name)


def browser_cookie(name: str) -> str | None:
    """A cookie this browser sent when the session began (Streamlit reads them from the first
    request; AppTest has none, and its tests stand one in here)."""
    found = st.context.cookies.get(name)
    return found if isinstance(found, str) and found else None


def begin_teaching(info: classes.ClassInfo, teacher: str | jobs.Auth) -> Membership:
    m = Membership(info.id, info.code, info.title, "teacher", teacher)
    st.session_state[_KEY] = m
    if isinstance(teacher, str):
        _set_cookie(TEACHER_COOKIE, f"{info.id}:{teacher}", COOKIE_S)
    return m


def _teacher_back() -> Membership | None:
    """A teacher whose tab reloaded (a new session): the class whose key the cookie holds."""
    found = teacher_cookie(browser_cookie(TEACHER_COOKIE))
    if found is None:
        return None
    class_id, key = found
    try:
        info = classes.claim(key, class_id)
    except ClassRefused:  # ended, deleted, or not this key's: no class (ClassStateError: retry)
        return None
    return Membership(info.id, info.code, info.title, "teacher", key)


def teacher_cookie(found: Any) -> tuple[int, str] | None:
    """(class id, teacher key) from the teacher cookie's text, None for anything else: a cookie
    is whatever the browser sends (another app on this host may set one: cookies ignore ports),
    so a bad one is no class, never an error on every page."""
    if not isinstance(found, str):  # none (AppTest has no cookies at all)
        return None
    class_id, _, key = found.partition(":")
    if not re.fullmatch(r"[0-9]{1,18}", class_id) or not key:
        return None
    return int(class_id), key


def _set_cookie(name: str, value: str, max_age: int) -> None:
    """A secret in a cookie of this browser only, never in an address (a projector shows the
    address bar, and students share links): the teacher key, a student's seat. Written by the
    next run (`_write_cookies`): these calls are followed by a rerun, which would drop a frame
    drawn now. max_age 0 removes it."""
    st.session_state.setdefault(_COOKIE, {})[name] = (value, max_age)


def _write_cookies(box: Any) -> None:
    """Streamlit cannot set a cookie, so a script in the page does (st.html runs it in the page
    itself, not in a frame); the values are ids and keys this app made (no user text)."""
    pending = st.session_state.pop(_COOKIE, None)
    if not pending:
        return
    lines = "".join(
        f"document.cookie = '{name}={value}; path=/; max-age={max_age}; SameSite=Strict';"
        for name, (value, max_age) in pending.items()
    )
    with box:
        st.html(f"<script>{lines}</script>", unsafe_allow_javascript=True)


def begin_learning(info: classes.ClassInfo, me: classes.Member) -> Membership:
    m = Membership(info.id, info.code, info.title, "student", str(me.token), name=me.name)
    st.session_state[_KEY] = m
    _set_cookie(SEAT_COOKIE, str(me.token), COOKIE_S)
    return m


def leave() -> None:
    m = st.session_state.pop(_KEY, None)
    if m is not None:
        _set_cookie(TEACHER_COOKIE if m.teacher else SEAT_COOKIE, "", 0)


# ---- the view ---------------------------------------------------------------------------------


def current_view(page: nav.Page) -> tuple[str, dict[str, str]]:
    """This session's view as a class sees it: the page's route and its URL keys."""
    params = {k: v for k, v in st.query_params.to_dict().items() if k not in PRIVATE}
    return page.route, params


def class_view(class_id: int) -> classes.View:
    """The class's view, read from the database at most once per VIEW_TTL_S per process."""
    return class_watch.class_view(class_id)


def latest_question(class_id: int) -> questions.Question | None:
    """The class's latest question (open, closed or revealed), as class_view shares it."""
    return class_watch.latest_question(class_id)


def forget(class_id: int) -> None:
    """Drop this process's copies (after the teacher changed the view or the question)."""
    class_watch.forget(class_id, _dashboards, _boards)


def forget_all() -> None:
    """Drop this process's copies of every class (another class database: a test's own)."""
    class_watch.forget_all(_dashboards, _boards)


def settle(m: Membership, route: str, params: dict[str, str]) -> None:
    """The teacher's page has settled on this view: publish it."""
    if route == CLASS_ROUTE:  # the teacher's control room: the class stays where it was
        return
    m.settled = (route, dict(params))
    publish(m)


def publish(m: Membership) -> None:
    """The teacher's settled view into the class, when it differs from what this session last
    put there (a write the database refused is tried again by the teacher's box)."""
    if m.settled is None:
        return
    route, params = m.settled
    text = route + "?" + "&".join(f"{k}={v}" for k, v in sorted(params.items()))
    if text == m.published:
        return
    try:
        classes.set_view(m.secret, m.class_id, route, params)
    except ClassRefused as error:  # the class ended or was taken over
        st.session_state.pop(_KEY, None)
        st.toast(str(error))
        return
    except ClassStateError as error:
        st.toast(str(error))
        return
    m.published = text
    forget(m.class_id)


def apply_view(m: Membership, view: classes.View) -> None:
    """Move this session to the teacher's view: its page, and that page's keys as the teacher
    has them (the others back to their defaults). Ends the run (a page switch)."""
    target, params = class_watch.followed(view)
    if target is None:
        return
    _set_keys(m, view, target, params)
    st.switch_page(target.file, query_params=params)


def enter(page: nav.Page) -> int:
    """app.py, before anything reads the URL's values: a student whose session the watcher has
    just moved to the teacher's page (ui/class_watch.py) takes the teacher's keys, in this same
    run, with no page switch. Returns this run's number (`after_run` publishes a teacher's view
    only from the session's newest run)."""
    run = st.session_state[_RUN] = st.session_state.get(_RUN, 0) + 1
    m = st.session_state.get(_KEY)
    if m is None or m.teacher or not m.following:
        return run
    try:
        view = class_view(m.class_id)
    except (ClassRefused, ClassStateError):
        return run
    if view.version > m.seen_version and view.page == page.route:
        target, params = class_watch.followed(view)
        if target is not None:
            _set_keys(m, view, target, params)
    return run


def _set_keys(m: Membership, view: classes.View, target: nav.Page, params: dict) -> None:
    ss = st.session_state
    for key in class_watch.follow_keys(target):
        ss.pop(key, None)
        ss.pop(state.widget_key(key), None)
    ss.update(params)
    # the spotlit figure lives in the address only (the spotlight's script reads it there)
    state.mirror(present.FIG_KEY, params.get(present.FIG_KEY, ""), drop_empty=True)
    if lesson.LESSON in params:  # the teacher's stop, in the teacher's view (not reapplied)
        lesson.arrive(params[lesson.LESSON], params.get(lesson.STEP, "1"))
    m.seen_version = view.version


# ---- the sidebar ------------------------------------------------------------------------------


def boxes(page: nav.Page, side: Any, top: Any) -> None:
    """The class box: the teacher's in `side` (a container at the top of the sidebar), a
    student's in `top` (a container at the top of the main area, where a question is seen on any
    screen and the lesson's blur does not reach); nothing outside a class."""
    _write_cookies(side)
    m = membership()
    if m is None:
        if _UNREACHABLE in st.session_state:
            with top:
                _reconnecting()
        return
    if m.teacher:
        # the view as the frame left it (model, step, prompt, stop): the class's, should the
        # page stop before it settles (a refusal, an empty prompt: st.stop)
        m.draft = (st.session_state.get(_RUN, 0), *current_view(page))
        with side:
            _teacher_box(m, page)
        if present.is_on():  # the spotlight's figure, for the class (in the main area: a
            with top:  # folded sidebar's elements are not drawn)
                _spotlight_buttons(page.route)
    else:
        with top:
            _student_box(m, page)


@st.fragment(run_every=RECONNECT_S)
def _reconnecting() -> None:
    """A reload while the class database was out (a PostgreSQL restart, a locked SQLite file):
    the browser's place in the class is kept, said, and taken back as soon as the database
    answers, with no click (the whole page again, in the class)."""
    if in_fragment_rerun() and membership() is not None:
        st.rerun()
    if _UNREACHABLE in st.session_state:  # (its words may name the server's files: not shown)
        st.warning(
            "Your place in the live class is kept, but the class database cannot be reached "
            f"just now. This page tries again every {RECONNECT_S:g} s."
        )


def after_run(page: nav.Page, run: int) -> None:
    """After the page ran (or stopped): a student's place in the class's moves goes to the next
    (ui/class_watch.py); a teacher's view, as the page settled, goes to the class. Not from a
    run that was replaced (a rerun, a page switch, a newer click: its view may be half applied;
    Streamlit refuses it the session's state anyway) or stopped (st.stop: its view as the frame
    left it waits for the teacher's box, which runs only between full runs and knows whether a
    newer run began), nor from one a newer run overtook."""
    class_watch.ran()  # no session state read: it would end a stopped run here
    if internals.is_rerun_or_stop(sys.exc_info()[1]):
        return
    m = st.session_state.get(_KEY)
    if m is None or not m.teacher:
        return
    route, params = current_view(page)  # read first, then checked: no newer run reset them yet
    if st.session_state.get(_RUN) == run:
        m.draft = None
        settle(m, route, params)


def view_fragment(body: Any) -> Any:
    """`st.fragment` for a part of a page whose widgets change the view (a position, a neuron):
    a teacher's class sees the keys that part changed, on the view the page settled on (the rest
    of the address a fragment starts from may lag the screen)."""

    @functools.wraps(body)
    def part(*args: Any, **kwargs: Any) -> Any:
        before = st.query_params.to_dict()
        done = body(*args, **kwargs)
        m = st.session_state.get(_KEY)
        if m is not None and m.teacher and m.settled is not None and in_fragment_rerun():
            after = st.query_params.to_dict()
            route, params = m.settled
            moved = {k: v for k, v in after.items() if before.get(k) != v and k not in PRIVATE}
            kept = {k: v for k, v in params.items() if k in after or k not in before}
            settle(m, route, {**kept, **moved})
        return done

    return st.fragment(part)


@view_fragment
def _spotlight_buttons(route: str) -> None:
    """A teacher's spotlight (ui/present.py), for the class: one hidden button a figure, which the
    spotlight's script clicks as it brings figure n up; the click puts "<route>:<n>" under
    present.FIG_KEY in the address and, through view_fragment, in the class's view, so every
    follower's page brings up the same figure. A fragment: a click reruns only these buttons."""
    box = st.container(key=present.FIGURE_BUTTONS_KEY)
    for n in range(1, present.MAX_FIGURES + 1):
        if box.button(str(n), key=f"{present.FIGURE_BUTTON}{n}"):
            state.mirror(present.FIG_KEY, f"{route}:{n}")


@st.fragment(run_every=PUBLISH_S)
def _teacher_box(m: Membership, page: nav.Page) -> None:
    box = st.container(border=True)
    box.markdown(f"**Live class** · code **{m.code}**")
    if st.session_state.get(_KEY) is not m:
        return
    if in_fragment_rerun():
        # No full run is under way while this one runs: the view of a run that stopped (the
        # frame's) stands when no newer run began since; a view the database refused is tried
        # again. Never the
        # address itself: a fragment starts from the browser's, which may lag the screen.
        draft, m.draft = m.draft, None
        if draft is not None and draft[0] == st.session_state.get(_RUN):
            settle(m, draft[1], draft[2])
        publish(m)
        state.keep_address(st.session_state.get(_RUN, 0))  # the teacher's own address bar
    try:
        counts = dashboard(m.class_id)
    except ClassStateError as error:
        box.caption(md_escape(str(error)))
        return
    box.caption(
        f"{counts.connected} connected · {counts.following} following you. The class sees "
        "what you see (presenter mode stays yours)."
    )


def leaderboard(class_id: int) -> list[board.Standing]:
    """The class's runs ranked, read at most once per DASHBOARD_TTL_S per process (it reads every
    registered run's folder, and every student on Live class shows it)."""
    return class_watch.shared(_boards, class_id, board.leaderboard)


def dashboard(class_id: int) -> board.Dashboard:
    """The class's numbers, read at most once per DASHBOARD_TTL_S per process (it reads the
    status of the class's runs)."""
    return class_watch.shared(_dashboards, class_id, board.dashboard)


def lead_stop(place: lesson.Place, truth: Any) -> lesson.RoomAsks | None:
    """The teacher's part of a lesson stop's panel in a class: ask the room this stop's question
    (its truth measured on the model on the teacher's screen, kept for the reveal), watch the
    answers come in, reveal it to everyone. None outside a class or for a student (the panel
    then works as alone)."""
    m = st.session_state.get(_KEY)
    if m is None or not m.teacher:
        return None
    try:
        q = latest_question(m.class_id)
    except (ClassRefused, ClassStateError) as error:
        st.caption(md_escape(str(error)))
        return None
    if q is None or (q.lesson_id, q.step) != place.key:
        row = st.container(horizontal=True, vertical_alignment="bottom", gap="small")
        seconds = timer_choice(row, "class_ask_stop_timer")
        if row.button("Ask the room this question", type="primary", key="class_ask_stop"):
            _teacher_act(
                m,
                lambda: questions.ask_stop(
                    m.secret, m.class_id, place.lesson, place.step, truth, seconds=seconds
                ),
            )
        # No private "Just show me" for the teacher: the projected screen and every follower's
        # would part (the answer on the wall, the students' pages still blurred)
        if row.button("Show everyone the answer", key="class_show_stop",
                      help="Skip the question: the answer is shown on every screen."):  # fmt: skip
            _teacher_act(m, lambda: _show_stop(m, place, truth))
        st.caption("The room answers only once you ask; until then the answer stays hidden.")
        return lesson.RoomAsks(revealed=False, answer=None, asked=False)
    if q.truth is not None:
        return lesson.RoomAsks(revealed=True, answer=None)
    _room_answering(m, q.id)
    return lesson.RoomAsks(revealed=False, answer=None)


def _show_stop(m: Membership, place: lesson.Place, truth: Any) -> None:
    """A stop's answer shown to the room unasked: asked and revealed at once, so every screen
    (the teacher's, each follower's) reads the same revealed question."""
    q = questions.ask_stop(m.secret, m.class_id, place.lesson, place.step, truth)
    questions.reveal(m.secret, q.id)


TIMERS = {"No time limit": None, "30 s": 30, "1 min": 60, "2 min": 120}  # the teacher's timers


def timer_choice(where: Any, key: str) -> int | None:
    """How long the room has to answer a question about to be asked (None: until closed)."""
    label = where.selectbox("Time to answer", list(TIMERS), key=key, width=170)
    return TIMERS[label]


def answering_line(q: questions.Question, answered: int, members: int) -> str:
    """The teacher's count of answers, with the timer or the lock: what the room is doing."""
    if q.state == "open":
        left = q.seconds_left()
        clock = "" if left is None else f" · {math.ceil(left)} s left"
        return f"The room is answering: {answered} of {members} have answered{clock}."
    why = "Time is up" if q.closed_at is None else "Answers are closed"
    return f"{why}: {answered} of {members} answered."


@st.fragment(run_every=LEAD_S)
def _room_answering(m: Membership, question_id: int) -> None:
    """How many have answered, live, with the time left; Close answers (the lock) and Reveal
    (the answer kept when it was asked)."""
    try:
        q, dist = questions.get_question(question_id), questions.distribution(question_id)
    except (ClassRefused, ClassStateError) as error:
        st.caption(md_escape(str(error)))
        return
    st.info(answering_line(q, dist.total, dist.members))
    row = st.container(horizontal=True, gap="small")
    if row.button(
        "Reveal the answer to the room", type="primary", key=f"class_reveal_{question_id}"
    ):
        _teacher_act(m, lambda: questions.reveal(m.secret, question_id))
    if q.state == "open" and row.button("Close answers", key=f"class_close_{question_id}",
                                        help="No more answers; reveal when you are ready."):  # fmt: skip
        _teacher_act(m, lambda: questions.close(m.secret, question_id))


def _teacher_act(m: Membership, action: Any) -> None:
    """A teacher's class action from a page: done, then the whole page again (the panel and
    the mask follow it), or what went wrong said."""
    try:
        action()
    except (ClassRefused, ClassStateError) as error:
        st.warning(md_escape(str(error)))
        return
    forget(m.class_id)
    st.rerun()


def _student_box_body(m: Membership, page: nav.Page) -> None:
    """A student's class box: applies the teacher's move, offers to stop or follow again, and
    shows the question. Rerun by this process's watcher when the class moves (ui/class_watch.py)
    or, where Streamlit cannot be nudged, by the browser every POLL_S."""
    if st.session_state.get(_KEY) is not m:
        return
    box = st.container(border=True, key=BOX_KEY)
    box.markdown(f"**{md_escape(m.title)}** · you are {md_escape(m.name)}")
    # the teacher's spotlit figure (present.FIG_KEY in a followed view) is brought up here too,
    # and a new question scrolls this box into view
    box.html(present.SPOTLIGHT_JS, unsafe_allow_javascript=True)
    try:
        view, question = class_view(m.class_id), latest_question(m.class_id)
    except (ClassRefused, ClassStateError) as error:
        box.caption(md_escape(str(error)))
        return
    if view.ended:
        box.info("The teacher has ended the class. Every page is yours to explore.")
        leave()  # out of the class; its seat cookie goes with the next run
        return
    if m.following and view.page and view.version > m.seen_version:
        apply_view(m, view)  # a page switch: the box runs again on the teacher's page
    shown = class_watch.mark(view, question, m.following)
    if not class_watch.register(m.class_id, m.secret, page.route, m.following, shown):
        _heartbeat(m, page)  # no watcher: the box says it is here itself
    if m.following:
        box.caption(f"Following the teacher: your screen moves when theirs does. {_on_screen()}")
        row = box.container(horizontal=True, gap="small")
        if view.page and view.page != page.route and row.button(
            "Back to the teacher's page", key="class_back", type="primary",
            help="You moved away; this brings you to what the teacher shows now.",
        ):  # fmt: skip
            apply_view(m, view)
        if row.button("Stop following", key="class_unfollow", help="Explore on your own."):
            st.session_state[_KEY] = replace(m, following=False)
            st.rerun()
    else:
        box.caption("Exploring on your own.")
        if box.button("Follow the teacher", key="class_follow", type="primary"):
            st.session_state[_KEY] = replace(m, following=True, seen_version=0)
            st.rerun()
    _question_box(box, m, question)
    if in_fragment_rerun() and _room_state(question, _at_stop()) != st.session_state.get(
        _PANEL_DREW
    ):
        # This stop's question was asked or revealed: the lesson panel above the page says so,
        # and the reveal lifts the blur; the box alone cannot redraw them.
        st.session_state[_PANEL_DREW] = _room_state(question, _at_stop())
        st.rerun()


# Pushed by the watcher, the browser's timer is a slow safety net; else it is the poll itself.
_student_box = st.fragment(run_every=SAFETY_S if class_watch.available() else POLL_S)(
    _student_box_body
)


def _on_screen() -> str:
    """Which model and training step this screen shows (a follower can check it against the
    teacher's projector), from this session's values, as the sidebar shows them."""
    model, step = st.session_state.get("model"), st.session_state.get("train_step")
    if not model:
        return ""
    at_step = f", training step {int(step):,}" if isinstance(step, int) else ""
    return f"On screen: **{md_escape(str(model))}**{at_step}."


def _heartbeat(m: Membership, page: nav.Page) -> None:
    now = time.time()
    if now - m.beat_at < HEARTBEAT_S and m.beat_page == page.route:
        return
    classes.heartbeat(m.secret, page.route, m.following)
    m.beat_at, m.beat_page = now, page.route


def _question_box(box, m: Membership, q: questions.Question | None) -> None:
    """The teacher's question: a form until answered, then the answer given, then the reveal. A
    lesson stop's question, once it takes no answer, only at that stop: it is that stop's."""
    if q is None:
        return
    if q.lesson_id is not None and q.state != "open" and _at_stop() != (q.lesson_id, q.step):
        return
    try:
        mine = my_answer(m, q)
    except (ClassRefused, ClassStateError) as error:
        box.caption(md_escape(str(error)))
        return
    box.markdown(f"**The teacher asks:** {md_escape(q.prompt)}")
    if q.truth is not None:
        _revealed(box, q, mine)
    elif mine is not None:
        box.caption(f"Your answer: {shown(q, mine)}. Wait for the reveal.")
    elif q.state == "closed":
        box.caption(
            "The teacher has closed this question." if q.closed_at is not None
            else "Time is up: this question no longer takes answers."
        )  # fmt: skip
    else:
        _countdown(box, q)
        _answer_form(box, m, q)


def my_answer(m: Membership, q: questions.Question) -> str | None:
    """This student's answer to `q`: this session's, else (a reload, perhaps on another process)
    the database's, read once a question: this session's form is the only way to answer after."""
    if q.id not in m.answers and q.id not in m.looked_up:
        found = questions.my_answer(m.secret, q.id)
        m.looked_up.add(q.id)
        if found is not None:
            m.answers[q.id] = found
    return m.answers.get(q.id)


def stop_asked(key: tuple[str, int]) -> lesson.RoomAsks | None:
    """For a student following a class at the lesson stop `key`: whether the class's question
    is this stop's (asked), revealed, and this student's answer. In a class a stop's question is
    answered once, in the class box, where the teacher counts it: the lesson panel shows no form
    of its own. None for a teacher, outside a class, or for a student exploring alone."""
    m = st.session_state.get(_KEY)
    if m is None or m.teacher or not m.following:
        return None
    try:
        q = latest_question(m.class_id)
        st.session_state[_PANEL_DREW] = _room_state(q, key)
        if q is None or (q.lesson_id, q.step) != key:
            return lesson.RoomAsks(revealed=False, answer=None, asked=False)
        return lesson.RoomAsks(q.truth is not None, my_answer(m, q))
    except (ClassRefused, ClassStateError):
        return None


def _room_state(q: questions.Question | None, key: tuple[str, int] | None) -> Any:
    """What a student's lesson panel shows of the room's question at stop `key`: asked or not,
    and whether revealed (the blur goes with the reveal)."""
    if q is None or key is None or (q.lesson_id, q.step) != tuple(key):
        return None
    return (q.id, q.truth is not None)


def _at_stop() -> tuple[str, int] | None:
    """The lesson stop this session is at (as the panel placed it), None outside a lesson."""
    ss = st.session_state
    lesson_id, step = ss.get(lesson.LESSON), ss.get(lesson.STEP)
    return (lesson_id, step) if lesson_id and isinstance(step, int) else None


def _countdown(box, q: questions.Question) -> None:
    """A timed question's seconds left, counted down in the browser (the box is redrawn when the
    time is up: ui/class_watch.py sees the question's state turn)."""
    left = q.seconds_left()
    if left is None:
        return
    # Only numbers of this app's own go into the script: no user text.
    box.html(
        f'<p class="class-timer">Answer within <b><span id="class-timer-{q.id}">'
        f"{math.ceil(left)}</span> s</b></p>"
        f"<script>(() => {{ const end = Date.now() + {left * 1000:.0f}; "
        f"const el = document.getElementById('class-timer-{q.id}'); if (!el) return; "
        "const tick = () => { const s = Math.max(0, Math.ceil((end - Date.now()) / 1000)); "
        "el.textContent = s; if (s > 0) setTimeout(tick, 250); }; tick(); })();</script>",
        unsafe_allow_javascript=True,
    )


def _answer_form(box, m: Membership, q: questions.Question) -> None:
    with box.form(f"class_answer_{q.id}", border=False):
        if q.options:
            value = st.radio("Your answer", q.options, index=None)
        elif q.kind == "number":
            unit = q.spec.get("unit", "")
            value = st.number_input(f"Your answer{f' ({unit})' if unit else ''}", value=None)
        else:
            value = st.text_input("Your answer: a token (␣ for a space)", max_chars=40)
        sent = st.form_submit_button("Send my answer", type="primary")
    if not sent:
        return
    if value in (None, ""):
        box.warning("Choose or type an answer first.")
        return
    try:
        questions.answer(m.secret, q.id, value)
    except (ClassRefused, ClassStateError) as error:
        m.looked_up.discard(q.id)  # answered in another tab, say: the next run reads it
        box.warning(md_escape(str(error)))
        return
    m.answers[q.id] = questions.check_value(q, value)[0]  # as stored
    # The box again, now with the answer given and no form (the form drawn in this run stays
    # until the next one).
    st.rerun(scope="fragment" if in_fragment_rerun() else "app")


def shown(q: questions.Question, value: str | None) -> str:
    """An answer or the truth as a lesson's reveal prints it (a token in quotes, ␣ for a space),
    escaped for Markdown."""
    text = "" if value is None else str(value)
    if q.kind == "number" and text:
        with contextlib.suppress(ValueError):  # as the lesson's reveal: 14.01, not 14.0138973226
            return md_escape(Truth("number", float(text), "", unit=q.spec.get("unit", "")).shown())
    return md_escape(visible_token(text) if q.kind == "token" else text)


def _revealed(box, q: questions.Question, mine: str | None) -> None:
    truth = shown(q, q.truth)
    if mine is None:
        box.info(f"The answer: **{truth}**")
    elif questions.is_right(q, mine):
        box.success(f"You said {shown(q, mine)}: right. The answer: **{truth}**")
    else:
        box.warning(f"You said {shown(q, mine)}; the answer is **{truth}**.")
    if q.why and q.lesson_id is None:  # a stop's explanation is in the lesson panel below
        box.caption(q.why)


def in_fragment_rerun() -> bool:
    """True when only the fragment runs (its timer), not the whole page with it."""
    return internals.in_fragment_rerun()


# ---- the class's runs -------------------------------------------------------------------------


def run_grant(settings: RunSettings | None) -> jobs.Auth | None:
    """A student's leave to start a run without the teacher password: the teacher set the class a
    budget (ui/class_page.py), and these settings fit it. None otherwise (the password rules)."""
    m = membership()
    # a fine-tune is not what a class budget (preset, steps, minutes) describes: password only
    if m is None or m.teacher or settings is None or settings.base is not None:
        return None
    try:
        limit = board.budget(m.class_id)
    except (ClassRefused, ClassStateError):
        return None
    if limit is None or limit.problem(settings) is not None:
        return None
    expected = teacher.expected()
    return jobs.Auth(expected, expected)


def run_started(run_id: str) -> None:
    """A student's new run onto the class's leaderboard; says why when it cannot go there."""
    m = membership()
    if m is None or m.teacher:
        return
    try:
        board.register_run(m.secret, run_id)
    except (ClassRefused, ClassStateError) as error:
        st.info(f"This run is not on the class's leaderboard: {md_escape(str(error))}")
        return
    st.caption("It is on the class's leaderboard (Live class).")
