"""A clicking class against 1 process and against N behind HAProxy (serving/class_server.py).

    python -m benchmarks.bench_class_serving [--processes 1 2] [--students 30] [--seconds 40]
    python -m benchmarks.bench_class_serving --url http://127.0.0.1:8501   # a running server

For each process count it starts the class server (HAProxy in front even of one process, so the
proxy's cost is in both), opens every page once on each process (models loaded, caches warm),
then runs benchmarks.class_arrival.class_clicking: `students` websockets, each a page run on a
random page every 0.5-2 s for `seconds`. Each student's one websocket stays on the process HAProxy
gave it (round robin). Reports the views' p50 and p95 round trip, the failed views (an exception
drawn, or no script_finished within 120 s) and each app process's resident memory at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.class_arrival import class_clicking, open_page, page_paths
from benchmarks.common import emit
from tests.test_browser import free_port

ROOT = Path(__file__).resolve().parent.parent


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024)
    except OSError:
        return None
    return None


async def warm(url: str, processes: int, paths: list[str]) -> None:
    """Every page once on every process (pinned by its cookie), the processes in parallel."""

    async def one(server: str) -> None:
        for page in paths:
            await open_page(url, page, headers={"Cookie": f"SERVERID={server}"})

    await asyncio.gather(*(one(f"s{i + 1}") for i in range(processes)))


def load(url: str, students: int, seconds: float, paths: list[str]) -> dict:
    views = asyncio.run(class_clicking(url, students, seconds, (0.5, 2.0), paths))
    times = sorted(v["seconds"] for v in views if v["finished"])
    return {
        "views": len(views),
        "failed_views": sum(1 for v in views if v["exceptions"] or not v["finished"]),
        "errors": sorted({e for v in views for e in v["exceptions"]})[:5],
        "p50_s": round(statistics.median(times), 2) if times else None,
        "p95_s": round(statistics.quantiles(times, n=20)[18], 2) if len(times) > 1 else None,
        "views_per_s": round(len(views) / seconds, 1),
    }


def measure(processes: int, students: int, seconds: float, paths: list[str]) -> dict:
    port, folder = free_port(), Path(tempfile.mkdtemp(prefix="bench-class-"))
    cmd = [
        sys.executable, "-m", "serving.class_server", "start", "--processes", str(processes),
        "--port", str(port), "--backend-port", str(free_port()), "--address", "127.0.0.1",
        "--state-dir", str(folder),
    ]  # fmt: skip
    launcher = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        line = launcher.stdout.readline()
        while line and "serving the class at" not in line:
            line = launcher.stdout.readline()
        if not line:
            raise RuntimeError(f"the class server did not start; see {folder}")
        url = f"http://127.0.0.1:{port}"
        asyncio.run(warm(url, processes, paths))
        result = {"processes": processes, **load(url, students, seconds, paths)}
        pids = json.loads((folder / "pids.json").read_text())["apps"].values()
        return {**result, "rss_mb": [rss_mb(p) for p in pids]}
    finally:
        launcher.terminate()  # what `class_server stop` sends
        launcher.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=40.0, help="of clicking, per setting")
    parser.add_argument("--url", help="load an already running server instead (no warm-up)")
    args = parser.parse_args()
    paths = page_paths()
    if args.url:
        runs = [{"url": args.url, **load(args.url, args.students, args.seconds, paths)}]
    else:
        runs = [measure(n, args.students, args.seconds, paths) for n in args.processes]
    emit("class_serving", {"students": args.students, "pace_s": [0.5, 2.0],
                           "seconds": args.seconds, "runs": runs})  # fmt: skip


if __name__ == "__main__":
    main()
