"""The private Streamlit APIs the app uses (ui/streamlit_internals.py lists them) hold on the
installed Streamlit, and nothing outside the two fences touches one.

One contract test per internal, named after its row. Shapes are checked here in the fast loop,
so an upgrade that moves an internal fails first here; what can be run is run (an AppTest for a
script run's context and Streamlit's early ends; a real server for a session pushed from
outside, the stats and the wire protocol: `system`).
"""

from __future__ import annotations

import ast
import asyncio
import functools
import inspect
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from serving import streamlit_protocol as protocol
from serving.student import Student
from ui import streamlit_internals as si

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().relative_to(ROOT).as_posix()
SCANNED = ("app.py", "ui", "serving", "pages", "scripts", "benchmarks", "tests", "viz_model")


@functools.cache
def _sources() -> list[Path]:
    found = []
    for top in SCANNED:
        path = ROOT / top
        found += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return [p for p in found if p.relative_to(ROOT).as_posix() not in (*si.FENCES, HERE)]


@functools.cache
def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _literal(marker: str) -> str:
    """The longest plain text a marker's every match contains (to skip files without it)."""
    plain = re.sub(r"\\\.", ".", marker)
    return max(re.split(r"\\[bwsd]\+?|[()?|+*]", plain), key=len)


_MARKERS = [(i.name, re.compile(m), _literal(m)) for i in si.INTERNALS for m in i.markers]


def _markers(text: str) -> list[str]:
    """'line: internal (text)' for every marker of INTERNALS in `text`."""
    return [
        f"{text.count(chr(10), 0, hit.start()) + 1}: {name} ({hit.group()})"
        for name, marker, literal in _MARKERS
        if literal in text
        for hit in marker.finditer(text)
    ]


def _markers_outside_the_fences() -> dict[str, list[str]]:
    return {p.relative_to(ROOT).as_posix(): m for p in _sources() if (m := _markers(_text(p)))}


def _streamlit_imports(source: str) -> set[str]:
    """The Streamlit modules a file imports (`from streamlit import config` gives
    streamlit.config), under TYPE_CHECKING too."""
    found: set[str] = set()
    if "streamlit" not in source:
        return found
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "streamlit"}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.split(".")[0] != "streamlit":
                continue
            found.add(node.module)
            if node.module == "streamlit":
                found |= {f"streamlit.{a.name}" for a in node.names}
    return found


# ---- the fence ---------------------------------------------------------------------------------


def test_no_file_outside_the_fences_touches_a_listed_internal():
    assert _markers_outside_the_fences() == {}


def test_no_file_outside_the_fences_imports_a_private_streamlit_module():
    """The public API is `streamlit` (st.*) and `streamlit.testing.v1`; any other module, listed
    or not yet, goes through ui/streamlit_internals.py."""
    found = {
        path.relative_to(ROOT).as_posix(): sorted(names - set(si.PUBLIC_MODULES))
        for path in _sources()
        if (names := _streamlit_imports(_text(path))) - set(si.PUBLIC_MODULES)
    }
    assert found == {}


def test_the_marker_check_sees_each_internal_as_the_code_before_the_fence_used_it():
    before = {
        "script_run_ctx": "ctx = get_script_run_ctx()",
        "thread_fragment_id": "fragment_id = ThreadState.get().fragment_id",
        "runtime_instance": "if Runtime.exists():",
        "session_mgr": "info = Runtime.instance()._session_mgr.get_active_session_info(sid)",
        "client_state": "state.CopyFrom(session._client_state)",
        "event_loop": "session._event_loop.call_soon_threadsafe(f, state)",
        "request_rerun": "call_soon_threadsafe(session.request_rerun, state)",
        "page_script_hash": "from streamlit.util import calc_hash",
        "script_control": "isinstance(e, (RerunException, StopException))",
        "stats_mgr": "Runtime.instance().stats_mgr.register_provider(_Metrics())",
        "pages_manager": "return bool(PagesManager.uses_pages_directory)",
        "legacy_page_name": "from streamlit.source_util import page_icon_and_name",
        "streamlit_page": "from streamlit.navigation.page import StreamlitPage",
        "secret_not_found": "except (StreamlitSecretNotFoundError, FileNotFoundError):",
        "apptest_page_hash": "at._page_hash = h",
        "script_runner": "ScriptRunner._run_script = wrap(ScriptRunner._run_script)",
        "wire_protocol": "from streamlit.proto.BackMsg_pb2 import BackMsg",
    }
    assert set(before) == {i.name for i in si.INTERNALS}
    for name, line in before.items():
        assert any(f": {name} (" in m for m in _markers(line)), name
    assert _markers("st.rerun(scope='fragment')\nst.context.headers\n") == []


