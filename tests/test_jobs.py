"""Training jobs: child processes driven and read through files in their run folder.

Each test uses its own runs root (VIZ_RUNS_DIR in tmp_path) and tiny runs on one thread.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from serving import jobs, models
from serving.jobs import JobError
from viz_model.analysis.training import curves
from viz_model.bundles.load import load_bundle
from viz_model.text.data import load_corpus
from viz_model.training.settings import RunSettings, pick_device

TIMEOUT = 120  # seconds any one wait may take on a busy 2-core machine


def tiny(**train) -> RunSettings:
    base = dict(max_steps=40, eval_every=10, eval_batches=2, sample_every=20, sample_tokens=8)
    return RunSettings(
        task="repeat",
        task_examples=300,
        preset="tiny",
        model={"n_ctx": 32, "d_model": 32},
        train={**base, **train},
    )


LONG = dict(max_steps=1_000_000, sample_tokens=0)  # ended by stop, not by its steps


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A runs root of its own; every worker still alive at the end is killed."""
    runs = tmp_path / "runs"
    monkeypatch.setenv(jobs.RUNS_ENV, str(runs))
    monkeypatch.setenv("VIZ_JOB_THREADS", "1")
    monkeypatch.setenv("VIZ_MAX_JOBS", "3")
    monkeypatch.delenv(jobs.PASSWORD_ENV, raising=False)
    yield runs
    for view in jobs.list_runs(runs):
        if view.live and jobs.worker_alive(view.pid, view.path, view.pid_started):
            os.kill(view.pid, signal.SIGKILL)


