"""One watcher thread per server process that brings a class's students to the teacher's moves.

A student's class box is a fragment (ui/classroom.py). Rerun by the browser on a timer, it cost
every student a script run a second for a class doing nothing (benchmarks/README.md, A live
class): about as much server time as the class's own page views. Instead each box registers its
session here when it runs, and this thread looks every WATCH_S whether the class database changed
(a counter read on SQLite, a notification on PostgreSQL, no table read:
serving/classroom/store.Changes), and only then reads each class's view and latest question
(two primary-key reads a class, however many students); a teacher's action on this process
wakes it at once (`forget`). When what a student's box last showed is out of date, it runs the
teacher's page in that session (a move) or reruns that fragment (a question), exactly as the
browser would; one not taken up within RETRY_S (Streamlit
drops a fragment rerun that meets a running page) is asked again. A move's page runs go MOVING_MAX
at a time, the next as one ends (`ran`, from the end of every page run): a process runs one
Python thread at a time, so fifty runs begun together all end late, while a few at a time bring
most screens early and the last no later. The thread keeps this process's
copies of each followed class fresh, so a box reads them, not the database, and it writes the
heartbeats of every registered session still connected, in one transaction every HEARTBEAT_S.

Streamlit has no public API for a rerun started by the server. This goes through its internals,
every one of them in ui/streamlit_internals.py (the list, and a contract test each in
tests/test_streamlit_internals.py): this run's session and fragment ids, this process's sessions
by id, and a rerun requested on a session's own event loop with its last client state changed.
Should they move, `register` returns False and the box falls back to the browser's timer
(ui/classroom.py).

Not here: what the box draws and how a move is applied (ui/classroom.py), the database.
"""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cachetools import TTLCache

from serving.classroom import classes, questions, store
from serving.classroom.store import ClassRefused, ClassStateError
from ui import lesson, nav, parts, present
from ui import streamlit_internals as internals

WATCH_S = 0.1  # how often the thread looks whether a class moved (a change check, then reads)
RETRY_S = 5.0  # a rerun asked for and not taken up (the box did not run since): ask again
VIEW_TTL_S = 0.5  # a session reads a class's view (and question) from this process's copy
REFRESH_S = 0.25  # the watcher renews those copies (within VIEW_TTL_S) while nothing changes
MOVING_MAX = 4  # a move's page runs under way at once in this process; the next starts as one ends
MOVING_S = 2.0  # a page run that has not said it ended by then frees its place
HEARTBEAT_S = 5.0  # the connected sessions' "here, on this page" (the dashboard's 15 s window)
SEAT = "seat"  # the URL key a student's seat once rode in (ui/classroom.SEAT): never followed
Mark = tuple[
    int | None, int | None, str | None, bool
]  # (view if following, question, state, ended)


@dataclass
class Follower:
    """A student's session as its class box last drew it."""

    session_id: str
    fragment_id: str
    class_id: int
    token: str = field(repr=False)
    page: str
    following: bool
    shown: Mark  # what the box showed: a different mark in the database means rerun it
    nudged: Mark | None = None  # the mark a rerun was last asked for (asked again after RETRY_S)
    nudged_at: float = 0.0


_lock = threading.Lock()
_followers: dict[str, Follower] = {}  # session id -> Follower
_generation = [0]  # grows with every register and unregister: the watcher compares the boxes
_thread: list[threading.Thread] = []
_views: TTLCache = TTLCache(maxsize=64, ttl=VIEW_TTL_S)  # class id -> View
_questions: TTLCache = TTLCache(maxsize=64, ttl=VIEW_TTL_S)  # class id -> latest Question
_wake = threading.Event()  # a teacher's action on this process: look now, not at the next tick
_waiting: OrderedDict[str, tuple[Follower, classes.View]] = OrderedDict()  # moves not yet begun
_moving: dict[str, float] = {}  # session id -> when its move's page run was asked for


# ---- this process's copies of a class's view and question --------------------------------------