def test_the_import_check_sees_every_way_of_importing_a_streamlit_module():
    for line, module in (
        ("from streamlit import config", "streamlit.config"),
        ("import streamlit.runtime.app_session as s", "streamlit.runtime.app_session"),
        ("from streamlit.util import calc_hash", "streamlit.util"),
    ):
        assert module in _streamlit_imports(line + "\n"), line
    public = "import streamlit as st\nfrom streamlit.testing.v1 import AppTest\n"
    assert _streamlit_imports(public) <= set(si.PUBLIC_MODULES)


def test_the_table_lists_every_internal_and_each_wrapper_exists():
    doc = si.__doc__
    for internal in si.INTERNALS:
        assert re.search(rf"^{internal.name} ", doc, re.M), internal.name
        for name in internal.wrappers:
            assert callable(getattr(si, name)), name
    assert len({i.name for i in si.INTERNALS}) == len(si.INTERNALS)
    contracts = {
        n.removeprefix("test_contract_") for n in globals() if n.startswith("test_contract_")
    }
    assert {i.name for i in si.INTERNALS} <= {c.split("__")[0] for c in contracts}


def test_the_fences_load_no_streamlit_when_imported():
    code = (
        "import json, sys\n"
        "import serving.streamlit_protocol, ui.streamlit_internals, serving.student\n"
        "print(json.dumps('streamlit' in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) is False


# ---- one contract per internal, on the installed Streamlit (the shapes: fast) ----------------


def _fields(cls) -> set[str]:
    return set(getattr(cls, "__dataclass_fields__", {})) | set(inspect.signature(cls).parameters)


def test_contract_script_run_ctx():
    from streamlit.runtime.scriptrunner_utils.script_run_context import (
        ScriptRunContext,
        get_script_run_ctx,
    )

    assert {"session_id", "fragment_ids_this_run"} <= _fields(ScriptRunContext)
    assert get_script_run_ctx() is None  # outside a script run
    assert si.session_id() is None and si.in_fragment_rerun() is False


def test_contract_thread_fragment_id():
    from streamlit.runtime.scriptrunner_utils import script_run_context
    from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

    assert isinstance(inspect.getattr_static(ThreadState, "get"), staticmethod)
    state = str(inspect.signature(ThreadState.get).return_annotation)  # what get() returns
    assert "fragment_id" in _fields(getattr(script_run_context, state))
    assert si.running_fragment() is None  # outside a script run
    assert si.push_available()


def test_contract_runtime_instance():
    from streamlit.runtime import Runtime

    assert inspect.ismethod(Runtime.instance) and inspect.ismethod(Runtime.exists)
    assert Runtime.exists() is False  # no server in this process
    assert si.register_stats("contract", dict) is False


def _init_source(cls) -> str:
    return inspect.getsource(cls.__init__)


def test_contract_session_mgr():
    from streamlit.runtime import Runtime
    from streamlit.runtime.session_manager import ActiveSessionInfo, SessionManager

    assert "self._session_mgr =" in _init_source(Runtime)
    params = inspect.signature(SessionManager.get_active_session_info).parameters
    assert list(params) == ["self", "session_id"]
    assert "session" in _fields(ActiveSessionInfo)


def test_contract_client_state():
    from streamlit.proto.ClientState_pb2 import ClientState
    from streamlit.runtime.app_session import AppSession

    assert "self._client_state = ClientState()" in _init_source(AppSession)
    fields = set(ClientState.DESCRIPTOR.fields_by_name)
    assert {
        "query_string",
        "page_script_hash",
        "page_name",
        "fragment_id",
        "is_auto_rerun",
    } <= fields


def test_contract_event_loop():
    from streamlit.runtime.app_session import AppSession

    assert "self._event_loop = asyncio.get_running_loop()" in _init_source(AppSession)


def test_contract_request_rerun():
    from streamlit.runtime.app_session import AppSession

    assert list(inspect.signature(AppSession.request_rerun).parameters) == ["self", "client_state"]


def test_contract_page_script_hash():
    one = si.page_script_hash("Attention")
    assert one == si.page_script_hash("Attention") != si.page_script_hash("attention")
    assert re.fullmatch(r"[0-9a-f]{16,}", one)
    # st.Page names its page by this hash of its url_path: checked in a run (below, and on the
    # wire by the server test)


def test_contract_script_control():
    from streamlit.runtime.scriptrunner_utils.exceptions import RerunException, StopException
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData

    assert si.is_rerun_or_stop(RerunException(RerunData(query_string="a=1")))
    assert si.is_rerun_or_stop(StopException())
    assert not si.is_rerun_or_stop(ValueError()) and not si.is_rerun_or_stop(None)


def test_contract_stats_mgr():
    from streamlit.runtime import Runtime
    from streamlit.runtime.stats import CACHE_MEMORY_FAMILY, StatsManager

    assert isinstance(inspect.getattr_static(Runtime, "stats_mgr"), property)
    manager = StatsManager()
    manager.register_provider(si.stats_provider("viz_shared", lambda: {"f": 1234}))
    stats = manager.get_stats()[CACHE_MEMORY_FAMILY]
    assert [(s.category_name, s.cache_name, s.byte_length) for s in stats] == [
        ("viz_shared", "f", 1234)
    ]


def test_contract_pages_manager():
    from streamlit.runtime.pages_manager import PagesManager

    assert PagesManager.uses_pages_directory in (None, True, False)
    assert si.legacy_pages_router_ran() in (True, False)


def test_contract_legacy_page_name():
    assert si.legacy_page_name("pages/3_Attention.py") == "Attention"
    assert si.legacy_page_name(ROOT / "pages/03_attention.py") == "attention"


def test_contract_streamlit_page():
    from streamlit.navigation.page import StreamlitPage

    assert isinstance(st.Page(lambda: None, title="A", url_path="a"), StreamlitPage)


def test_contract_secret_not_found(tmp_path):
    """What st.secrets raises on a server with no secrets file is caught by the fence's errors."""
    code = (
        "import streamlit as st\n"
        "from ui.streamlit_internals import no_secrets_errors\n"
        "try:\n    st.secrets.get('teacher_password'); print('none raised')\n"
        "except no_secrets_errors() as e:\n    print('caught', type(e).__name__)\n"
    )
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[0] in ("caught", "none")


def test_contract_script_runner():
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

    from benchmarks.page_cost_probe import ST_SERIALISERS

    assert list(inspect.signature(ScriptRunner._run_script).parameters) == ["self", "rerun_data"]
    elements = si.delta_generator_class()
    assert isinstance(st.container(), elements)
    assert all(callable(getattr(elements, name)) for name in ST_SERIALISERS)


def _field(descriptor, path: str):
    for name in path.split("."):
        assert name in descriptor.fields_by_name, (path, name)
        field = descriptor.fields_by_name[name]
        descriptor = field.message_type
    return field


def test_contract_wire_protocol():
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.Element_pb2 import Element
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    rerun = BackMsg.DESCRIPTOR.fields_by_name["rerun_script"].message_type
    for path in protocol.SENT:
        _field(rerun, path)
    widget = _field(rerun, "widget_states.widgets").message_type
    assert set(protocol.WIDGET_VALUES) <= set(widget.fields_by_name)
    for path in protocol.READ:
        _field(ForwardMsg.DESCRIPTOR, path)
    for message, oneof in protocol.ONEOFS.items():
        assert (
            oneof
            in {"ForwardMsg": ForwardMsg, "Element": Element}[message].DESCRIPTOR.oneofs_by_name
        )
    statuses = ForwardMsg.DESCRIPTOR.enum_types_by_name["ScriptFinishedStatus"].values_by_name
    assert set(protocol.FINISHED) <= set(statuses)
    sent = BackMsg.FromString(
        protocol.rerun_request(
            query_string="a=1", page_name="Attention", fragment_id="f", is_auto_rerun=True,
            cached_message_hashes={"h2", "h1"}, widgets=[("w", "string_value", "hi")],
        )
    ).rerun_script  # fmt: skip
    assert (sent.query_string, sent.page_name, sent.fragment_id, sent.is_auto_rerun) == (
        "a=1", "Attention", "f", True,
    )  # fmt: skip
    assert list(sent.cached_message_hashes) == ["h1", "h2"]
    assert [(w.id, w.string_value) for w in sent.widget_states.widgets] == [("w", "hi")]
    done = ForwardMsg(script_finished=ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)
    assert protocol.finished(protocol.parse(done.SerializeToString())) == protocol.FINISHED[1]
    assert protocol.stream_url(8501) == "ws://127.0.0.1:8501" + protocol.STREAM_PATH


def test_contract_apptest_page_hash():
    assert AppTest.from_function(_script)._page_hash == ""  # the page its first run opens


# ---- ... and by running them: in a script run (AppTest) -------------------------------------

SEEN: list[tuple] = []  # what _script's runs saw, appended by the script itself


def _script():
    """Two pages under st.navigation, as app.py routes; each run says what the fence sees."""
    import sys

    import streamlit as st

    from tests.test_streamlit_internals import SEEN
    from ui import streamlit_internals as si

    def first():
        SEEN.append(("first", si.session_id(), si.in_fragment_rerun(), si.running_fragment()))

        @st.fragment
        def box():
            SEEN.append(("box", si.session_id(), si.in_fragment_rerun(), si.running_fragment()))

        box()
        if st.query_params.get("stop"):
            try:
                st.stop()
            finally:
                SEEN.append(("stopped", si.is_rerun_or_stop(sys.exc_info()[1])))

    def second():
        SEEN.append(("second", si.session_id()))

    st.navigation(
        [st.Page(first, url_path="first", default=True), st.Page(second, url_path="second")]
    ).run()


def test_contract_script_run_ctx__in_a_run():
    """And thread_fragment_id, script_control, script_runner: what a run sees, in a run."""
    runs = []
    undo = si.wrap_script_runs(lambda run: lambda *a, **k: runs.append(1) or run(*a, **k))
    try:
        SEEN.clear()
        at = AppTest.from_function(_script).run()
        assert not at.exception
        (page, sid, fragment_rerun, running), box = SEEN[:2]
        assert (page, fragment_rerun, running) == ("first", False, None)
        assert isinstance(sid, str) and sid and box[:3] == ("box", sid, False)
        assert box[3][0] == sid and box[3][1]  # the fragment's own id, inside it only
        SEEN.clear()
        at.query_params["stop"] = "1"
        at.run()
        assert ("stopped", True) in SEEN
    finally:
        undo()
    assert len(runs) == 2  # contract script_runner: every run went through the wrapper


def test_contract_page_script_hash__in_a_run():
    """The hash of a url_path is the page st.Page serves there: a first run opened at it runs it
    (how tests/apptest_util.open_link opens a deep link)."""
    SEEN.clear()
    at = si.open_at_page(AppTest.from_function(_script), "second").run()
    assert not at.exception
    assert [s[0] for s in SEEN] == ["second"]


# ---- ... and on a real server: another session pushed, the metrics, the wire ------------------

APP = """
import json, os, threading, time

import streamlit as st

from ui import streamlit_internals as si


def note(**said):
    with open(os.environ["VIZ_INTERNALS_OUT"], "a") as f:
        f.write(json.dumps(said) + "\\n")


@st.cache_resource
def metrics():
    return si.register_stats("contract_test", lambda: {"probe": 4321})


def later(do):  # from another thread, as ui/class_watch.py's watcher
    threading.Thread(target=lambda: (time.sleep(0.5), do()), daemon=True).start()


def first():
    sid = si.session_id()
    session = si.active_session(sid)
    push = st.query_params.get("push")
    note(page="first", sid=sid, query=si.client_query_string(session),
         fragment_rerun=si.in_fragment_rerun(), metrics=metrics(),
         gone=si.active_session("no-such-session") is None)

    @st.fragment(run_every=600)
    def box():
        running = si.running_fragment()
        note(page="box", sid=sid, fragment_rerun=si.in_fragment_rerun(), running=running)
        if push == "fragment" and not si.in_fragment_rerun():
            later(lambda: si.rerun_fragment(session, running[1]))

    box()
    if push == "page":
        later(lambda: si.rerun_page(session, "second", "pushed=page"))


def second():
    sid = si.session_id()
    note(page="second", sid=sid, params=st.query_params.to_dict())


st.navigation([st.Page(first, default=True), st.Page(second, url_path="second")]).run()
"""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A Streamlit server running APP: (port, the file its runs write their notes to)."""
    folder = tmp_path_factory.mktemp("internals")
    (folder / "app.py").write_text(APP)
    out, port = folder / "notes.jsonl", _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VIZ_INTERNALS_OUT": str(out)}
    cmd = [
        sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
        "--server.address", "127.0.0.1", "--server.headless", "true",
        "--browser.gatherUsageStats", "false", "--global.developmentMode", "false",
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health") as r:
                    if r.read().strip() == b"ok":
                        break
            except OSError:
                time.sleep(0.2)
        yield port, out
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _notes(out: Path) -> list[dict]:
    return [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []


async def _until(out: Path, seen: int, wanted, timeout: float = 30) -> dict:
    """The first note after the first `seen` that `wanted` accepts, as the server writes it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [n for n in _notes(out)[seen:] if wanted(n)]
        if found:
            return found[0]
        await asyncio.sleep(0.1)
    raise AssertionError(f"no such note in {timeout} s: {_notes(out)[seen:]}")


@pytest.mark.system
def test_contract_session_mgr__on_a_server(server):
    """And runtime_instance, client_state, event_loop, request_rerun, stats_mgr, the wire: a
    session found by its id, its query string read, a fragment and a page rerun pushed into it
    from another thread as the class watcher does, the metrics served, the page hashes sent."""
    port, out = server

    async def go() -> None:
        async with Student(port, timeout=60) as student:
            seen = len(_notes(out))
            assert (await student.view("", "a=1")).finished
            page = await _until(out, seen, lambda n: n["page"] == "first")
            box = await _until(out, seen, lambda n: n["page"] == "box")
            assert page["gone"] and page["metrics"]
            assert not page["fragment_rerun"] and box["running"] == [
                page["sid"],
                student.fragment_id,
            ]

            seen = len(_notes(out))
            assert (await student.view("", "a=1", fragment_id=student.fragment_id)).finished
            again = await _until(out, seen, lambda n: True)
            assert again["page"] == "box" and again["fragment_rerun"]  # the box alone

            seen = len(_notes(out))
            assert (await student.view("", "push=fragment")).finished
            page = await _until(out, seen, lambda n: n["page"] == "first")
            assert page["query"] == "a=1"  # the client state of the session's last run
            await _until(out, seen, lambda n: n["page"] == "box" and n["fragment_rerun"])

            seen = len(_notes(out))
            assert (await student.view("", "push=page")).finished
            moved = await _until(out, seen, lambda n: n["page"] == "second")
            assert moved == {"page": "second", "sid": page["sid"], "params": {"pushed": "page"}}

        import websockets

        async with websockets.connect(protocol.stream_url(port)) as ws:
            await ws.send(protocol.rerun_request(page_name="second"))
            pages: dict[str, str] = {}
            while True:
                fwd = protocol.parse(await asyncio.wait_for(ws.recv(), 60))
                if fwd.WhichOneof("type") == "navigation":
                    pages = {p.url_pathname: p.page_script_hash for p in fwd.navigation.app_pages}
                if fwd.WhichOneof("type") == "script_finished":
                    assert protocol.finished(fwd) == "FINISHED_SUCCESSFULLY"
                    break
            assert pages["second"] == si.page_script_hash("second")

    asyncio.run(go())
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/metrics", timeout=30) as r:
        metrics = r.read().decode()
    assert re.search(r'cache_type="contract_test".*\b4321\b', metrics), metrics[-2000:]