def wait_for(name: str, test, what: str) -> jobs.RunView:
    """Read the run until test(view) holds (or fail after TIMEOUT, saying what was awaited)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        view = jobs.read(name)
        if test(view):
            return view
        assert view.state != "failed", view.message
        assert time.monotonic() < deadline, f"waited for {what}; the run is {view}"
        time.sleep(0.05)


def test_a_job_runs_pauses_steps_changes_lr_resumes_stops_and_trains_more(root, monkeypatch):
    settings = tiny(**LONG, lr=2e-3, min_lr=2e-3, warmup_steps=0, eval_every=5)
    view = jobs.start("life", settings, auth=jobs.Auth())
    assert view.state == "running" and view.pid and view.threads == 1
    expected = pick_device("auto").type  # the settings say "auto": cuda or mps when present
    assert wait_for("life", lambda v: bool(v.device), "the worker's device").device == expected
    assert json.loads((root / "life" / "settings.json").read_text()) == settings.to_dict()
    jobs.pause("life", auth=jobs.Auth())  # before its first step: it pauses after step 1
    paused = wait_for("life", lambda v: v.state == "paused", "the pause")
    at = paused.step
    assert [r["step"] for r in paused.history] == list(range(1, at + 1))
    assert paused.tokens_per_s > 0 and paused.params == jobs.read("life").params > 0
    assert paused.progress == pytest.approx(at / 1_000_000)

    jobs.step("life", auth=jobs.Auth())
    jobs.step("life", auth=jobs.Auth())
    # history.jsonl gets each step before status.json does: wait for both to say it
    stepped = wait_for(
        "life", lambda v: len(v.history) == at + 2 and v.step == at + 2, "two single steps"
    )
    assert [r["step"] for r in stepped.history[-2:]] == [at + 1, at + 2]
    assert all(math.isfinite(r["train_loss"]) for r in stepped.history[-2:])
    assert stepped.state == "paused" and stepped.step == at + 2

    jobs.set_lr("life", 5e-4, auth=jobs.Auth())
    jobs.step("life", auth=jobs.Auth())
    # The history line is written before the status file (and its peak_lr): wait for both.
    changed = wait_for(
        "life", lambda v: len(v.history) == at + 3 and v.peak_lr == 5e-4, "a step at the new rate"
    )
    assert [r["lr"] for r in changed.history] == [2e-3] * (at + 2) + [5e-4]
    assert changed.peak_lr == 5e-4
    # every change is recorded where it happened, for the loss curve to mark
    events = {r["step"]: r["event"] for r in changed.history if "event" in r}
    assert events[at + 1] == "one step while paused" and events[at + 2] == "one step while paused"
    assert events[at + 3] == "one step while paused; peak lr 0.002 → 0.0005"
    assert set(events) == {at + 1, at + 2, at + 3}

    monkeypatch.setenv("VIZ_MAX_JOBS", "1")  # a paused job still holds its place
    with pytest.raises(JobError, match=r"at most 1 training job.*VIZ_MAX_JOBS=1.*life"):
        jobs.start("second", tiny(), auth=jobs.Auth())
    assert not (root / "second").exists()
    with pytest.raises(JobError, match="'life' is paused; this works only when it is finished"):
        jobs.train_more("life", steps=5, auth=jobs.Auth())

    jobs.resume("life", auth=jobs.Auth())
    resumed = wait_for("life", lambda v: v.state == "running" and v.step > at + 12, "more steps")
    assert resumed.history[at + 3]["event"].startswith("resumed after a ")  # step at + 4
    jobs.stop("life", auth=jobs.Auth())
    stopped = wait_for("life", lambda v: v.state == "stopped", "the stop")
    assert stopped.message.startswith("stopped on request after step")
    bundle = load_bundle(root / "life")
    assert bundle.meta["step"] == stopped.step == stopped.saved_step
    assert [r["step"] for r in bundle.history] == list(range(1, stopped.step + 1))
    assert bundle.history == stopped.history
    assert bundle.train_config["lr"] == 5e-4 and bundle.train_config["threads"] == 1
    assert bundle.meta["command"].startswith("python -m viz_model.training --task repeat")
    assert models.discover(root.parent)["life"] == (root / "life").resolve()

    jobs.train_more("life", steps=5, auth=jobs.Auth())
    more = wait_for("life", lambda v: v.state == "finished", "five more steps")
    assert more.step == stopped.step + 5 == load_bundle(root / "life").meta["step"]
    assert [r["step"] for r in more.history] == list(range(1, more.step + 1))
    assert more.history[stopped.step]["event"] == "train more: 5 steps"
    marked = [at for at, _ in curves(load_bundle(root / "life").history).events]
    assert marked == [at + 1, at + 2, at + 3, at + 4, stopped.step + 1]


def test_a_killed_job_reads_as_interrupted_and_resumes_from_its_last_save(root):
    jobs.start("crash", tiny(**LONG, eval_every=10), auth=jobs.Auth())
    running = wait_for("crash", lambda v: (v.saved_step or 0) >= 20, "two saves")
    os.kill(running.pid, signal.SIGKILL)  # mid-run, maybe mid-step
    lost = wait_for("crash", lambda v: v.state != "running", "the kill to be noticed")
    assert lost.state == "interrupted" and "resume continues from step" in lost.message
    saved = load_bundle(root / "crash")  # what was saved is intact
    assert saved.meta["step"] >= 20 and lost.step >= saved.meta["step"]

    jobs.resume("crash", auth=jobs.Auth())
    wait_for("crash", lambda v: v.state == "running" and v.step > saved.meta["step"] + 5, "more")
    jobs.stop("crash", auth=jobs.Auth())
    done = wait_for("crash", lambda v: v.state == "stopped", "the stop")
    steps = [r["step"] for r in done.history]
    assert steps == list(range(1, done.step + 1))  # continued at saved + 1, nothing twice
    assert done.history[: saved.meta["step"]] == saved.history
    assert load_bundle(root / "crash").meta["step"] == done.step


def test_a_disk_that_fills_during_a_save_fails_the_run_keeps_its_last_save_and_resumes(root):
    jobs.start("full", tiny(**LONG, eval_every=10), auth=jobs.Auth())
    running = wait_for("full", lambda v: (v.saved_step or 0) >= 10, "a first save")
    weights = root / "full" / "model.safetensors"
    # From now on the worker may write no file over half the weights' size: its next save fails
    # (EFBIG, the way ENOSPC would; root ignores a read-only folder), while status.json and
    # history.jsonl, far smaller, still write. The limit dies with the process.
    limit = weights.stat().st_size // 2
    resource.prlimit(running.pid, resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    failed = wait_for("full", lambda v: v.state == "failed", "the failed save")
    assert "could not write" in failed.message and "File too large" in failed.message
    assert f"resume continues from step {failed.saved_step}" in failed.message
    saved = load_bundle(root / "full")  # the last save is whole, and nothing half-written is left
    assert saved.meta["step"] == failed.saved_step >= 10
    assert not [p.name for p in (root / "full").rglob("*.tmp")]

    jobs.resume("full", auth=jobs.Auth())  # once there is room again
    wait_for("full", lambda v: v.state == "running" and v.step > saved.meta["step"] + 5, "more")
    jobs.stop("full", auth=jobs.Auth())
    done = wait_for("full", lambda v: v.state == "stopped", "the stop")
    assert [r["step"] for r in done.history] == list(range(1, done.step + 1))
    assert load_bundle(root / "full").meta["step"] == done.step


def test_a_run_that_failed_before_any_save_cannot_be_resumed(root):
    path = finished_run(root, "nosave")
    (path / "status.json").write_text(json.dumps({"state": "failed", "message": "bad text"}))
    with pytest.raises(JobError, match="failed before its first save"):
        jobs.resume("nosave", auth=jobs.Auth())


def test_a_job_killed_before_its_first_save_starts_again(root):
    jobs.start("early", tiny(**LONG, eval_every=0), auth=jobs.Auth())
    running = wait_for("early", lambda v: v.step > 0, "the first step")
    os.kill(running.pid, signal.SIGKILL)
    lost = wait_for("early", lambda v: v.state != "running", "the kill to be noticed")
    assert lost.state == "interrupted" and "before its first save" in lost.message
    jobs.resume("early", auth=jobs.Auth())
    wait_for("early", lambda v: v.state == "running" and v.step > 0, "a new first step")
    jobs.stop("early", auth=jobs.Auth())
    done = wait_for("early", lambda v: v.state == "stopped", "the stop")
    assert [r["step"] for r in done.history] == list(range(1, done.step + 1))


def test_a_job_killed_after_its_last_save_resumes_as_finished(root):
    jobs.start("whole", tiny(max_steps=12, eval_every=0), auth=jobs.Auth())
    done = wait_for("whole", lambda v: v.state == "finished", "the run")
    status = json.loads((root / "whole" / "status.json").read_text())
    status.update(state="running", pid=done.pid)  # as if killed before its last status write
    (root / "whole" / "status.json").write_text(json.dumps(status))
    wait_for("whole", lambda v: v.state == "interrupted", "the dead pid to be noticed")
    jobs.resume("whole", auth=jobs.Auth())
    again = wait_for("whole", lambda v: v.state == "finished", "the resume")
    assert again.step == 12 == load_bundle(root / "whole").meta["step"]
    assert [r["step"] for r in again.history] == list(range(0, 13))  # 0: the untrained sample


def test_a_job_that_fails_says_why_and_keeps_its_traceback_in_the_log(root):
    # 3,000 characters leave 300 for validation: too few for a context of 1024, which the
    # first evaluation finds (the training split is long enough for the steps before it)
    settings = RunSettings(text_file="short.txt", preset="tiny", model={"n_ctx": 1024})
    settings = dataclasses.replace(settings, train={"max_steps": 50, "eval_every": 2})
    jobs.start("short", settings, text=load_corpus("shakespeare")[:3000], auth=jobs.Auth())
    deadline = time.monotonic() + TIMEOUT
    while (view := jobs.read("short")).live:
        assert time.monotonic() < deadline, view
        time.sleep(0.05)
    assert view.state == "failed"
    assert view.message.startswith("DataError: The validation split has 300 tokens")
    # the status says failed just before the worker raises; its traceback follows in the log
    while "Traceback" not in (log := (root / "short" / "job.log").read_text()):
        assert time.monotonic() < deadline, log
        time.sleep(0.05)


def test_same_settings_and_seed_on_one_thread_give_identical_weights(root):
    for name, seed in (("a", 7), ("b", 7), ("c", 8)):
        jobs.start(name, tiny(seed=seed, max_steps=30), auth=jobs.Auth())
    for name in "abc":
        wait_for(name, lambda v: v.state == "finished", f"run {name}")

    def weights(name: str, file: str = "model.safetensors"):
        return load_file(root / name / file)

    def same(x, y) -> bool:
        return all(x[k].equal(y[k]) for k in x)

    assert same(weights("a"), weights("b")) and not same(weights("a"), weights("c"))
    snaps = sorted(p.name for p in (root / "a" / "snapshots").iterdir())
    assert len(snaps) > 3
    assert all(same(weights("a", f"snapshots/{s}"), weights("b", f"snapshots/{s}")) for s in snaps)


def test_caps_refuse_with_their_name_and_value(root, monkeypatch):
    monkeypatch.setenv("VIZ_MAX_PARAMS", "1000")
    with pytest.raises(JobError, match=r"has 28,288 parameters.*VIZ_MAX_PARAMS=1000"):
        jobs.start("big", tiny(), auth=jobs.Auth())
    monkeypatch.setenv("VIZ_MAX_PARAMS", "28288")  # the cap itself is allowed
    monkeypatch.setenv("VIZ_MAX_MINUTES", "1.5")
    with pytest.raises(JobError, match=r"at most 1.5 minutes.*VIZ_MAX_MINUTES=1.5.*asked for 2"):
        jobs.start("long", dataclasses.replace(tiny(), minutes=2), auth=jobs.Auth())
    monkeypatch.setenv("VIZ_MAX_JOBS", "several")
    with pytest.raises(JobError, match="VIZ_MAX_JOBS must be a whole number, got 'several'"):
        jobs.start("any", tiny(), auth=jobs.Auth())
    monkeypatch.setenv("VIZ_MAX_JOBS", "0")
    with pytest.raises(JobError, match=r"at most 0 training job.*VIZ_MAX_JOBS=0"):
        jobs.start("any", tiny(), auth=jobs.Auth())
    assert not root.exists() or jobs.list_runs(root) == []


def test_the_minutes_cap_stops_a_run_that_goes_on_and_saves_it(root, monkeypatch):
    monkeypatch.setenv("VIZ_MAX_MINUTES", "0.01")  # 0.6 s of training
    jobs.start("capped", tiny(**LONG), auth=jobs.Auth())
    done = wait_for("capped", lambda v: not v.live, "the cap")
    assert done.state == "stopped" and "(VIZ_MAX_MINUTES=0.01)" in done.message
    assert done.elapsed >= 0.6 and done.step < LONG["max_steps"]
    assert load_bundle(root / "capped").meta["step"] == done.step


def test_threads_default_to_half_the_cores_shared_by_the_jobs(monkeypatch):
    monkeypatch.delenv("VIZ_JOB_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(2)))
    monkeypatch.setenv("VIZ_MAX_JOBS", "2")
    assert jobs.Limits.from_env().threads == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)))
    assert jobs.Limits.from_env().threads == 4
    monkeypatch.setenv("VIZ_JOB_THREADS", "3")
    assert jobs.Limits.from_env().threads == 3


def finished_run(root: Path, name: str) -> Path:
    """A run folder as a finished job leaves it, without running one."""
    path = root / name
    path.mkdir(parents=True)
    (path / "settings.json").write_text(json.dumps(tiny().to_dict()))
    (path / "status.json").write_text(json.dumps({"state": "finished", "step": 40}))
    return path


def test_a_running_status_whose_pid_is_not_our_worker_reads_as_interrupted(root):
    path = finished_run(root, "reboot")
    status = {"state": "running", "step": 40, "saved_step": 30}
    for pid in (os.getpid(), 1):  # alive, but pytest and init are no run's worker
        (path / "status.json").write_text(json.dumps({**status, "pid": pid}))
        view = jobs.read("reboot")
        assert view.state == "interrupted" and "continues from step 30" in view.message
    assert not jobs.worker_alive(None, path)


@contextlib.contextmanager
def look_alike_worker(path: Path, as_module: bool = False):
    """(process, its start time): a sleeping process whose command line names `path`'s worker,
    killed afterwards. `as_module`: its command line reads `... -m serving.job_worker PATH`, as a
    real worker's does (jobs.workers finds it among the machine's processes)."""
    module = ["-m", jobs.WORKER] if as_module else [jobs.WORKER]
    argv = [sys.executable, "-c", "import time; time.sleep(300)", *module, str(path)]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
    try:
        started = jobs.process_started(proc.pid)
        assert started is not None
        yield proc, started
    finally:
        proc.kill()
        proc.wait()


def test_a_worker_read_before_its_command_line_is_filled_in_is_alive(root, monkeypatch):
    """Popen returns while the kernel is still exec'ing the worker, and its command line reads
    empty for a moment (a third of the reads right after a Popen on this machine): with the
    status's start time it is the worker, running; with another start time it is not."""
    import psutil

    path = finished_run(root, "fresh")
    with look_alike_worker(path) as (proc, started):
        monkeypatch.setattr(psutil.Process, "cmdline", lambda self: [])
        assert jobs.worker_alive(proc.pid, path, started)
        assert not jobs.worker_alive(proc.pid, path, started - 3600.0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's boot time in whole s")
def test_a_boot_time_that_steps_by_seconds_does_not_end_a_live_worker(root, monkeypatch):
    """Linux gives a start time as boot time + ticks since boot, and the boot time (whole seconds
    in /proc/stat) steps by one when the clock is corrected: a live worker read before and after
    two such steps is still the same live worker, not an interrupted run."""
    import psutil._pslinux as pslinux

    path = finished_run(root, "stepped")
    with look_alike_worker(path) as (proc, started):
        booted = pslinux.boot_time()
        monkeypatch.setattr(pslinux, "boot_time", lambda: booted + 2.0)
        assert jobs.process_started(proc.pid) - started > 2.0 - 1e-6  # the steps are seen
        assert jobs.worker_alive(proc.pid, path, started)
        monkeypatch.setattr(pslinux, "boot_time", lambda: booted - 2.0)
        assert jobs.worker_alive(proc.pid, path, started)


def test_a_pid_reused_by_a_process_that_looks_like_the_worker_frees_the_run_and_its_slot(
    root, monkeypatch
):
    """After a reboot a status's pid may name another process, even one whose command line names
    this run's worker (or one whose command line cannot be read, as on macOS): the start time
    recorded in the status tells them apart, so the run is interrupted, deletable, and holds no
    job slot."""
    monkeypatch.setenv("VIZ_MAX_JOBS", "1")
    path = finished_run(root, "reboot")
    with look_alike_worker(path) as (other, started):
        status = {"state": "running", "step": 40, "saved_step": 30, "pid": other.pid}

        def read_with(recorded: float | None) -> jobs.RunView:
            (path / "status.json").write_text(json.dumps({**status, "pid_started": recorded}))
            return jobs.read("reboot")

        assert read_with(started).state == "running"  # its own start time: taken for the worker
        assert any("running now: reboot" in p for p in jobs.cap_problems(1000, None))
        with pytest.raises(JobError, match="stop it before deleting"):
            jobs.delete("reboot", auth=jobs.Auth())
        for recorded in (started - 3600.0, None):  # another process's start time, or none
            view = read_with(recorded)
            assert view.state == "interrupted" and "continues from step 30" in view.message
            assert jobs.cap_problems(1000, None) == []
        jobs.delete("reboot", auth=jobs.Auth())
        assert not path.exists()
        assert other.poll() is None  # the other process was left alone


def suspend_process(pid: int) -> None:
    """SIGSTOP, then wait until the kernel says the process is stopped (psutil's state 'T')."""
    import psutil

    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + TIMEOUT
    while psutil.Process(pid).status() != psutil.STATUS_STOPPED:
        assert time.monotonic() < deadline, "the process never stopped"
        time.sleep(0.01)


def process_ended(pid: int) -> bool:
    """Wait (up to TIMEOUT) for process `pid` to end; True when it did."""
    import psutil

    with contextlib.suppress(psutil.NoSuchProcess):
        proc = psutil.Process(pid)
        with contextlib.suppress(psutil.TimeoutExpired):
            proc.wait(TIMEOUT)
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    return True


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="SIGSTOP is POSIX")
def test_a_suspended_worker_reads_suspended_holds_its_slot_and_stop_ends_it_with_a_save(
    root, monkeypatch
):
    """A worker stopped by SIGSTOP (Ctrl-Z, a debugger) trains nothing and reads no control
    file: the run says so rather than "running" for ever, still holds its slot, and Stop wakes
    it (SIGTERM, SIGCONT) to the usual stop after a step, with a save (issue 39, item 6)."""
    jobs.start("frozen", tiny(**LONG), auth=jobs.Auth())
    running = wait_for("frozen", lambda v: v.step >= 2, "two steps")
    try:
        suspend_process(running.pid)
        view = jobs.read("frozen")
        assert view.state == "suspended" and view.live
        assert f"pid {running.pid}" in view.message and "suspended by a signal" in view.message
        assert "Stop wakes it" in view.message
        monkeypatch.setenv("VIZ_MAX_JOBS", "1")
        with pytest.raises(JobError, match=r"at most 1 training job.*running now: frozen"):
            jobs.start("second", tiny(), auth=jobs.Auth())
        with pytest.raises(JobError, match="'frozen' is suspended; stop it before deleting"):
            jobs.delete("frozen", auth=jobs.Auth())
        with pytest.raises(JobError, match="'frozen' is suspended; this works only when"):
            jobs.pause("frozen", auth=jobs.Auth())
        jobs.stop("frozen", auth=jobs.Auth())
        done = wait_for("frozen", lambda v: not v.live, "the stop of a suspended worker")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(running.pid, signal.SIGCONT)
    assert done.state == "stopped" and done.saved_step == done.step >= running.step
    assert load_bundle(root / "frozen").meta["step"] == done.step
    assert jobs.cap_problems(1000, None) == []


