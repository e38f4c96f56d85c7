"""The training job's process: `python -m serving.job_worker RUN_DIR` (started by jobs.py).

It builds the run from RUN_DIR/settings.json (or resumes the bundle in RUN_DIR, as plan.json
says), drives the loop (train.train) and, between steps, appends each record to history.jsonl,
rewrites status.json (at most about four times a second, and at every evaluation, sample and
change of state) and polls control.json: pause, step once while paused, a new peak learning rate,
stop. What changed between two steps (a new peak, a pause, a resume, a relaunch) goes into the next
step's record as its `event`, so history.jsonl (and the bundle's history) says where the loss
curve should be marked. SIGTERM and SIGINT stop it the way the Stop button does (after the step, with a save).
All it knows of the page is those files.

How a run ended is written even on a full disk: at start the worker sets aside RESERVE_BYTES in
RUN_DIR/.reserve, and when the last status cannot be written it deletes that file and writes it
again; a run that failed for want of space says so, and what to do (issue 39: it read as
"interrupted", with no cause). The reserve goes when the worker ends.

A worker whose folder is deleted under it (rm -rf outside the app) or replaced by another of the
same name ends itself at its next status write or step, writing nothing (a write would make the
folder again, out of the app's sight): `Home` compares the folder's identity with the one it
started in (issue 39: an orphan trained on, unseen, unstoppable and outside the job cap).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from serving import jobs
from serving.job_home import FolderGone, Home
from viz_model.bundles.files import CheckpointError, write_json, write_text
from viz_model.model.config import STEPS_WHEN_TIMED
from viz_model.training.loop import RunControls, StepRecord
from viz_model.training.settings import (
    Run,
    RunSettings,
    command,
    new_run,
    pick_device,
    resumed_run,
    settings_to_argv,
)

STATUS_EVERY = 0.25  # seconds between status writes while nothing else changes
CONTROL_EVERY = 0.05  # seconds between reads of control.json (about 30 us each)
N_SAMPLES = 6  # the newest samples kept in status.json (all of them are in the history)
RESERVE_FILE = ".reserve"
RESERVE_BYTES = 1 << 20  # room for the last status on a full disk (one with samples is a few KB)
_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}  # no space, or no quota left
GONE = 3  # the exit status of a worker whose folder was deleted


class Control:
    """control.json as last read. It holds states and a running count of step requests, never
    one-off commands, so reading it at most every CONTROL_EVERY seconds loses nothing."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.read_at = -math.inf
        self.values: dict[str, Any] = {}
        self.poll()
        self.steps_served = int(self.values.get("steps", 0))  # step requests before this launch

    def poll(self) -> None:
        now = time.monotonic()
        if now - self.read_at < CONTROL_EVERY:
            return
        self.read_at = now
        with contextlib.suppress(OSError, ValueError):  # written atomically: rare; next time
            self.values = json.loads(self.path.read_text(encoding="utf-8"))

    @property
    def paused(self) -> bool:
        return bool(self.values.get("paused"))

    @property
    def stop(self) -> bool:
        return bool(self.values.get("stop"))

    def lr(self) -> float | None:
        return self.values.get("lr")

    def take_step(self) -> bool:
        """True (once per request) when the page asked for one step while paused."""
        if int(self.values.get("steps", 0)) > self.steps_served:
            self.steps_served += 1
            return True
        return False


class Status:
    """status.json: the worker's view of the run, written atomically."""

    def __init__(self, home: Home, run: Run, threads: int) -> None:
        self.home = home
        self.path = home.folder / "status.json"
        cfg = run.cfg
        on_the_clock = cfg.time_limit > 0 and cfg.max_steps == STEPS_WHEN_TIMED
        self.data: dict[str, Any] = {
            **{k: v for k, v in jobs.read_json(self.path, {}).items() if k == "samples"},
            "state": "running",
            "message": "",
            "pid": os.getpid(),
            "pid_started": jobs.process_started(os.getpid()),
            "step": run.start_step,
            "max_steps": None if on_the_clock else cfg.max_steps,
            "time_limit": cfg.time_limit,
            "elapsed": float(run.history[-1]["elapsed"]) if run.history else 0.0,
            "peak_lr": cfg.lr,
            # a fine-tune: the model's own count (LoRA's A and B merge into it when saved)
            "params": (run.meta.get("finetune") or {}).get("total") or run.model.n_params(),
            "threads": threads,
            "device": str(run.meta.get("device", "cpu")),  # where it trains: cpu, cuda, mps
            "saved_step": run.start_step or None,
        }
        self.tokens_per_step = cfg.batch_size * run.model.cfg.n_ctx
        self.written = 0.0

    def record(self, rec: StepRecord, peak_lr: float) -> None:
        d = self.data
        d.update(step=rec.step, elapsed=rec.elapsed, tokens_per_s=rec.tokens_per_s, lr=rec.lr)
        d.update(train_loss=rec.train_loss, peak_lr=peak_lr)
        if rec.val_loss is not None:
            d["val_loss"] = rec.val_loss
            d["saved_step"] = rec.step  # the loop saves the bundle at every evaluation
        if rec.sample is not None:
            d["samples"] = [*d.get("samples", []), {"step": rec.step, "text": rec.sample}][
                -N_SAMPLES:
            ]
        d["progress"], d["time_left"] = self._progress(rec)

    def _progress(self, rec: StepRecord) -> tuple[float, float | None]:
        """(share done, seconds left) by steps or by time, whichever is further along."""
        done, left = 0.0, None
        if self.data["max_steps"]:
            done = rec.step / self.data["max_steps"]
            if rec.tokens_per_s > 0:
                left = (self.data["max_steps"] - rec.step) * self.tokens_per_step / rec.tokens_per_s
        if self.data["time_limit"] > 0:
            done = max(done, rec.elapsed / self.data["time_limit"])
            by_time = max(0.0, self.data["time_limit"] - rec.elapsed)
            left = by_time if left is None else min(left, by_time)
        return min(1.0, done), None if left is None else round(left, 1)

    def write(self, force: bool = False, **changes: Any) -> None:
        """Write status.json when due (or forced, or changed); FolderGone, every call, when the
        run's folder is gone: a write would make it again."""
        self.home.check()
        self.data.update(changes)
        now = time.time()
        if force or changes or now - self.written >= STATUS_EVERY:
            self.data["updated"] = now
            write_json(self.path, self.data)
            self.written = now


