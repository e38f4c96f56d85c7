"""A class arriving at once, at the protocol level: N students open pages on a fresh server.

    python -m benchmarks.class_arrival [--students 30] [--spread 1.0] [--trials 3]

Each trial starts a fresh `streamlit run app.py`, waits for /_stcore/health, then N simulated
students connect to the app's websocket within `spread` seconds, each asking for one page (round
robin over every page). A student speaks the same protocol as the browser: a BackMsg rerun_script
with the page's name and query string, then ForwardMsgs until script_finished. It counts the
page views that drew an exception element, and times each view from connect to script_finished.

Issue 9 item 1: on the old code 7-24 of 30 first views failed (pandas half-imported by another
session); the target is none.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

import websockets

from benchmarks.common import emit
from tests.test_browser import free_port, start_server, stop_server, wait_healthy
from ui import nav


def page_paths() -> list[str]:
    """Every page's URL path, Home as ''."""
    pages = [p for pages in nav.available_sections().values() for p in pages]
    return ["", *(p.url_path for p in pages)]


def stream_url(server: int | str) -> str:
    """The app's websocket: `server` is a port on 127.0.0.1 or a base address (http://host:port,
    e.g. HAProxy in front of several processes: serving/class_server.py)."""
    if isinstance(server, int):
        return f"ws://127.0.0.1:{server}/_stcore/stream"
    return "ws" + server.rstrip("/").removeprefix("http") + "/_stcore/stream"


async def open_page(
    server: int | str,
    page: str,
    query: str = "",
    timeout: float = 120,
    headers: dict[str, str] | None = None,
    elements: list[str] | None = None,
) -> dict:
    """One student's first view of a page: {page, seconds, exceptions, finished, backend}.
    `headers` go with the websocket's upgrade request (a proxy's cookie, say); `backend` is the
    X-Backend header of its response (set by serving/haproxy.cfg.template); each element the
    page drew is appended to `elements` as protobuf text, when given."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    t0 = time.perf_counter()
    msg = BackMsg()
    msg.rerun_script.query_string = query
    msg.rerun_script.page_name = page
    exceptions: list[str] = []
    async with websockets.connect(
        stream_url(server), max_size=None, open_timeout=timeout, additional_headers=headers
    ) as ws:
        await ws.send(msg.SerializeToString())
        finished = await _read_until_finished(ws, t0 + timeout, exceptions, elements)
        backend = ws.response.headers.get("X-Backend")
    return {
        "page": page or "Home",
        "seconds": time.perf_counter() - t0,
        "exceptions": exceptions,
        "finished": finished,
        "backend": backend,
    }


async def _read_until_finished(
    ws, deadline: float, exceptions: list[str], elements: list[str] | None = None
) -> bool:
    """Read ForwardMsgs until script_finished (True) or the deadline (False); collect exceptions
    (and every new element as text, into `elements` when given)."""
    from google.protobuf import text_format
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    while time.perf_counter() < deadline:
        raw = await asyncio.wait_for(ws.recv(), deadline - time.perf_counter())
        fwd = ForwardMsg()
        fwd.ParseFromString(raw)
        kind = fwd.WhichOneof("type")
        if elements is not None and kind == "delta" and fwd.delta.HasField("new_element"):
            elements.append(text_format.MessageToString(fwd.delta.new_element, as_utf8=True))
        if kind == "delta" and fwd.delta.new_element.WhichOneof("type") == "exception":
            exc = fwd.delta.new_element.exception
            exceptions.append(f"{exc.type}: {exc.message}"[:200])
        if kind == "script_finished":
            return True
    return False


async def student_clicks(
    server: int | str, seconds: float, pace: tuple[float, float], seed: int, paths: list[str]
) -> list[dict]:
    """One student for `seconds`: one websocket (one session), a page run every pace[0]..pace[1]
    seconds on a random page. Returns each view's {page, seconds, exceptions, finished}."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    rng = random.Random(seed)
    views: list[dict] = []
    end = time.perf_counter() + seconds
    async with websockets.connect(stream_url(server), max_size=None) as ws:
        while time.perf_counter() < end:
            page = rng.choice(paths)
            msg = BackMsg()
            msg.rerun_script.page_name = page
            exceptions: list[str] = []
            t0 = time.perf_counter()
            await ws.send(msg.SerializeToString())
            finished = await _read_until_finished(ws, t0 + 120, exceptions)
            views.append({"page": page or "Home", "seconds": time.perf_counter() - t0,
                          "exceptions": exceptions, "finished": finished})  # fmt: skip
            await asyncio.sleep(rng.uniform(*pace))
    return views


async def class_clicking(
    server: int | str, students: int, seconds: float, pace: tuple[float, float], paths: list[str]
) -> list[dict]:
    """`students` clicking at once for `seconds` (see student_clicks); every view, flattened."""
    runs = await asyncio.gather(
        *(student_clicks(server, seconds, pace, seed, paths) for seed in range(students))
    )
    return [view for views in runs for view in views]


async def arrive(
    port: int, students: int, spread: float, seed: int, paths: list[str]
) -> list[dict]:
    """`students` first views of `paths` (round robin), their starts spread over `spread` s."""
    rng = random.Random(seed)

    async def student(i: int) -> dict:
        await asyncio.sleep(rng.uniform(0, spread))
        try:
            return await open_page(port, paths[i % len(paths)])
        except Exception as exc:  # a refused or dropped connection counts as a failed view
            return {"page": paths[i % len(paths)], "seconds": float("nan"),
                    "exceptions": [f"connection: {exc!r}"[:200]], "finished": False}  # fmt: skip

    return await asyncio.gather(*(student(i) for i in range(students)))


def trial(students: int, spread: float, seed: int, paths: list[str]) -> dict:
    port = free_port()
    log = Path(tempfile.mkstemp(suffix=".log")[1])
    proc = start_server(port, dict(os.environ), log)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        views = asyncio.run(arrive(port, students, spread, seed, paths))
    finally:
        stop_server(proc)
    failed = [v for v in views if v["exceptions"] or not v["finished"]]
    seconds = sorted(v["seconds"] for v in views if v["finished"])
    return {
        "failed_views": len(failed),
        "errors": sorted({e for v in failed for e in v["exceptions"]})[:5],
        "p50_s": round(statistics.median(seconds), 2) if seconds else None,
        "max_s": round(seconds[-1], 2) if seconds else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--spread", type=float, default=1.0, help="seconds over which they arrive")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument(
        "--pages", nargs="*", help="URL paths to open (Home is ''); default: every page"
    )
    args = parser.parse_args()
    paths = page_paths() if args.pages is None else args.pages
    trials = [trial(args.students, args.spread, seed, paths) for seed in range(args.trials)]
    emit(
        "class_arrival",
        {
            "students": args.students,
            "spread_s": args.spread,
            "pages": [p or "Home" for p in paths],
            "trials": trials,
            "failed_views_total": sum(t["failed_views"] for t in trials),
        },
    )


if __name__ == "__main__":
    main()
