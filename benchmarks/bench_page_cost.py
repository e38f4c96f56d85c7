"""What one page view costs the server: CPU seconds, bytes sent, and where the CPU goes.

    python -m benchmarks.bench_page_cost [--views 4] [--port 8650] [--pages Attention ...]

Server part (the figures to quote): a real `streamlit run app.py` driven over its websocket
as a browser drives it. CPU is the server process's user+system time (/proc/PID/stat) from the
request to 0.3 s after script_finished, so it counts the script, the serialisation of every
element into protobuf, the websocket send and the post-run garbage collection; it is process
time, not wall time, because the machine is shared. Each page is first opened once (imports,
the model, lazily built objects: every page, Training included, before any is measured, as in a
class). Then `--views` rounds, each a new session (`?model=...&prompt=...`) doing three runs of
the page: `new_session` (its first run; the URL's prompt already cached), `miss` (the student
types a prompt no run had before: every cache misses) and `hit` (the same page again, as after
a click: every cache hits). Bytes are the websocket messages the client received; like a
browser, the client tells the server which large elements it already holds (ForwardMsg hashes),
so an element that did not change is sent as a reference. CPU is the
mean over the rounds (the kernel counts in 10 ms ticks, so a mean over n resolves 10/n ms),
bytes the median.

Breakdown (in-process, AppTest, same page and model): CPU time of the script thread
(time.thread_time, so other work on the machine does not count), split exclusively into
`compute` (viz_model.analysis / sampling / ngram and the model forward), `figures` (the chart
builders in ui.charts), `serialise` (st.plotly_chart, st.altair_chart, st.vega_lite_chart,
st.dataframe, st.table: figure -> dict -> JSON, frame -> Arrow) and `script` (the rest: the frame,
widgets, markdown, cache lookups and their hashing). A miss changes the sidebar prompt, a hit
reruns unchanged. AppTest does not send, so the server's figure minus the breakdown's total is
roughly the protobuf and websocket cost (and the new session's).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

from benchmarks.class_arrival import page_paths
from benchmarks.common import emit
from benchmarks.page_cost_probe import Probe
from serving.models import DEFAULT_MODEL
from serving.student import Student
from tests.test_browser import free_port, start_server, stop_server, wait_healthy
from ui import nav
from ui.frame import DEFAULT_PROMPT

TICK = os.sysconf("SC_CLK_TCK")
SETTLE_S = 0.3  # after script_finished: the post-run GC and the last sends finish
PROMPT_WIDGET = "_w_prompt"  # the key of the sidebar prompt (ui.frame, ui.state.widget_key)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (its exited threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def prompt_for(i: int) -> str:
    """A prompt as long as the default one, different for each i (so every cache misses)."""
    return f"{DEFAULT_PROMPT[:-6]}{i:05d}?"


async def run(student: Student, pid: int, page: str, query: str = "", prompt=None) -> dict:
    """One page run (a new prompt typed when given): server CPU s, bytes, exceptions."""
    before = cpu_seconds(pid)
    seen = await student.view(page, query, widgets=None if prompt is None else {"Prompt": prompt})
    await asyncio.sleep(SETTLE_S)
    return {
        "cpu_s": cpu_seconds(pid) - before,
        "bytes": seen.kilobytes * 1e3,
        "errors": len(seen.exceptions) + (not seen.finished),
    }


async def page_views(port: int, pid: int, page: str, model: str, n0: int, views: int) -> dict:
    """`views` rounds on one page, each in a new session: its first run, a new prompt, a rerun."""
    rows: dict[str, list[dict]] = {"new_session": [], "miss": [], "hit": []}
    query = urlencode({"model": model, "prompt": prompt_for(n0)})
    async with Student(port) as student:  # the URL's prompt is cached from here on
        await run(student, pid, page, query)
    for i in range(views):
        async with Student(port) as student:
            rows["new_session"].append(await run(student, pid, page, query))
            rows["miss"].append(await run(student, pid, page, query, prompt_for(n0 + 1 + i)))
            rows["hit"].append(await run(student, pid, page, query))
    return {kind: summary(r) for kind, r in rows.items()}


def summary(views: list[dict]) -> dict:
    return {
        "cpu_ms": round(statistics.mean(v["cpu_s"] for v in views) * 1e3, 1),
        "kB": round(statistics.median(v["bytes"] for v in views) / 1e3, 1),
        "errors": sum(v["errors"] for v in views),
    }


def bench_server(port: int, paths: list[str], model: str, views: int) -> dict:
    runs = tempfile.mkdtemp()  # no trained runs in the model picker: the same page everywhere
    env = {**os.environ, "VIZ_RUNS_DIR": runs}
    log = Path(tempfile.mkstemp(suffix=".log")[1])
    proc = start_server(port, env, log)
    out: dict[str, dict] = {}
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        idle0 = cpu_seconds(proc.pid)
        time.sleep(2)
        idle = (cpu_seconds(proc.pid) - idle0) / 2
        for path in paths:  # every page once first: imports, models, lazily built objects
            asyncio.run(page_views(port, proc.pid, path, model, 0, 1))
        for i, path in enumerate(paths):
            n0 = 1000 * (i + 1)
            out[path or "Home"] = asyncio.run(page_views(port, proc.pid, path, model, n0, views))
        rss = int(Path(f"/proc/{proc.pid}/statm").read_text().split()[1]) * os.sysconf(
            "SC_PAGESIZE"
        )
    finally:
        stop_server(proc)
    return {
        "server_idle_cpu_ms_per_s": round(idle * 1e3, 1),
        "server_rss_mb_at_end": round(rss / 2**20),
        "server": out,
    }


def bench_breakdown(paths: list[str], model: str, views: int) -> dict:
    """AppTest per page: median exclusive CPU ms per category, miss and hit."""
    from tests.apptest_util import app_test

    files = {"": None} | {p.url_path: p.file for p in nav.lesson_pages()}
    probe = Probe()
    probe.install()
    models_dir = Path(__file__).resolve().parent.parent / "assets" / "models"
    out: dict[str, dict] = {}
    n = 10_000
    for path in paths:
        at = app_test(models_dir, files[path], prompt=prompt_for(n), query={"model": model})
        per: dict[str, list[dict]] = {"miss": [], "hit": []}
        for _ in range(views):
            n += 1
            at.sidebar.text_area(key="_w_prompt").input(prompt_for(n))
            per["miss"].append(probe.measure(at.run))
            per["hit"].append(probe.measure(at.run))
        out[path or "Home"] = {
            kind: {k: round(statistics.median(r[k] for r in rows) * 1e3, 1) for k in rows[0]}
            for kind, rows in per.items()
        }
    return {"breakdown_ms": out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--views", type=int, default=6)
    parser.add_argument("--port", type=int, default=0, help="default: a free port")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--pages", nargs="*", help="URL paths (Home is ''); default: every page")
    parser.add_argument("--no-breakdown", action="store_true")
    args = parser.parse_args()
    paths = page_paths() if args.pages is None else [p if p != "Home" else "" for p in args.pages]
    result = {
        "model": args.model,
        "views": args.views,
        "load_average_1min": round(os.getloadavg()[0], 2),
        **bench_server(args.port or free_port(), paths, args.model, args.views),
    }
    if not args.no_breakdown:
        result |= bench_breakdown(paths, args.model, args.views)
    emit("page_cost", result)


if __name__ == "__main__":
    main()