def test_a_worker_whose_folder_is_deleted_ends_itself_and_makes_nothing_again(root):
    """rm -rf of a running run's folder, outside the app: the worker finds its folder gone at its
    next step and ends, writing nothing (a status write made the folder again, out of sight, and
    the orphan trained on: issue 39, item 6)."""
    jobs.start("doomed", tiny(**LONG), auth=jobs.Auth())
    running = wait_for("doomed", lambda v: v.step >= 2, "two steps")
    try:
        deadline = time.monotonic() + TIMEOUT
        while (root / "doomed").exists():  # as rm -rf, again when a file appears meanwhile
            shutil.rmtree(root / "doomed", ignore_errors=True)
            assert time.monotonic() < deadline, "the folder could not be deleted"
        assert process_ended(running.pid), "the worker trained on after its folder was deleted"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(running.pid, signal.SIGKILL)
    assert not (root / "doomed").exists()
    assert jobs.list_runs() == [] and jobs.orphans() == [] and jobs.cap_problems(1000, None) == []


def test_a_worker_whose_folder_is_gone_holds_a_slot_until_stopped_even_when_suspended(
    root, monkeypatch
):
    """A worker process the folders no longer show (deleted under a suspended worker, which
    cannot notice) is counted toward VIZ_MAX_JOBS by its process, named in the refusal, listed by
    jobs.orphans for the Training page, and ended by stop_orphan, which wakes it to do so."""
    monkeypatch.setenv("VIZ_MAX_JOBS", "1")
    with look_alike_worker(root / "gone", as_module=True) as (proc, _):
        assert any(
            f"a worker whose run folder is gone: gone (pid {proc.pid})" in problem
            for problem in jobs.cap_problems(1000, None)
        )
        with pytest.raises(JobError, match=rf"at most 1 training job.*gone \(pid {proc.pid}\)"):
            jobs.start("next", tiny(), auth=jobs.Auth())
        assert not (root / "next").exists()
        if hasattr(signal, "SIGSTOP"):
            suspend_process(proc.pid)
        [orphan] = jobs.orphans()
        assert (orphan.pid, orphan.folder.name) == (proc.pid, "gone")
        assert orphan.suspended == hasattr(signal, "SIGSTOP")
        monkeypatch.setenv(jobs.PASSWORD_ENV, "sesame")
        with pytest.raises(JobError, match="needs the teacher password"):
            jobs.stop_orphan(proc.pid, auth=jobs.Auth.resolve(None))
        with pytest.raises(JobError, match="no worker without a run has pid 1 "):
            jobs.stop_orphan(1, auth=jobs.Auth.resolve("sesame"))
        jobs.stop_orphan(proc.pid, auth=jobs.Auth.resolve("sesame"))
        proc.wait(TIMEOUT)  # woken and terminated, not left stopped
    assert jobs.orphans() == [] and jobs.cap_problems(1000, None) == []