def _build(folder: Path, plan: dict[str, Any], settings: RunSettings) -> Run:
    """A new run, or the bundle in the folder resumed (a run killed before its first save has
    none: it starts again)."""
    if plan.get("mode") == "resume" and (folder / "config.json").is_file():
        train_over, minutes = plan.get("train", {}), plan.get("minutes")
        argv = ["--resume", str(folder)]
        argv += ["--steps", str(train_over["max_steps"])] if "max_steps" in train_over else []
        argv += ["--minutes", f"{minutes:g}"] if minutes is not None else []
        return resumed_run(folder, folder, train_over, minutes, command(argv))
    return new_run(settings, folder, command(settings_to_argv(settings, folder)))


def _history_file(folder: Path, history: list[dict[str, Any]]):
    """history.jsonl holding exactly the run's history so far (records after the last save of a
    killed run are dropped), opened for appending one line per step."""
    write_text(folder / jobs.HISTORY_FILE, "".join(json.dumps(r) + "\n" for r in history))
    return open(folder / jobs.HISTORY_FILE, "a", encoding="utf-8", buffering=1)


def _wait_while_paused(
    control: Control, stop: threading.Event, status: Status, events: list[str]
) -> None:
    """Return when unpaused, stopped, or asked for one step; say which in `events`."""
    control.poll()
    if not control.paused or stop.is_set():
        return
    status.write(state="paused", message=f"paused after step {status.data['step']}")
    started = time.monotonic()
    while control.paused and not stop.is_set() and not control.stop:
        status.home.check()
        if control.take_step():
            events.append("one step while paused")
            return
        time.sleep(CONTROL_EVERY)
        control.poll()
    how = "stopped" if control.stop or stop.is_set() else "resumed"
    events.append(f"{how} after a {time.monotonic() - started:.0f} s pause")
    status.write(state="running", message="")


def _take(events: list[str]) -> str | None:
    """The events since the last step, as one text (None: nothing happened); then none."""
    text = "; ".join(events) or None
    events.clear()
    return text


def _launch_event(plan: dict[str, Any], built: Run) -> list[str]:
    """What the first step of this launch follows: a resume or more training (jobs says which)."""
    if plan.get("mode") != "resume" or not built.start_step:
        return []
    return [str(plan.get("event") or f"resumed from step {built.start_step}")]


def _failed(home: Home, message: str) -> int:
    """Record a run that could not start as failed (not running: it would read as interrupted)."""
    home.check()
    folder = home.folder
    failed = {"state": "failed", "message": message, "pid": os.getpid()}
    _last_status(
        folder, lambda: write_json(folder / "status.json", {**failed, "updated": time.time()})
    )
    return 1


def _reserve(folder: Path) -> None:
    """Set aside room for the last status (real bytes: a sparse file would free nothing)."""
    with contextlib.suppress(OSError), open(folder / RESERVE_FILE, "wb") as reserve:
        reserve.write(bytes(RESERVE_BYTES))


def _last_status(folder: Path, write: Callable[[], None]) -> None:
    """write() the status that says how the run ended; when the disk is too full for it, free
    the reserve and write it again."""
    try:
        write()
    except (OSError, CheckpointError):
        with contextlib.suppress(OSError):
            (folder / RESERVE_FILE).unlink(missing_ok=True)
        write()


