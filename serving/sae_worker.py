"""An SAE job's process: serving/job_worker.py hands it a folder whose plan.json says kind "sae".

It waits for the runs root's lock (jobs.launch_run holds it until settings.json is written),
loads the model the settings name (the snapshot at their step, when they name one) and its
training text, runs lab() (sae/lab.py: reading activations, training, measuring, tabulating) and
saves the lab (sae_files.save_lab). Between two batches it writes status.json (stage, progress,
tokens/s, at most about four times a second) and polls control.json; Stop, SIGTERM, SIGINT and
the server's minutes cap end it as "stopped" with nothing saved. A model or text that cannot be
loaded ends it as "failed" with the reason; anything else is "failed" too, with the traceback in
job.log. A folder deleted under it ends it between two batches, writing nothing (job_home.Home).
All it knows of the page is those files.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import torch

from serving import jobs
from serving.job_home import FolderGone, Home
from serving.sae_jobs import SAEJob
from viz_model.analysis.labs.sae.lab import lab as train_lab
from viz_model.analysis.labs.sae_files import save_lab
from viz_model.bundles.files import CheckpointError, write_json
from viz_model.bundles.load import load_bundle
from viz_model.text.data import VAL_FRACTION, DataError, load_text

STATUS_EVERY = 0.25  # seconds between status writes while nothing else changes
CONTROL_EVERY = 0.1  # seconds between reads of control.json
STAGES = {  # what each stage of lab() is doing, in the status's words
    "collect": "reading activations at {hook}",
    "train": "training the SAE",
    "measure": "measuring on held-out text and tabulating every feature",
}


class Stopped(Exception):
    """Raised from the progress callback: the job is to stop (the message says why)."""


class Status:
    """status.json, written atomically, keeping what jobs.launch_run wrote (pid, start time)."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "status.json"
        self.data: dict[str, Any] = jobs.read_json(self.path, {}) or {}
        self.data.update(pid=os.getpid(), pid_started=jobs.process_started(os.getpid()))
        self.written = 0.0

    def write(self, force: bool = False, **changes: Any) -> None:
        self.data.update(changes)
        now = time.time()
        if force or now - self.written >= STATUS_EVERY:
            self.data["updated"] = now
            write_json(self.path, self.data)
            self.written = now


class Watch:
    """The progress callback lab() calls between batches: it reports and decides to stop."""

    def __init__(self, home: Home, job: SAEJob, status: Status, cap_s: float) -> None:
        self.home, self.control, self.job, self.status, self.cap_s = (
            home,
            home.folder / "control.json",
            job,
            status,
            cap_s,
        )
        self.signalled = threading.Event()
        self.started = time.monotonic()
        self.train_started: float | None = None
        self.read_at = -1.0

    def __call__(self, stage: str, share: float) -> None:
        now = time.monotonic()
        elapsed = now - self.started
        if stage == "train" and self.train_started is None:
            self.train_started = now
        self._check_stop(now, elapsed)
        changes: dict[str, Any] = {"stage": stage, "elapsed": round(elapsed, 1)}
        changes["message"] = STAGES.get(stage, stage).format(hook=self.job.hook)
        if stage == "train":
            spent = now - (self.train_started or now)
            changes["progress"] = round(share, 4)
            changes["tokens_per_s"] = round(share * self.job.tokens / spent) if spent > 0 else 0
            if share > 0:
                changes["time_left"] = round(spent * (1 - share) / share, 1)
        elif stage == "collect":
            changes["message"] += f" ({share:.0%})"
        elif stage == "measure":
            changes.update(progress=1.0, time_left=None)
        self.status.write(force=stage == "measure", **changes)

    def _check_stop(self, now: float, elapsed: float) -> None:
        self.home.check()  # FolderGone: deleted under the job, which ends writing nothing
        if self.signalled.is_set():
            raise Stopped("stopped by a signal to the worker")
        if self.cap_s > 0 and elapsed >= self.cap_s:
            minutes = f"{self.cap_s / 60:g}"
            raise Stopped(
                f"stopped after {minutes} minutes, the longest job allowed here "
                f"(VIZ_MAX_MINUTES={minutes})"
            )
        if now - self.read_at >= CONTROL_EVERY:
            self.read_at = now
            try:
                control = jobs.read_json(self.control, {}) or {}
            except jobs.JobError:  # written atomically: rare; next time
                control = {}
            if control.get("stop"):
                raise Stopped("stopped by Stop")


def _load(job: SAEJob):
    """(model, tokenizer, text, held-out share) of the job's model; ValueError saying why not."""
    try:
        bundle = load_bundle(job.model_path)
        model = bundle.model if job.step is None else bundle.load_snapshot(job.step)
    except (CheckpointError, OSError) as exc:
        raise ValueError(f"the model at {job.model_path} cannot be loaded: {exc}") from None
    source = bundle.meta.get("data")
    if not isinstance(source, dict) or not source:
        raise ValueError("the model does not say what text it was trained on")
    try:
        text = load_text(source)
    except (DataError, OSError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"the model's training text cannot be loaded: {exc}") from None
    return model.eval(), bundle.tokenizer, text, float(source.get("val_fraction", VAL_FRACTION))


def _fail(status: Status, message: str) -> int:
    status.write(force=True, state="failed", message=message)
    return 1


def run(folder: Path, home: Home | None = None) -> int:
    """Train, measure and save the SAE job in `folder`; status.json says how it ended.
    FolderGone (job_worker.run ends on it) when the folder is deleted under the job."""
    home = home or Home(folder)
    with jobs.locked(folder.parent.parent):  # launch_run holds it until settings.json is written
        pass
    status = Status(folder)
    plan = jobs.read_json(folder / "plan.json", {}) or {}
    torch.set_num_threads(int(plan.get("threads", 1)))
    try:
        job = SAEJob.from_dict(jobs.read_json(folder / "settings.json"))
    except jobs.JobError as exc:
        return _fail(status, f"unreadable settings: {exc}")
    watch = Watch(home, job, status, float(plan.get("max_minutes", 0)) * 60)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: watch.signalled.set())
    status.write(force=True, state="running", stage="load", progress=0.0, message="loading")
    try:
        model, tokenizer, text, held_out = _load(job)
        model.check_names([job.hook])
    except (ValueError, KeyError) as exc:
        return _fail(status, str(exc).strip("'\""))
    try:
        lab = train_lab(model, tokenizer, text, job.hook, job.config(), job.tokens, watch, held_out)
        save_lab(lab, folder)
    except Stopped as why:
        status.write(force=True, state="stopped", message=f"{why}; nothing was saved")
        return 0
    except FolderGone:
        raise
    except Exception as exc:
        _fail(status, f"{type(exc).__name__}: {exc}")
        raise
    m = lab.metrics
    done = f"finished: variance explained {m.fve:.1%}, {m.l0:.1f} active per token"
    status.write(force=True, state="finished", progress=1.0, time_left=0, message=done)
    return 0
