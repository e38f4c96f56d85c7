"""Every private Streamlit API this project uses, and the only module (with its wire-protocol
half, serving/streamlit_protocol.py) that touches one.

Streamlit's public API is `streamlit` (st.*) and `streamlit.testing.v1`. What the app needs
beyond it is below: one small function each, so a Streamlit upgrade that moves an internal
breaks here, and tests/test_streamlit_internals.py says which one (a contract test per row, in
the fast `unit` loop where a shape can be checked, and by running it where it can be run). The
same test fails when a file outside these two modules touches an internal (the markers of
INTERNALS, and any import of a Streamlit module other than the public two). Streamlit is
imported inside the functions: importing this module loads no Streamlit. Streamlit is pinned
exactly in requirements.txt; to upgrade it, change the pin and run that test first.

=====================  ===========================================  =============================
internal               what it is for (used by)                     if it changes
=====================  ===========================================  =============================
script_run_ctx         `get_script_run_ctx()`: this run's           a box is never registered
                       `session_id` and `fragment_ids_this_run`     (falls back to its timer);
                       (class_watch: whose box, classroom and       a fragment rerun is taken
                       state: is this a fragment-only rerun).       for a full run: the teacher's
                       st.context names neither.                    view published mid-page
thread_fragment_id     `ThreadState.get().fragment_id`: the id of   no push: the student box
                       the fragment running now, which a server     polls every POLL_S
                       rerun must name (class_watch). No public     (ui/classroom.py)
                       fragment id.
runtime_instance       `Runtime.instance()` / `Runtime.exists()`:   no push, no cache metrics
                       this process's server, to find a session
                       and the stats manager (class_watch,
                       shared_cache). No public handle.
session_mgr            `Runtime._session_mgr.get_active_session_    no push: a teacher's move
                       info(id).session`: a student's AppSession    reaches students by their
                       from its id (class_watch: push a rerun,      timer only; heartbeats stop
                       heartbeat only connected ones).
client_state           `AppSession._client_state` (a ClientState:   a pushed rerun loses the
                       query_string, page_script_hash, page_name,   student's widgets and page,
                       fragment_id, is_auto_rerun): what the        or fails
                       session last ran with, copied and changed
                       for a pushed rerun (class_watch).
event_loop             `AppSession._event_loop`: a rerun must be    a pushed rerun from the
                       requested on the session's own loop, the     watcher thread races the
                       watcher is another thread (class_watch).     session (or fails)
request_rerun          `AppSession.request_rerun(ClientState)`:     no push (see session_mgr)
                       the server-started rerun itself
                       (class_watch). st.rerun only reruns the
                       calling session.
page_script_hash       `streamlit.util.calc_hash(url_path)`: how    a move to a page runs Home
                       st.Page names a page in a rerun request      (or "Page not found"); the
                       (class_watch's moves, tests/apptest_util's   deep-link tests open Home
                       deep links).
script_control         `RerunException`, `StopException`: the run   the teacher's view is
                       was replaced or stopped, so its view is      published from half-run
                       not the settled one (classroom.after_run).   pages
                       No public way to tell a replaced run.
stats_mgr              `Runtime.stats_mgr.register_provider`,       /_stcore/metrics lacks
                       `runtime.stats.CACHE_MEMORY_FAMILY`,         cache_type="viz_shared"
                       `CacheStat`: the shared cache's bytes in     (the class benchmarks read
                       /_stcore/metrics (shared_cache). No          it); pages unaffected
                       public metrics hook.
pages_manager          `PagesManager.uses_pages_directory`: the     the "Page not found" notice
                       legacy pages/ router ran this process's      on a fresh server's first
                       first request (nav, which then closes its    deep link stays, inert
                       "Page not found" notice).
legacy_page_name       `streamlit.source_util.page_icon_and_name`:  the test that no page file
                       the URL the legacy router derives from a     shadows a page URL errors
                       file (tests/test_ui.py).
streamlit_page         `streamlit.navigation.page.StreamlitPage`,   nav's annotations only (no
                       the type st.Page returns (nav annotations,   runtime effect)
                       type-checking only).
secret_not_found       `streamlit.errors.StreamlitSecretNotFound    a server with no secrets
                       Error`, raised by st.secrets when there is   file fails on every page
                       no secrets file (teacher).                   that asks for the password
apptest_page_hash      `AppTest._page_hash`: the page an AppTest's  the deep-link page tests
                       first run opens (tests/apptest_util.         open Home
                       open_link). switch_page cannot name a page
                       by its url_path before a first run.
script_runner          `ScriptRunner._run_script`, `DeltaGenerator`  the page-cost probe fails
                       (benchmarks/page_cost_probe.py: times a      (benchmarks only)
                       page run and its element calls).
wire_protocol          `streamlit.proto` BackMsg/ForwardMsg (and    the simulated students
                       element protos) over /_stcore/stream, as     (class warm-up, benchmarks,
                       the browser speaks it (serving/student.py,   serving tests) fail
                       serving/warm.py through it, benchmarks/
                       bench_class_follow.py): fenced in
                       serving/streamlit_protocol.py, which
                       serving may import (not ui).
=====================  ===========================================  =============================

Not Python, and not here: the CSS and JS that find Streamlit's elements by their data-testid
(ui/present.py, ui/lesson.py, ui/nav.CLOSE_NOT_FOUND); the browser tests check those. The
/_stcore/health address is Streamlit's documented health check.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streamlit.navigation.page import StreamlitPage  # noqa: F401  (ui/nav.py's annotations)
    from streamlit.testing.v1 import AppTest


@dataclass(frozen=True)
class Internal:
    """One row of the table: its name, the regular expressions that mark a use of it in a
    source file (tests/test_streamlit_internals.py looks for them outside the fences) and the
    functions that wrap it."""

    name: str
    markers: tuple[str, ...]
    wrappers: tuple[str, ...]


FENCES = ("ui/streamlit_internals.py", "serving/streamlit_protocol.py")
INTERNALS = (
    Internal(
        "script_run_ctx",
        (r"\bget_script_run_ctx\b", r"\bfragment_ids_this_run\b", r"\bscript_run_context\b"),
        ("session_id", "in_fragment_rerun"),
    ),
    Internal("thread_fragment_id", (r"\bThreadState\b",), ("running_fragment",)),
    Internal(
        "runtime_instance",
        (r"\bRuntime\.(instance|exists)\b", r"streamlit\.runtime import Runtime\b"),
        ("active_session", "register_stats"),
    ),
    Internal(
        "session_mgr", (r"\b_session_mgr\b", r"\bget_active_session_info\b"), ("active_session",)
    ),
    Internal(
        "client_state",
        (r"\b_client_state\b", r"\bClientState(_pb2)?\b"),
        ("client_query_string", "rerun_fragment", "rerun_page"),
    ),
    Internal("event_loop", (r"\b_event_loop\b",), ("rerun_fragment", "rerun_page")),
    Internal(
        "request_rerun",
        (r"\brequest_rerun\b", r"\bAppSession\b"),
        ("push_available", "rerun_fragment", "rerun_page"),
    ),
    Internal("page_script_hash", (r"\bcalc_hash\b",), ("page_script_hash",)),
    Internal(
        "script_control",
        (r"\bRerunException\b", r"\bStopException\b", r"scriptrunner_utils"),
        ("is_rerun_or_stop",),
    ),
    Internal(
        "stats_mgr",
        (
            r"\bstats_mgr\b",
            r"\bCACHE_MEMORY_FAMILY\b",
            r"\bCacheStat\b",
            r"streamlit\.runtime\.stats",
        ),
        ("register_stats", "stats_provider"),
    ),
    Internal(
        "pages_manager",
        (r"\bPagesManager\b", r"\buses_pages_directory\b"),
        ("legacy_pages_router_ran",),
    ),
    Internal(
        "legacy_page_name", (r"\bpage_icon_and_name\b", r"\bsource_util\b"), ("legacy_page_name",)
    ),
    Internal("streamlit_page", (r"streamlit\.navigation\b",), ()),
    Internal(
        "secret_not_found",
        (r"\bStreamlitSecretNotFoundError\b", r"streamlit\.errors\b"),
        ("no_secrets_errors",),
    ),
    Internal("apptest_page_hash", (r"\b_page_hash\b",), ("open_at_page",)),
    Internal(
        "script_runner",
        (r"\bScriptRunner\b", r"\b_run_script\b", r"\bDeltaGenerator\b"),
        ("wrap_script_runs", "delta_generator_class"),
    ),
    Internal(
        "wire_protocol",
        (r"streamlit\.proto\b", r"\b\w+_pb2\b"),
        (),  # serving/streamlit_protocol.py
    ),
)
PUBLIC_MODULES = ("streamlit", "streamlit.testing.v1")  # importable anywhere


# ---- the running script ---------------------------------------------------------------------------


def _ctx() -> Any | None:
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    return get_script_run_ctx()


def session_id() -> str | None:
    """The id of the session whose script runs on this thread (None outside a script run)."""
    ctx = _ctx()
    return None if ctx is None else ctx.session_id


def in_fragment_rerun() -> bool:
    """True when only a fragment runs (its timer, or its own widget), not the whole page."""
    ctx = _ctx()
    return bool(ctx is not None and ctx.fragment_ids_this_run)


def running_fragment() -> tuple[str, str] | None:
    """(session id, id of the fragment running now), or None outside a fragment or where this
    Streamlit lacks the internals."""
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

        ctx = _ctx()
        fragment_id = ThreadState.get().fragment_id
    except (ImportError, AttributeError, RuntimeError):
        return None
    if ctx is None or not fragment_id:
        return None
    return ctx.session_id, fragment_id


def is_rerun_or_stop(error: BaseException | None) -> bool:
    """Whether `error` is Streamlit ending a run early: st.rerun, a newer run replacing it, a page
    switch (RerunException) or st.stop (StopException)."""
    from streamlit.runtime.scriptrunner_utils.exceptions import RerunException, StopException

    return isinstance(error, (RerunException, StopException))


def no_secrets_errors() -> tuple[type[BaseException], ...]:
    """What st.secrets raises when the server has no secrets file (for an `except`)."""
    from streamlit.errors import StreamlitSecretNotFoundError

    return (StreamlitSecretNotFoundError, FileNotFoundError)


# ---- another session, from the server ------------------------------------------------------------


def push_available() -> bool:
    """Whether this Streamlit has what a server-started rerun needs (ui/class_watch.py)."""
    try:
        from streamlit.proto.ClientState_pb2 import ClientState  # noqa: F401
        from streamlit.runtime import Runtime
        from streamlit.runtime.app_session import AppSession
        from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState
    except ImportError:
        return False
    return (
        hasattr(Runtime, "instance")
        and hasattr(AppSession, "request_rerun")
        and hasattr(ThreadState, "get")
    )


def active_session(session_id: str) -> Any | None:
    """This process's AppSession of that id, None when it has gone."""
    from streamlit.runtime import Runtime

    info = Runtime.instance()._session_mgr.get_active_session_info(session_id)
    return None if info is None else info.session