def test_a_run_folder_is_not_deleted_while_a_worker_process_runs_in_it(root):
    """A worker its status does not name (a status written over, a second launch) still works in
    the folder: delete refuses until it ends, instead of leaving it training out of sight."""
    path = finished_run(root, "busy")
    with look_alike_worker(path, as_module=True) as (proc, _):
        assert jobs.read("busy").state == "finished"
        with pytest.raises(JobError, match=rf"'busy' still has a worker process \(pid {proc.pid}"):
            jobs.delete("busy", auth=jobs.Auth())
        assert path.is_dir()
    jobs.delete("busy", auth=jobs.Auth())
    assert not path.exists()


def test_deleting_a_run_just_ended_waits_for_its_worker_to_exit(root):
    """The worker writes its last status ("finished") and then exits: a delete in between waits
    for it rather than refusing (a script that deletes what it just trained)."""
    path = finished_run(root, "ending")
    with look_alike_worker(path, as_module=True) as (proc, started):
        status = {"state": "finished", "step": 40, "pid": proc.pid, "pid_started": started}
        (path / "status.json").write_text(json.dumps(status))
        threading.Timer(0.5, proc.kill).start()  # it exits a moment later
        jobs.delete("ending", auth=jobs.Auth())
        assert proc.poll() is not None and not path.exists()


