"""Server time of the Training page while a job trains: one whole page run, and one refresh of the
live run's fragment (what each student's browser asks for about once a second).

    python -m benchmarks.bench_training_page [--refreshes 40] [--minutes 3]

It starts a `quick` run on Shakespeare in a temporary runs folder, a fresh `streamlit run`, and one
protocol-level student (benchmarks.class_arrival): the student opens /Training?t_run=bench, learns
the fragment's id from the server's auto-rerun message, then asks for that fragment again and again
as the browser's timer would, timing each from request to script_finished (loopback, so this is
the server's time). Figures: median and p95 in milliseconds, and the job's tokens/s meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.common import emit
from serving.student import Student
from tests.test_browser import free_port, start_server, stop_server, wait_healthy

RUN = "bench"


async def measure(port: int, refreshes: int) -> dict:
    query = f"t_run={RUN}"
    page_runs, fragment_runs, exceptions = [], [], []
    async with Student(port) as student:
        for i in range(4):  # the first run loads the models and counts; keep the later ones
            seen = await student.view("Training", query)
            exceptions += seen.exceptions
            if i:
                page_runs.append(seen.seconds)
        if not student.fragment_id:
            return {"error": "the page drew no refreshing fragment (is the run live?)"}
        for _ in range(refreshes):
            seen = await student.view("Training", query, fragment_id=student.fragment_id)
            exceptions += seen.exceptions
            fragment_runs.append(seen.seconds)
            await asyncio.sleep(0.25)

    def ms(values: list[float], q: float) -> float:
        return round(1000 * statistics.quantiles(values, n=20)[int(q * 20) - 1], 1)

    return {
        "page_run_ms_median": round(1000 * statistics.median(page_runs), 1),
        "refresh_ms_median": round(1000 * statistics.median(fragment_runs), 1),
        "refresh_ms_p95": ms(fragment_runs, 0.95),
        "refreshes": len(fragment_runs),
        "exceptions": exceptions,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--refreshes", type=int, default=40)
    parser.add_argument("--minutes", type=float, default=3.0, help="length of the training run")
    args = parser.parse_args()
    runs = Path(tempfile.mkdtemp(prefix="bench-runs-"))
    env = {**os.environ, "VIZ_RUNS_DIR": str(runs), "VIZ_JOB_THREADS": "1"}
    os.environ.update({k: env[k] for k in ("VIZ_RUNS_DIR", "VIZ_JOB_THREADS")})

    from serving import jobs
    from viz_model.training.settings import RunSettings

    jobs.start(
        RUN,
        RunSettings(corpus="shakespeare", preset="quick", minutes=args.minutes),
        auth=jobs.Auth(),
    )
    while not jobs.read(RUN, history=False).has_bundle:  # the probe needs the first save
        time.sleep(0.5)
    port = free_port()
    log = Path(tempfile.mkstemp(suffix=".log")[1])
    proc = start_server(port, env, log)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        results = asyncio.run(measure(port, args.refreshes))
        view = jobs.read(RUN, history=False)
        results["job_tokens_per_s_meanwhile"] = round(view.tokens_per_s)
        results["job_step"] = view.step
    finally:
        stop_server(proc)
        jobs.stop(RUN, auth=jobs.Auth())
    emit("training_page", results)


if __name__ == "__main__":
    main()