def client_query_string(session: Any) -> str:
    """The query string the session last ran with (its browser's address)."""
    return session._client_state.query_string


def page_script_hash(url_path: str) -> str:
    """How st.Page names the page at `url_path` in a rerun request."""
    from streamlit.util import calc_hash

    return calc_hash(url_path)


def rerun_fragment(session: Any, fragment_id: str) -> None:
    """Rerun one fragment of the session, as the browser's timer for it would."""

    def to_fragment(state: Any) -> None:
        state.fragment_id = fragment_id
        state.is_auto_rerun = True

    _request_rerun(session, to_fragment)


def rerun_page(session: Any, url_path: str, query_string: str) -> None:
    """Run the page at `url_path` in the session with `query_string` as its address, as
    st.switch_page would from inside it (the session's widgets kept)."""
    page_hash = page_script_hash(url_path)

    def to_page(state: Any) -> None:
        state.fragment_id = ""
        state.page_script_hash = page_hash
        state.page_name = ""
        state.query_string = query_string

    _request_rerun(session, to_page)


def _request_rerun(session: Any, change: Callable[[Any], Any]) -> None:
    """Request a rerun of `session` on its own event loop, with its last client state (the page,
    query string and widgets it last ran with) changed by `change`."""
    from streamlit.proto.ClientState_pb2 import ClientState

    state = ClientState()
    state.CopyFrom(session._client_state)
    change(state)
    session._event_loop.call_soon_threadsafe(session.request_rerun, state)


