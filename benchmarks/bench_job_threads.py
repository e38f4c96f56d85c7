"""A training job beside a class: its tokens/s alone and while 30 students click, by job threads.

    python -m benchmarks.bench_job_threads [--students 30] [--seconds 40] [--threads 1 2]

For each thread count it starts a `quick` job on Shakespeare (VIZ_JOB_THREADS), reads its speed
alone for a while, then starts `streamlit run` and 30 protocol-level students clicking every
0.5-2 s on random pages (benchmarks.class_arrival.class_clicking) and reads the job's speed again,
from its own history (tokens/s of the steps taken in each window). It also reports the students'
median and p95 page time. docs/ARCHITECTURE.md, The server side: the job's threads are chosen so that training and
the students do not starve each other; on 2 cores the default is 1 (serving/jobs.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.class_arrival import class_clicking, page_paths
from benchmarks.common import emit
from tests.test_browser import free_port, start_server, stop_server, wait_healthy


def _tokens_per_s(history: list[dict], t0: float, t1: float, tokens_per_step: int) -> float:
    """Training speed over the steps whose elapsed time falls in [t0, t1) (the job's own clock)."""
    window = [r for r in history if t0 <= r.get("elapsed", -1) < t1]
    if len(window) < 2:
        return float("nan")
    steps = window[-1]["step"] - window[0]["step"]
    return steps * tokens_per_step / (window[-1]["elapsed"] - window[0]["elapsed"])


def measure(threads: int, students: int, seconds: float) -> dict:
    from serving import jobs
    from viz_model.training.settings import RunSettings

    runs = Path(tempfile.mkdtemp(prefix="bench-threads-"))
    os.environ.update({jobs.RUNS_ENV: str(runs), "VIZ_JOB_THREADS": str(threads)})
    settings = RunSettings(corpus="shakespeare", preset="quick", minutes=(2 * seconds + 60) / 60)
    per_step = settings.train_config().batch_size * settings.model_config(2).n_ctx
    jobs.start("threads", settings, auth=jobs.Auth())
    while jobs.read("threads", history=False).step < 50:  # past start-up
        time.sleep(0.5)
    alone_from = jobs.read("threads", history=False).elapsed
    time.sleep(seconds / 2)
    alone_to = jobs.read("threads", history=False).elapsed
    port = free_port()
    proc = start_server(port, dict(os.environ), Path(tempfile.mkstemp(suffix=".log")[1]))
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        class_from = jobs.read("threads", history=False).elapsed
        views = asyncio.run(class_clicking(port, students, seconds, (0.5, 2.0), page_paths()))
        class_to = jobs.read("threads", history=False).elapsed
    finally:
        stop_server(proc)
        jobs.stop("threads", auth=jobs.Auth())
    history = jobs.read("threads").history
    alone = _tokens_per_s(history, alone_from, alone_to, per_step)
    beside = _tokens_per_s(history, class_from + 5, class_to, per_step)  # after the first loads
    times = sorted(v["seconds"] for v in views if v["finished"])
    return {
        "job_threads": threads,
        "tokens_per_s_alone": round(alone),
        "tokens_per_s_beside_class": round(beside),
        "ratio": round(beside / alone, 3),
        "student_views": len(views),
        "failed_views": sum(1 for v in views if v["exceptions"] or not v["finished"]),
        "student_p50_s": round(statistics.median(times), 2),
        "student_p95_s": round(statistics.quantiles(times, n=20)[18], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=40.0, help="of clicking, per setting")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    args = parser.parse_args()
    results = [measure(t, args.students, args.seconds) for t in args.threads]
    emit("job_threads", {"students": args.students, "cpu_count": os.cpu_count(), "runs": results})


if __name__ == "__main__":
    main()
