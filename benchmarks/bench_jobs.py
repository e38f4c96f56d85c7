"""A training job's speed against the same run from the command line, same threads. Prints JSON.

    python -m benchmarks.bench_jobs                      # quick preset, 300 steps, 2 rounds
    python -m benchmarks.bench_jobs --steps 100 --rounds 1

Both runs train the same RunSettings (Shakespeare, char, the quick preset) for the same steps on
the same number of threads: one through serving.jobs.start (a worker process that also writes
status.json, history.jsonl and polls control.json between steps), one as
`python -m viz_model.training ... --quiet`. Each is timed from the moment its untrained snapshot
(snapshots/step_000000) appears, just before step 1, to the end of the run (its final evaluation
and save included), so the start-up (imports, tokenizer) counts for neither. Runs alternate and
the best of the rounds is kept. Target: job / command line >= 0.9.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import emit
from serving import jobs
from viz_model.training.settings import RunSettings, settings_to_argv

REPO = Path(__file__).resolve().parent.parent
POLL = 0.05  # seconds between looks, alike for both runs


def _wait_for(path: Path, alive) -> float:
    """The time at which `path` exists (polling), failing if the run ends first."""
    while not path.exists():
        if not alive():
            raise RuntimeError(f"the run ended before {path} appeared")
        time.sleep(POLL)
    return time.perf_counter()


def cli_seconds(settings: RunSettings, threads: int, out: Path) -> float:
    argv = [*settings_to_argv(settings, out), "--threads", str(threads), "--quiet"]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "viz_model.training", *argv],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    t0 = _wait_for(out / "snapshots" / "step_000000.safetensors", lambda: proc.poll() is None)
    while proc.poll() is None:
        time.sleep(POLL)
    if proc.returncode != 0:
        raise RuntimeError(f"the command line run failed ({proc.returncode})")
    return time.perf_counter() - t0


def job_seconds(settings: RunSettings, root: Path, name: str) -> float:
    jobs.start(name, settings, root=root, auth=jobs.Auth())
    snapshot = root / name / "snapshots" / "step_000000.safetensors"
    t0 = _wait_for(snapshot, lambda: jobs.read(name, root, history=False).live)
    while (view := jobs.read(name, root, history=False)).live:
        time.sleep(POLL)
    if view.state != "finished":
        raise RuntimeError(f"the job ended {view.state}: {view.message}")
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300, help="steps per run (default 300)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each kind (default 2)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of both (default 1)")
    args = parser.parse_args()
    os.environ["VIZ_JOB_THREADS"] = str(args.threads)
    os.environ.setdefault("VIZ_MAX_MINUTES", "60")
    settings = RunSettings(corpus="shakespeare", preset="quick", train={"max_steps": args.steps})
    cfg = settings.train_config()
    tokens = args.steps * cfg.batch_size * settings.model_config(2).n_ctx
    best = {"job": float("inf"), "cli": float("inf")}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        for i in range(args.rounds):
            best["job"] = min(best["job"], job_seconds(settings, root, f"job-{i}"))
            best["cli"] = min(
                best["cli"], cli_seconds(settings, args.threads, Path(tmp) / f"cli-{i}")
            )
    rates = {k: tokens / v for k, v in best.items()}
    emit(
        "bench_jobs",
        {
            "settings": settings.to_dict(),
            "job_threads": args.threads,
            "tokens_per_run": tokens,
            "seconds": {k: round(v, 2) for k, v in best.items()},
            "tokens_per_s": {k: round(v) for k, v in rates.items()},
            "ratio_job_over_cli": round(rates["job"] / rates["cli"], 3),
            "target": 0.9,
        },
    )


if __name__ == "__main__":
    main()