def test_the_teacher_password_guards_every_change_but_not_reading(root, monkeypatch):
    finished_run(root, "done")
    monkeypatch.setenv(jobs.PASSWORD_ENV, "sesame")
    assert jobs.Auth.resolve(None).required
    for call in (
        lambda a: jobs.start("new", tiny(), auth=a),
        lambda a: jobs.stop("done", auth=a),
        lambda a: jobs.pause("done", auth=a),
        lambda a: jobs.step("done", auth=a),
        lambda a: jobs.set_lr("done", 1e-3, auth=a),
        lambda a: jobs.resume("done", auth=a),
        lambda a: jobs.train_more("done", steps=3, auth=a),
        lambda a: jobs.delete("done", auth=a),
    ):
        with pytest.raises(JobError, match="needs the teacher password"):
            call(jobs.Auth.resolve(None))
        with pytest.raises(JobError, match="wrong teacher password"):
            call(jobs.Auth.resolve("open sesame"))
        with pytest.raises(JobError, match="needs an Auth"):
            call("sesame")  # a bare string is not a check
    assert jobs.read("done").state == "finished"  # reading needs nothing
    assert [v.name for v in jobs.list_runs()] == ["done"]
    jobs.delete("done", auth=jobs.Auth.resolve("sesame"))
    assert not (root / "done").exists()


