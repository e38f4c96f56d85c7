"""Streamlit's browser protocol, as the simulated students speak it (serving/student.py, and
benchmarks/bench_class_follow.py's tabs): the one place outside ui/streamlit_internals.py that
touches a private Streamlit API, its `wire_protocol` row (serving may not import ui).

A browser holds one websocket at STREAM_PATH. It asks for a run with a BackMsg `rerun_script`
(`rerun_request`); the server answers with ForwardMsgs (`parse`) until `script_finished`. The
protobuf classes are Streamlit's own (`streamlit.proto`), not a public API: SENT and READ list the
fields this project writes and reads, and tests/test_streamlit_internals.py checks each against
the installed Streamlit's messages, and talks to a real server through serving/student.py.
Streamlit is imported inside the functions: serving loads no Streamlit when imported.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

STREAM_PATH = "/_stcore/stream"
# BackMsg.rerun_script fields written (rerun_request's arguments) and widget value kinds sent.
SENT = (
    "query_string",
    "page_name",
    "page_script_hash",
    "fragment_id",
    "is_auto_rerun",
    "cached_message_hashes",
    "widget_states.widgets.id",
)
WIDGET_VALUES = ("string_value", "trigger_value")
# ForwardMsg fields read, as paths; "a.b" through a repeated field reads b of its items.
READ = (
    "hash",
    "metadata.cacheable",
    "auto_rerun.fragment_id",
    "auto_rerun.interval",
    "stop_auto_rerun.fragment_ids",
    "page_info_changed.query_string",
    "navigation.page_script_hash",
    "navigation.app_pages.url_pathname",
    "navigation.app_pages.page_script_hash",
    "page_not_found.page_name",
    "script_finished",
    "delta.new_element.exception.type",
    "delta.new_element.exception.message",
    "delta.new_element.text_area.label",
    "delta.new_element.text_area.id",
    "delta.new_element.text_input.label",
    "delta.new_element.text_input.id",
    "delta.new_element.radio.label",
    "delta.new_element.radio.id",
    "delta.new_element.button.label",
    "delta.new_element.button.id",
    "delta.new_element.button.is_form_submitter",
    "delta.new_element.alert.body",
    "delta.new_element.markdown.body",
)
ONEOFS = {"ForwardMsg": "type", "Element": "type"}  # WhichOneof(...) names read
FINISHED = ("FINISHED_SUCCESSFULLY", "FINISHED_FRAGMENT_RUN_SUCCESSFULLY")  # finished() names


def stream_url(server: int | str) -> str:
    """The app's websocket: `server` is a port on 127.0.0.1 or a base address (http://host:port,
    e.g. HAProxy in front of several processes: serving/class_server.py)."""
    if isinstance(server, int):
        return f"ws://127.0.0.1:{server}{STREAM_PATH}"
    return "ws" + server.rstrip("/").removeprefix("http") + STREAM_PATH


def rerun_request(
    *,
    query_string: str = "",
    page_name: str = "",
    page_script_hash: str = "",
    fragment_id: str = "",
    is_auto_rerun: bool = False,
    cached_message_hashes: Iterable[str] = (),
    widgets: Iterable[tuple[str, str, Any]] = (),
) -> bytes:
    """A BackMsg asking for a run, serialised: the page by URL name or by hash ("" and "" is the
    main page), its query string, a fragment alone, the hashes of the cacheable messages the
    client holds, and widget values as (widget id, value kind from WIDGET_VALUES, value)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    msg = BackMsg()
    rerun = msg.rerun_script
    rerun.query_string = query_string
    rerun.page_name = page_name
    rerun.page_script_hash = page_script_hash
    rerun.fragment_id = fragment_id
    rerun.is_auto_rerun = is_auto_rerun
    rerun.cached_message_hashes.extend(sorted(cached_message_hashes))
    for widget_id, kind, value in widgets:
        state = rerun.widget_states.widgets.add()
        state.id = widget_id
        setattr(state, kind, value)
    return msg.SerializeToString()


def parse(raw: bytes) -> Any:
    """A ForwardMsg from the bytes the server sent (read its fields in READ)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    fwd = ForwardMsg()
    fwd.ParseFromString(raw)
    return fwd


def finished(fwd: Any) -> str:
    """How a run ended, by name: 'FINISHED_SUCCESSFULLY' (a full run),
    'FINISHED_FRAGMENT_RUN_SUCCESSFULLY', or another status of the installed Streamlit."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    return ForwardMsg.ScriptFinishedStatus.Name(fwd.script_finished)


def as_text(message: Any) -> str:
    """A message as protobuf text (an element, for a test to read what was drawn)."""
    from google.protobuf import text_format

    return text_format.MessageToString(message, as_utf8=True)
