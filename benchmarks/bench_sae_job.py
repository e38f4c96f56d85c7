"""A sparse autoencoder trained as a job (serving/sae_jobs.py), timed from the page's side.

    python -m benchmarks.bench_sae_job                      # bench_sae's size: 500k, 1,024, top-16
    python -m benchmarks.bench_sae_job --k 0 --l1 0.01      # the same with an L1 penalty

Starts the job in a runs folder of its own (a temporary one unless --runs says where) on
`shakespeare-char`'s `blocks.1.hook_resid_post`, one torch thread (VIZ_JOB_THREADS=1), and reads
its status.json every 0.1 s as a page would, noting when each stage began (the worker starting,
reading activations, training, measuring and tabulating, finished). Reports the wall time from
start() to "finished", the stages' lengths, and the metrics read back from the saved lab, to set
beside `python -m benchmarks.bench_sae` (which trains in its own process, without a worker).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import torch

from benchmarks.bench_sae import quality
from benchmarks.common import emit
from serving import jobs, models, sae_jobs
from viz_model.analysis.labs.sae_files import load_lab
from viz_model.text.data import ASSETS_DIR

MODEL, LAYER = "shakespeare-char", 1


def run(tokens: int, features: int, k: int, l1: float, seed: int) -> dict:
    bundle_id = models.bundle_id((ASSETS_DIR / "models" / MODEL).resolve())
    job = sae_jobs.SAEJob(bundle_id, LAYER, "resid_post", features, k, l1, tokens, seed)
    name = sae_jobs.free_name(f"bench-{features}-{job.sparsity()}")
    start = time.perf_counter()
    sae_jobs.start(name, job, auth=jobs.Auth.resolve(os.environ.get(jobs.PASSWORD_ENV)))
    began, last = {}, None
    while True:
        view = sae_jobs.read(name)
        stage = view.message.split(" (")[0].split(":")[0]
        if stage != last:
            began[stage], last = time.perf_counter() - start, stage
        if not view.live:
            break
        time.sleep(0.1)
    wall = time.perf_counter() - start
    if view.state != "finished":
        return {"job": name, "state": view.state, "message": view.message}
    began.pop("finished", None)  # the last stage ends when the job is seen finished
    times = list(began.values()) + [wall]
    stages = {s: round(times[i + 1] - times[i], 1) for i, s in enumerate(began)}
    lab = load_lab(view.path, d_model=128)
    m = lab.metrics
    return {
        "model": MODEL,
        "hook": lab.name,
        "features": features,
        "sparsity": job.sparsity(),
        "train_tokens": lab.log.tokens,
        "steps": len(lab.log.mse),
        "job_threads": view.threads,
        "wall_s": round(wall, 1),
        "stages_s": stages,
        "resampled": lab.log.resampled,
        **quality(m),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=500_000)
    parser.add_argument("--features", type=int, default=1024)
    parser.add_argument("--k", type=int, default=16, help="top-k; 0 for the L1 penalty")
    parser.add_argument("--l1", type=float, default=0.03, help="the L1 coefficient when k is 0")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=Path, help="the runs folder (default: a temporary one)")
    args = parser.parse_args()
    torch.set_num_threads(1)  # this process only reads files; the job's threads are job_threads
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[jobs.RUNS_ENV] = str(args.runs or tmp)
        os.environ.setdefault("VIZ_JOB_THREADS", "1")
        emit("sae_job", run(args.tokens, args.features, args.k, args.l1, args.seed))


if __name__ == "__main__":
    main()