def test_a_password_only_in_the_secrets_guards_every_change_and_the_variable_wins(
    root, monkeypatch
):
    finished_run(root, "done")
    monkeypatch.delenv(jobs.PASSWORD_ENV, raising=False)
    assert jobs.server_password(None) == "" and jobs.server_password("") == ""
    assert jobs.server_password("from-secrets") == "from-secrets"
    for given in (None, "guess"):
        with pytest.raises(JobError, match="password"):
            jobs.delete("done", auth=jobs.Auth.resolve(given, "from-secrets"))
        with pytest.raises(JobError, match="password"):
            jobs.train_more("done", steps=3, auth=jobs.Auth.resolve(given, "from-secrets"))
    assert jobs.PASSWORD_ENV not in os.environ  # resolving writes nothing
    monkeypatch.setenv(jobs.PASSWORD_ENV, "from-env")
    assert jobs.server_password("from-secrets") == "from-env"
    with pytest.raises(JobError, match="wrong"):
        jobs.delete("done", auth=jobs.Auth.resolve("from-secrets", "from-secrets"))
    assert "from-env" not in repr(jobs.Auth.resolve("from-env"))  # never printed
    jobs.delete("done", auth=jobs.Auth.resolve("from-env", "from-secrets"))


def test_every_change_to_a_run_requires_an_auth_argument():
    import inspect

    from serving import retrain

    for fn in (
        jobs.start,
        jobs.pause,
        jobs.stop,
        jobs.step,
        jobs.set_lr,
        jobs.resume,
        jobs.train_more,
        jobs.delete,
        retrain.start_damaged,
    ):
        param = inspect.signature(fn).parameters["auth"]
        assert param.default is inspect.Parameter.empty, fn.__name__
        assert param.kind is inspect.Parameter.KEYWORD_ONLY, fn.__name__