def disk_full(exc: BaseException | None) -> bool:
    """True when `exc`, or an error that caused it, says the disk (or the quota) is full; a
    failed save arrives as a CheckpointError, safetensors' own as text ("os error 28")."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in _FULL:
            return True
        if "No space left on device" in str(exc) or f"(os error {errno.ENOSPC})" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def why_failed(exc: BaseException, saved: bool) -> str:
    """The status's message for a run that raised `exc`: a full disk in words, with what to do
    (`saved`: there is a save to resume from), else the error itself."""
    if not disk_full(exc):
        return f"{type(exc).__name__}: {exc}"
    detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    then = "then resume" if saved else "then start the run again"
    return (
        f"the server's disk is full ({detail}): free some space on it (delete runs no one needs, "
        f"say), {then}"
    )


def run(folder: Path) -> int:
    """Train the run in `folder` to its end; status.json says how it ended (GONE, with nothing
    written, when the folder is deleted under it)."""
    home = Home(folder)
    sae = jobs.read_json(folder / "plan.json", {}).get("kind") == "sae"  # runs/sae/<name>/
    try:
        if sae:
            from serving import sae_worker  # another kind of job: its own worker, same command

            return sae_worker.run(folder, home)
        with jobs.locked(folder.parent):  # jobs.start holds it until our pid and settings are in
            pass
        home.check()
        _reserve(folder)
        try:
            return _train(home)
        finally:
            with contextlib.suppress(OSError):
                (folder / RESERVE_FILE).unlink(missing_ok=True)
    except FolderGone as gone:
        home.tidy(folder.parent.parent if sae else folder.parent)  # the root launch_run locks
        print(gone, file=sys.stderr)
        return GONE


def _train(home: Home) -> int:
    folder = home.folder
    plan = jobs.read_json(folder / "plan.json", {})
    try:
        settings = RunSettings.from_dict(jobs.read_json(folder / "settings.json"))
    except (TypeError, ValueError) as exc:
        return _failed(home, f"unreadable settings: {exc}")
    threads = int(plan.get("threads", 1))
    torch.set_num_threads(threads)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if plan.get("mode") == "resume" and "train" not in plan and (done := _complete(folder)):
        old = jobs.read_json(folder / "status.json", {})  # killed after its last save
        ended = {"state": "finished", "message": f"finished at step {done}", "step": done}
        write_json(folder / "status.json", {**old, **ended, "saved_step": done, "pid": os.getpid()})
        return 0
    try:
        built = _build(folder, plan, settings)
        built.cfg = dataclasses.replace(built.cfg, threads=threads)
        device = pick_device(settings.device)
        built.model.to(device)
        built.meta["device"] = str(device)
    except Exception as exc:  # a bad setting, file or device: say so in the status, not a traceback
        return _failed(home, why_failed(exc, False) if disk_full(exc) else str(exc))
    status = Status(home, built, threads)
    try:
        status.write(force=True)
        cap = float(plan.get("max_minutes", 0)) * 60
        return _drive(folder, built, cap, status, stop, _launch_event(plan, built))
    except FolderGone:
        raise
    except Exception as exc:
        message = why_failed(exc, bool(status.data.get("saved_step")))
        _last_status(folder, lambda: status.write(state="failed", message=message))
        raise


def _drive(
    folder: Path,
    built: Run,
    cap: float,
    status: Status,
    stop: threading.Event,
    events: list[str],
) -> int:
    """The loop, with the page's controls between steps; `cap` is the server's time cap (s);
    `events` what the next step's record should say happened before it."""
    control = Control(folder / "control.json")
    start_elapsed = status.data["elapsed"]
    capped = ""
    loop = built.steps(RunControls(stop=stop, peak_lr=control.lr, notes=lambda: _take(events)))
    if control.stop:  # Stop pressed while the run was being set up: one step, then the save
        stop.set()
    last = None
    with _history_file(folder, built.history) as history:
        for last in loop:
            history.write(json.dumps(last.to_dict()) + "\n")
            status.record(last, control.lr() or built.cfg.lr)
            status.write(force=last.val_loss is not None or last.sample is not None)
            control.poll()
            if cap > 0 and last.elapsed - start_elapsed >= cap and not stop.is_set():
                capped = f"stopped after {cap / 60:g} minutes, the longest run allowed here "
                capped += f"(VIZ_MAX_MINUTES={cap / 60:g})"
                stop.set()
            _wait_while_paused(control, stop, status, events)
            if control.stop:
                stop.set()
    if last is None:
        _last_status(folder, lambda: status.write(state="failed", message="the loop took no step"))
        return 1
    state = "stopped" if last.stopped else "finished"
    ended = {"state": state, "message": capped or last.stopped or f"finished at step {last.step}"}
    saved = _saved_step(folder, last.step)
    _last_status(folder, lambda: status.write(**ended, saved_step=saved))
    return 0


def _complete(folder: Path) -> int | None:
    """The step of a bundle that has trained all its steps (or minutes), else None."""
    config = jobs.read_json(folder / "config.json", {})
    meta, cfg = config.get("meta") or {}, config.get("train") or {}
    step, limit = int(meta.get("step", 0)), float(cfg.get("time_limit", 0))
    by_time = limit > 0 and float(meta.get("wall_time", 0)) >= limit
    return step if step and (step >= cfg.get("max_steps", math.inf) or by_time) else None


def _saved_step(folder: Path, default: int) -> int:
    """The step of the bundle on disk (after a NaN, the last good step rather than the last)."""
    config = jobs.read_json(folder / "config.json", {})
    return int((config.get("meta") or {}).get("step", default))


if __name__ == "__main__":
    sys.exit(run(Path(sys.argv[1])))
