"""Start to first step of a training job, and where the time goes. Prints JSON.

    python -m benchmarks.bench_job_start                 # quick preset, Shakespeare, char
    python -m benchmarks.bench_job_start --tokenizer bpe --rounds 3

Two measurements, each in fresh processes (imports are part of a start):

- `phases`: a child process times, one after another, what a job does before its first step:
  the imports of the worker, loading the text, training the tokenizer, encoding the text, the
  counting baselines (ngram.baselines), the example prompts, building the model, the untrained
  snapshot and the first training step. Best of `rounds` per phase.
- `end_to_end`: jobs.start(...) in this process, to the first line of the run's history.jsonl
  (what a student waits for after pressing Start), best and worst of `rounds`.

docs/ARCHITECTURE.md, Budgets: start to first step under 3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import emit

REPO = Path(__file__).resolve().parent.parent
POLL = 0.02

_CHILD = r"""
import json, sys, time
t = time.perf_counter
marks = {}
t0 = t()
import torch
marks["import torch"] = t() - t0; t1 = t()
from serving import job_worker# noqa: F401  (everything the worker imports)
from viz_model.text import ngram
from viz_model.training import settings as run_settings
from viz_model.text.data import TokenData, example_prompts
from viz_model.model.gpt import GPT
from viz_model.text.tokenization import Tokenizer
from viz_model.bundles.checkpoint import save_snapshot
from viz_model.training.loop import RunStart, train
marks["import the worker's modules"] = t() - t1
torch.set_num_threads(1)
settings = run_settings.RunSettings.from_dict(json.loads(sys.argv[1]))
out = sys.argv[2]
t1 = t(); source = settings.data_source(); text = load_text(source)
marks["load the text"] = t() - t1
t1 = t(); tok = Tokenizer.train(text, settings.tokenizer, settings.vocab_size)
marks["train the tokenizer"] = t() - t1
t1 = t(); data = TokenData.from_text(text, tok, source["val_fraction"])
marks["encode the text"] = t() - t1
t1 = t(); ngram.baselines(data.train.numpy(), data.val.numpy(), tok.vocab_size)
marks["baselines (ngram.baselines)"] = t() - t1
t1 = t(); example_prompts(text, source.get("task"))
marks["example prompts"] = t() - t1
t1 = t(); run = run_settings.new_run(settings, out, "bench")
marks["new_run (all of the above but the imports)"] = t() - t1
t1 = t(); loop = train(run.model, run.data, run.cfg, run.out, run.tokenizer, start=RunStart(meta=run.meta))
rec = next(loop)
marks["untrained snapshot and the first step"] = t() - t1
t1 = t(); save_snapshot(out, run.model, 0)
marks["  of which the snapshot"] = t() - t1
print(json.dumps(marks))
"""


def phases(settings: dict, rounds: int) -> dict[str, float]:
    best: dict[str, float] = {}
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "OMP_NUM_THREADS": "1"}
            out = subprocess.run(
                [sys.executable, "-c", _CHILD, json.dumps(settings), str(Path(tmp) / "run")],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            for name, seconds in json.loads(out.strip().splitlines()[-1]).items():
                best[name] = round(min(best.get(name, float("inf")), seconds), 3)
    return best


def end_to_end(settings: dict, rounds: int) -> dict[str, float]:
    from serving import jobs
    from viz_model.training.settings import RunSettings

    times = []
    for i in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            t0 = time.perf_counter()
            view = jobs.start(f"s{i}", RunSettings.from_dict(settings), auth=jobs.Auth(), root=root)
            history = view.path / jobs.HISTORY_FILE
            while not (history.exists() and history.stat().st_size > 0):
                if not jobs.read(view.name, root, history=False).live:
                    raise RuntimeError("the job ended before its first step")
                time.sleep(POLL)
            times.append(time.perf_counter() - t0)
            jobs.stop(view.name, auth=jobs.Auth(), root=root)
            deadline = time.monotonic() + 60
            while jobs.read(view.name, root, history=False).live and time.monotonic() < deadline:
                time.sleep(0.1)
    return {"best_s": round(min(times), 2), "worst_s": round(max(times), 2), "rounds": rounds}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="quick")
    parser.add_argument("--tokenizer", default="char")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    settings = {
        "corpus": "shakespeare",
        "tokenizer": args.tokenizer,
        "preset": args.preset,
        "minutes": 1.0,
        "train": {"threads": 1},
    }
    os.environ.setdefault("VIZ_JOB_THREADS", "1")
    emit(
        "job_start",
        {
            "settings": settings,
            "phases_s": phases(settings, args.rounds),
            "end_to_end": end_to_end(settings, args.rounds),
            "budget_s": 3.0,
        },
    )


if __name__ == "__main__":
    main()