@pytest.mark.parametrize("name", ["../x", "/etc", "a/b", "", ".", "..", ".hidden", "x" * 65, "é"])
def test_run_names_cannot_leave_the_runs_folder(root, name):
    with pytest.raises(JobError, match="a run name is 1 to 64 letters"):
        jobs.start(name, tiny(), auth=jobs.Auth())
    with pytest.raises(JobError, match="a run name is 1 to 64 letters"):
        jobs.read(name)
    assert not (root.parent / "x").exists() and not (root / "a").exists()


def test_a_taken_or_bundled_name_is_refused(root):
    finished_run(root, "mine")
    with pytest.raises(JobError, match="a run named 'mine' already exists"):
        jobs.start("mine", tiny(), auth=jobs.Auth())
    with pytest.raises(JobError, match="name of a bundled model"):
        jobs.start("shakespeare-char", tiny(), auth=jobs.Auth())


def test_two_starts_of_one_name_at_once_one_wins(root):
    barrier = threading.Barrier(2)
    outcomes: list[object] = []

    def start() -> None:
        barrier.wait()
        try:
            outcomes.append(jobs.start("race", tiny(max_steps=5), auth=jobs.Auth()))
        except JobError as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=start) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    errors = [o for o in outcomes if isinstance(o, JobError)]
    assert len(errors) == 1 and "a run named 'race' already exists" in str(errors[0])
    winner = next(o for o in outcomes if isinstance(o, jobs.RunView))
    done = wait_for("race", lambda v: v.state == "finished", "the winner")
    assert done.pid == winner.pid and done.step == 5


