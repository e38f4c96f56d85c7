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

from benchmarks.common import emit
from serving.student import Student, stream_url  # noqa: F401 (stream_url: re-exported)
from tests.test_browser import free_port, start_server, stop_server, wait_healthy
from ui import nav


def page_paths() -> list[str]:
    """Every page's URL name, Home as ''."""
    return [p.url_path for p in nav.all_pages()]


async def open_page(
    server: int | str,
    page: str,
    query: str = "",
    timeout: float = 120,
    headers: dict[str, str] | None = None,
    elements: list[str] | None = None,
) -> dict:
    """One student's first view of a page: {page, seconds, exceptions, finished, backend}, timed
    from connecting. `headers` go with the websocket's upgrade request (a proxy's cookie, say);
    `backend` is HAProxy's X-Backend header; each element drawn goes into `elements`, as text."""
    t0 = time.perf_counter()
    async with Student(server, headers, timeout) as student:
        seen = await student.view(page, query, elements=elements)
    return {**seen.as_dict(), "seconds": time.perf_counter() - t0, "backend": student.backend}


async def student_clicks(
    server: int | str, seconds: float, pace: tuple[float, float], seed: int, paths: list[str]
) -> list[dict]:
    """One student for `seconds`: one websocket (one session), a page run every pace[0]..pace[1]
    seconds on a random page. Returns each view's {page, seconds, exceptions, finished}."""
    rng = random.Random(seed)
    views: list[dict] = []
    end = time.perf_counter() + seconds
    async with Student(server) as student:
        while time.perf_counter() < end:
            views.append((await student.view(rng.choice(paths))).as_dict())
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
            return {
                "page": paths[i % len(paths)],
                "seconds": float("nan"),
                "exceptions": [f"connection: {exc!r}"[:200]],
                "finished": False,
            }

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