def shared(copies: TTLCache, key: Any, read: Callable[[Any], Any]) -> Any:
    """`read(key)`, or this process's copy while it is fresh. A cachetools cache is not
    thread-safe and every session is a thread: one lock, held for the look-up only (two sessions
    may both read when a copy expires, one extra read)."""
    with _lock:
        if key in copies:
            return copies[key]
    found = read(key)
    with _lock:
        copies[key] = found
    return found


def class_view(class_id: int) -> classes.View:
    return shared(_views, class_id, classes.view)


def latest_question(class_id: int) -> questions.Question | None:
    return shared(_questions, class_id, questions.latest_question)


def forget(class_id: int, *more: TTLCache) -> None:
    """Drop this process's copies of a class (its view, question, and those in `more`) after a
    teacher's action, and have the watcher look at once."""
    with _lock:
        for copies in (_views, _questions, *more):
            copies.pop(class_id, None)
    _wake.set()


def forget_all(*more: TTLCache) -> None:
    """Drop this process's copies of every class: its class database is another now (a test's
    runs folder of its own, where class ids start at 1 again and name other classes)."""
    with _lock:
        for copies in (_views, _questions, *more):
            copies.clear()


def mark(view: classes.View, question: questions.Question | None, following: bool) -> Mark:
    """What a box shows of the class: the view it follows, the question and its state, and
    whether the class has ended."""
    q = (question.id, question.state) if question is not None else (None, None)
    return (view.version if following else None, *q, view.ended)


# ---- what a move is ------------------------------------------------------------------------------


def follow_keys(target: nav.Page) -> frozenset[str]:
    """The URL keys a followed view may set on `target`: its own, the frame's, a lesson's and the
    numbers sections the teacher opened, and the figure their spotlight is on."""
    return frozenset(
        {
            *target.view_keys,
            *lesson.FRAME_KEYS,
            "model",
            "prompt",
            lesson.LESSON,
            lesson.STEP,
            parts.OPEN_KEY,
            present.FIG_KEY,  # the figure the teacher's spotlight is on
        }
    )


def followed(view: classes.View) -> tuple[nav.Page | None, dict[str, str]]:
    """The page a view is on and the keys of it a student takes (None: no page of this app)."""
    target = nav.by_route(view.page)
    if target is None:
        return None, {}
    keys = follow_keys(target)
    return target, {k: v for k, v in view.params.items() if k in keys}


# ---- registering and nudging --------------------------------------------------------------------


def available() -> bool:
    """Whether this Streamlit has the internals a push needs (see the module docstring)."""
    return internals.push_available()


def register(class_id: int, token: str, page: str, following: bool, shown: Mark) -> bool:
    """Called by a student's box as it runs: rerun me when the class moves past `shown`. False
    when this Streamlit cannot be nudged (then the box keeps the browser's timer)."""
    ids = internals.running_fragment()
    if ids is None:
        return False
    session_id, fragment_id = ids
    found = Follower(session_id, fragment_id, class_id, token, page, following, shown)
    with _lock:
        _followers[session_id] = found
        _generation[0] += 1
        if not _thread or not _thread[0].is_alive():
            _thread[:] = [threading.Thread(target=_watch, name="class-watch", daemon=True)]
            _thread[0].start()
    return True


def unregister(session_id: str) -> None:
    with _lock:
        _followers.pop(session_id, None)
        _generation[0] += 1


def unregister_all() -> None:
    """Forget every registered box: sessions that ended without the server noticing (AppTest's,
    which have no Runtime to ask), so the watcher stops reading a class database."""
    with _lock:
        _followers.clear()
        _waiting.clear()
        _moving.clear()
        _generation[0] += 1


def _session(session_id: str) -> Any | None:
    """This process's session of that id (Streamlit's own object), None when it has gone."""
    return internals.active_session(session_id)


def _nudge(f: Follower) -> bool:
    """Ask Streamlit to rerun the follower's box, as the browser's timer would; False when the
    session has gone."""
    session = _session(f.session_id)
    if session is None:
        return False
    internals.rerun_fragment(session, f.fragment_id)
    return True


def _move(f: Follower, view: classes.View) -> bool:
    """Run the teacher's page in the follower's session, with the teacher's keys in its address,
    as st.switch_page would from inside it; ui/classroom.enter gives the run the teacher's keys.
    One page run, not a box run and then a page run. False when the session has gone."""
    target, params = followed(view)
    if target is None:
        return _nudge(f)
    session = _session(f.session_id)
    if session is None:
        return False
    internals.rerun_page(session, target.route, urllib.parse.urlencode(params))
    return True