# ---- the server --------------------------------------------------------------------------------


def register_stats(category: str, sizes: Callable[[], Mapping[str, int]]) -> bool:
    """Report `sizes()` (bytes by function name) in /_stcore/metrics as cache_memory_bytes of
    cache_type=`category`. False where there is no server (AppTest, a script) or it moved."""
    try:
        from streamlit.runtime import Runtime

        if not Runtime.exists():
            return False
        Runtime.instance().stats_mgr.register_provider(stats_provider(category, sizes))
    except Exception:  # noqa: BLE001 (metrics are a nicety; never break a page for them)
        return False
    return True


def stats_provider(category: str, sizes: Callable[[], Mapping[str, int]]) -> Any:
    """A Streamlit stats provider of `sizes()` as cache_memory_bytes (what register_stats adds)."""
    from streamlit.runtime.stats import CACHE_MEMORY_FAMILY, CacheStat

    class Provider:
        @property
        def stats_families(self) -> list[str]:
            return [CACHE_MEMORY_FAMILY]

        def get_stats(self, _family_names=None) -> dict:
            found = [CacheStat(category, name, size) for name, size in sizes().items()]
            return {CACHE_MEMORY_FAMILY: found}

    return Provider()


def legacy_pages_router_ran() -> bool:
    """True only in a process's first run, before st.navigation: Streamlit ran it through the
    legacy `pages/` router (its flag is still set)."""
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # another Streamlit: no notice to close, or not this way
        return False
    return bool(PagesManager.uses_pages_directory)


def legacy_page_name(script: str | Path) -> str:
    """The URL name the legacy `pages/` router gives a page file (pages/3_Attention.py ->
    Attention)."""
    from streamlit.source_util import page_icon_and_name

    return page_icon_and_name(Path(script))[1]


# ---- tests and benchmarks --------------------------------------------------------------------


def open_at_page(at: AppTest, url_path: str) -> AppTest:
    """Make `at`'s first run open the page at `url_path`, as a link to it would."""
    at._page_hash = page_script_hash(url_path)
    return at


def wrap_script_runs(wrap: Callable[[Callable], Callable]) -> Callable[[], None]:
    """Replace every script run (a page run, a fragment run) by `wrap` of it; returns the undo."""
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

    run = ScriptRunner._run_script
    ScriptRunner._run_script = wrap(run)

    def undo() -> None:
        ScriptRunner._run_script = run

    return undo


def delta_generator_class() -> type:
    """The class behind st.* elements and containers (st.container() returns one)."""
    from streamlit.delta_generator import DeltaGenerator

    return DeltaGenerator