def test_two_sessions_pressing_train_more_at_once_start_one_worker(root):
    jobs.start("twice", tiny(max_steps=12, eval_every=0), auth=jobs.Auth())
    wait_for("twice", lambda v: v.state == "finished", "the run")
    barrier = threading.Barrier(2)
    outcomes: list[object] = []

    def more() -> None:
        barrier.wait()
        try:
            outcomes.append(jobs.train_more("twice", steps=5, auth=jobs.Auth()))
        except JobError as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=more) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    errors = [str(o) for o in outcomes if isinstance(o, JobError)]
    assert len(errors) == 1 and "'twice' is running" in errors[0]
    done = wait_for("twice", lambda v: v.state == "finished" and v.step > 12, "five more")
    assert done.step == 17 == load_bundle(root / "twice").meta["step"]  # 5 more, not 10
    assert [r["step"] for r in done.history] == list(range(0, 18))  # one step 0, no other


def test_text_runs_keep_their_own_checked_copy_and_bad_text_is_refused(root):
    settings = RunSettings(text_file="notes.txt", preset="tiny", train={"max_steps": 3})
    with pytest.raises(JobError, match="UTF-16"):
        jobs.start("utf16", settings, text="To be, or not to be".encode("utf-16"), auth=jobs.Auth())
    with pytest.raises(JobError, match="give the text with a text-file run"):
        jobs.start(
            "server-file", RunSettings(text_file="/etc/passwd", preset="tiny"), auth=jobs.Auth()
        )
    text = load_corpus("shakespeare")[:3000]
    jobs.start("mine", settings, text=text.encode("utf-8"), root=root, auth=jobs.Auth())
    done = wait_for("mine", lambda v: v.state == "finished", "the text run")
    assert (root / "mine" / "text.txt").read_text(encoding="utf-8") == text
    assert done.settings["text_file"] == str((root / "mine" / "text.txt").resolve())
    assert not (root / "utf16").exists()


def test_cap_problems_names_every_cap_a_run_would_break(root, monkeypatch):
    monkeypatch.setenv("VIZ_MAX_PARAMS", "1000")
    monkeypatch.setenv("VIZ_MAX_MINUTES", "2")
    monkeypatch.setenv("VIZ_MAX_JOBS", "0")
    problems = jobs.cap_problems(5000, 3.0)
    assert len(problems) == 3
    for cap in ("VIZ_MAX_PARAMS=1000", "VIZ_MAX_MINUTES=2", "VIZ_MAX_JOBS=0"):
        assert any(cap in p for p in problems), cap
    monkeypatch.setenv("VIZ_MAX_JOBS", "2")
    assert jobs.cap_problems(999, 2.0) == []
    with pytest.raises(JobError, match="VIZ_MAX_PARAMS=1000"):  # start says the same words
        jobs.start("too-big", tiny(), auth=jobs.Auth())


def test_a_runs_folder_that_cannot_be_written_is_a_plain_refusal(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the runs folder should be")
    monkeypatch.setenv(jobs.RUNS_ENV, str(blocker))
    with pytest.raises(JobError, match="runs folder could not be written"):
        jobs.start("any", tiny(), auth=jobs.Auth())


def test_a_run_that_cannot_start_on_its_device_reads_as_failed_not_interrupted(root):
    settings = dataclasses.replace(tiny(), device="no-such-device")
    jobs.start("nodevice", settings, auth=jobs.Auth())
    view = wait_for("nodevice", lambda v: v.state != "running", "the worker's verdict")
    assert view.state == "failed" and "no-such-device" in view.message


@pytest.mark.parametrize(
    "device",
    [
        "cpu",
        pytest.param(
            "cuda",
            marks=pytest.mark.skipif(
                not torch.cuda.is_available(),
                reason="no CUDA GPU on this machine: the run would train on CPU",
            ),
        ),
    ],
)
def test_a_run_on_a_device_trains_there_samples_and_its_bundle_opens_on_the_cpu(root, device):
    settings = dataclasses.replace(tiny(), device=device)
    jobs.start("ondevice", settings, auth=jobs.Auth())
    view = wait_for("ondevice", lambda v: v.state == "finished", "the run's end")
    assert view.device == device and view.tokens_per_s > 0
    assert [s["step"] for s in view.samples] == [0, 20, 40]  # sampling works there, untrained too
    bundle = load_bundle(view.path)  # a GPU-trained bundle opens on the CPU, as a server opens it
    assert next(bundle.model.parameters()).device.type == "cpu"
    assert bundle.meta["step"] == 40 and math.isfinite(bundle.meta["val_loss"])