# ---- the thread ---------------------------------------------------------------------------------


def _watch() -> None:
    beat_at = looked_at = 0.0
    looked_gen = -1
    changed = store.Changes()
    known: dict[int, tuple[classes.View, questions.Question | None]] = {}  # class id -> last read
    while True:
        _wake.wait(WATCH_S)
        _wake.clear()
        if not _followers:
            known.clear()
            continue
        try:
            if changed():
                known.clear()
            now = time.monotonic()
            # An idle tick is the change check alone: the boxes are compared again when a class
            # changed, a box registered, or every REFRESH_S (the copies' freshness, the retries).
            if known and looked_gen == _generation[0] and now - looked_at < REFRESH_S:
                continue
            with _lock:
                followers, looked_gen = list(_followers.values()), _generation[0]
            looked_at = now
            _nudge_class(followers, known)
            if now - beat_at >= HEARTBEAT_S:
                beat_at = now
                _heartbeats(followers)
        except Exception:  # noqa: BLE001  a watcher that dies stops every follower: keep going
            continue


def _nudge_class(
    followers: list[Follower], known: dict[int, tuple[classes.View, questions.Question | None]]
) -> None:
    """Read each class the database may have changed (those not in `known`), refresh this
    process's copies, and rerun the boxes that show a class out of date."""
    ids = {f.class_id for f in followers}
    for gone in set(known) - ids:
        del known[gone]
    now = time.monotonic()
    for class_id in ids:
        if class_id not in known:
            try:
                known[class_id] = classes.view(class_id), questions.latest_question(class_id)
            except (ClassRefused, ClassStateError):
                continue
        view, question = known[class_id]
        with _lock:  # fresh while the watcher looks: a box reads these, not the database
            _views[class_id], _questions[class_id] = view, question
        for f in followers:
            if f.class_id != class_id:
                continue
            shows = mark(view, question, f.following)
            if shows == f.shown or (shows == f.nudged and now - f.nudged_at < RETRY_S):
                continue
            f.nudged, f.nudged_at = shows, now
            moved = f.following and view.page and not view.ended and shows[0] != f.shown[0]
            if moved:
                with _lock:
                    _waiting[f.session_id] = (f, view)
            elif not _nudge(f):
                unregister(f.session_id)
    _start_moves()


def ran() -> None:
    """This session's page run ended (ui/classroom.after_run): its place goes to the next move."""
    if not _moving:
        return
    session_id = internals.session_id()
    with _lock:
        was = _moving.pop(session_id, None) if session_id is not None else None
    if was is not None:
        _start_moves()


def _start_moves() -> None:
    """Begin waiting moves while fewer than MOVING_MAX page runs are under way. Fifty page runs
    begun at once share this process's core (one Python thread at a time) and all end late; a
    few at a time, each student's screen arrives as soon as the core has drawn it."""
    now = time.monotonic()
    begin = []
    with _lock:
        for sid in [s for s, at in _moving.items() if now - at > MOVING_S]:
            del _moving[sid]
        while _waiting and len(_moving) < MOVING_MAX:
            sid, (f, view) = _waiting.popitem(last=False)
            now_shown = _followers.get(sid)
            if now_shown is None or not now_shown.following or now_shown.shown[0] == view.version:
                continue  # gone, stopped following, or there already (a box that polled)
            _moving[sid] = now
            begin.append((f, view))
    gone = [f for f, view in begin if not _move(f, view)]
    for f in gone:
        with _lock:
            _moving.pop(f.session_id, None)
        unregister(f.session_id)
    if gone:
        _start_moves()


def _heartbeats(followers: list[Follower]) -> None:
    """One write for every connected session: the dashboard's connected, following and pages."""
    here = [f for f in followers if _session(f.session_id) is not None]
    for gone in {f.session_id for f in followers} - {f.session_id for f in here}:
        unregister(gone)
    if here:
        classes.heartbeats([(f.token, f.page, f.following) for f in here])
