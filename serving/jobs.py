"""Training jobs: a child process per run, and every fact about it in the run's folder.

    jobs.start("our-model", RunSettings(corpus="shakespeare", preset="quick", minutes=1))
    view = jobs.read("our-model")      # a RunView: .state, .step, .progress, .history, .samples

The API a page uses (every name a run name; every refusal is a JobError whose message can be
shown as it is). Every call that starts or changes a run takes `auth`, an `Auth` (the password the
server expects and the one the user gave), and checks it first; there is no default, so no caller
can forget it:

    start(name, settings, text=None, auth=...) -> RunView   a new run, in a child process
    read(name, history=True) -> RunView     list_runs() -> [RunView] (newest first, no history)
    pause(name, auth=)   step(name, auth=) (paused only: one step)   set_lr(name, lr, auth=)
    resume(name, auth=)  stop(name, auth=)  train_more(name, steps=N | minutes=M, auth=)
    delete(name, auth=)  Limits.from_env() -> the caps and a job's threads

The teacher password has one resolver, `server_password(secret)`: VIZ_TEACHER_PASSWORD, else the
`teacher_password` of Streamlit's secrets, which the UI reads once per server process and passes
in (ui/teacher.py; this module never imports Streamlit). `Auth(server_password(...), typed)`.

The controls return at once; the worker acts between two steps (within about 50 ms of a step
ending), so a page shows the effect on its next read. Poll read() (about once a second) rather
than waiting. Before Start, run_settings.estimate_params gives the model's size. read() parses
all of history.jsonl (about 100 bytes a step); a page serving a class can read(history=False)
and cache read_history(path) on the file's (mtime, size), so one parse serves every session.

A job is `python -m serving.job_worker RUN_DIR`, the project's own loop (train.train) on the
settings in RUN_DIR/settings.json. The page never waits on it: it only reads files, so closing a
browser changes nothing and any server process sees every run. The run folder (runs/<name>/, or
under VIZ_RUNS_DIR) is itself the model bundle (so the model picker finds it), plus:

    settings.json   RunSettings.to_dict(): what the run is                    (written once)
    plan.json       what the next launch of the worker does: new, or resume   (API, atomic)
    status.json     state, pid, step, progress, tokens/s, time left, samples  (worker, atomic)
    control.json    {"paused", "stop", "lr", "steps"}: the worker polls it    (API, atomic)
    history.jsonl   one step record per line, appended; a torn last line is skipped on reading
    text.txt        the pasted or uploaded text, when the run trains on one
    estimate.json   the speed promised before Start: {"steps_per_s": [low, high], ...} (once)
    job.log         the worker's stderr (tracebacks)

States: running, paused, suspended (a running or paused worker whose process is stopped by a
signal, SIGSTOP or Ctrl-Z: it trains no step but holds its slot; Stop sends it SIGTERM and SIGCONT),
finished, stopped (by Stop, the minutes cap, SIGTERM or SIGINT, or a NaN: the message says which),
failed (the message says why), and interrupted: a status that says running or paused whose pid is
gone, or is not this run's worker (after a reboot, say). Resume
continues an interrupted run from its last save (the bundle is rewritten at every evaluation),
and a failed one that has a save (a full disk, say: a failed save leaves the last one whole).
Jobs share the server's process group, so a Ctrl-C on `streamlit run` stops them with a save.

Caps (VIZ_MAX_JOBS, VIZ_MAX_PARAMS, VIZ_MAX_MINUTES) are checked, and run folders created, under
a lock on RUNS/.jobs.lock (filelock: flock on Linux and macOS, msvcrt on Windows), so they hold
across server processes. A worker is alive when its pid exists, the process started when status.json
says (`pid_started`, psutil's create_time) and, where it can be read, its command line is this
run's worker (psutil on every platform), so a pid reused after a reboot never holds a job slot.
A slot is held by every live run and by every worker process no run accounts for (`orphans`: its
folder deleted outside the app; found by command line, `workers`), which delete() also refuses
under; a worker whose folder is deleted or replaced ends itself at its next step (job_worker).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hmac
import json
import math
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import filelock
import psutil

from serving import guesses
from serving.models import discover
from serving.paths import REPO, RUNS_ENV, bundled_dir, runs_root  # noqa: F401 (the API)
from viz_model.bundles.files import CheckpointError, write_json, write_text
from viz_model.model.config import STEPS_WHEN_TIMED
from viz_model.text.data import load_text, validate_user_text
from viz_model.training.settings import RunSettings, estimate_params

WORKER = "serving.job_worker"
PASSWORD_ENV = "VIZ_TEACHER_PASSWORD"
DEFAULT_MAX_JOBS = 2
DEFAULT_MAX_PARAMS = 10_000_000
DEFAULT_MAX_MINUTES = 30.0
# A worker's status says running or paused; read() says "suspended" when that worker's process is
# stopped by a signal (SIGSTOP, Ctrl-Z, a debugger): it trains no step but is alive and holds a slot.
LIVE = ("running", "paused", "suspended")
STATES = (*LIVE, "finished", "stopped", "failed", "interrupted")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
LOCK_FILE = ".jobs.lock"
# Jobs of another kind live in their own folder under the runs root (runs/sae/<name>/: a sparse
# autoencoder, serving/sae_jobs.py), started by launch_run(kind=...) as the same worker command,
# under the same lock and caps: each live one holds a job slot like a training run.
KINDS = ("sae",)
HISTORY_FILE = "history.jsonl"  # one step record a line, appended by the worker
ESTIMATE_FILE = "estimate.json"  # the speed the page promised before Start
# How far two readings of one process's start time may differ. Linux derives it from the boot
# time in whole seconds (/proc/stat btime), which steps by one when the clock is corrected, so two
# readings of one process can differ by 1.0 s plus float rounding. A pid reused within seconds of
# the start of the process it replaces is not a case to plan for.
START_SLACK = 3.0  # seconds
ENDING_S = 10.0  # how long delete waits for a worker past its last status to exit


class JobError(Exception):
    """A job could not be started, changed or read; the message says why, in plain words."""


# ---- configuration ----------------------------------------------------------------------------


def _env_number(name: str, default: float, kind: type = int) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        whole = "whole " if kind is int else ""
        raise JobError(f"{name} must be a {whole}number, got {raw!r}") from None
    if value < 0:
        raise JobError(f"{name} must not be negative, got {raw!r}")
    return value


@dataclass(frozen=True)
class Limits:
    """The server's caps and a job's threads, from the environment (read at each call)."""

    max_jobs: int
    max_params: int
    max_minutes: float
    threads: int

    @classmethod
    def from_env(cls) -> Limits:
        max_jobs = int(_env_number("VIZ_MAX_JOBS", DEFAULT_MAX_JOBS))
        # Half the cores train, shared by the jobs allowed at once; the rest serve the students
        # (a job with torch's default threads beside 30 sessions ran at 4% of its speed alone).
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        threads = max(1, (cores or 1) // (2 * max(1, max_jobs)))
        return cls(
            max_jobs=max_jobs,
            max_params=int(_env_number("VIZ_MAX_PARAMS", DEFAULT_MAX_PARAMS)),
            max_minutes=float(_env_number("VIZ_MAX_MINUTES", DEFAULT_MAX_MINUTES, float)),
            threads=max(1, int(_env_number("VIZ_JOB_THREADS", threads))),
        )


def server_password(secret: object = None) -> str:
    """The teacher password this server expects, "" for none: VIZ_TEACHER_PASSWORD when it is set
    (it wins), else `secret` (the `teacher_password` of Streamlit's secrets, read by the UI)."""
    env = os.environ.get(PASSWORD_ENV, "")
    if env:
        return env
    return str(secret) if secret not in (None, "") else ""


@dataclass(frozen=True)
class Auth:
    """The teacher-password check every start or change of a run goes through: the password the
    server expects (`server_password`, "" for none) and the one the user gave (None: none)."""

    expected: str = field(default="", repr=False)
    given: str | None = field(default=None, repr=False)
    # the browser the password comes from (its address, ui/teacher.client_key): wrong passwords
    # are counted per browser and, past a few a minute, refused (serving/guesses.py); "" for a
    # caller that is not a browser (the command line, tests), which nothing limits
    client: str = field(default="", repr=False)

    @classmethod
    def resolve(cls, given: str | None, secret: object = None) -> Auth:
        """The check for `given` against server_password(secret): how every caller builds one."""
        return cls(server_password(secret), given)

    @property
    def required(self) -> bool:
        """True when the server has a teacher password (a page then asks for it)."""
        return bool(self.expected)

    def check(self) -> None:
        """Nothing when no password is set or the given one is it; JobError otherwise."""
        if not self.expected:
            return
        if not self.given:
            raise JobError(
                "starting, stopping, changing or deleting a run needs the teacher password"
            )
        wait = guesses.wait_s(self.client) if self.client else 0.0
        if wait > 0:
            raise JobError(
                f"too many wrong teacher passwords from this browser: try again in "
                f"{math.ceil(wait)} s"
            )
        if not hmac.compare_digest(self.given.encode("utf-8"), self.expected.encode("utf-8")):
            if self.client:
                guesses.failed(self.client)
            raise JobError("wrong teacher password")


def check(auth: Auth) -> None:
    """auth.check(), refusing anything that is not an Auth (a bare string would skip the check)."""
    if not isinstance(auth, Auth):
        raise JobError("a change to a run needs an Auth (jobs.Auth), not " + type(auth).__name__)
    auth.check()


def run_dir(name: str, root: Path | None = None) -> Path:
    """The folder of run `name`, after checking the name is a safe slug inside the runs root."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise JobError(
            f"a run name is 1 to 64 letters, digits, '-' or '_', starting with a letter or a "
            f"digit; {name!r} is not"
        )
    base = (root or runs_root()).resolve()
    path = (base / name).resolve()
    if path.parent != base:  # the slug rules this out; kept as a second wall
        raise JobError(f"{name!r} is not a folder inside {base}")
    return path


@contextlib.contextmanager
def locked(root: Path) -> Iterator[None]:
    """Hold the runs root's lock file (filelock: across processes, released if one dies).

    A full or read-only disk, or a write that fails inside (CheckpointError), becomes a JobError
    with the reason, so every caller that changes runs refuses in plain words."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        with filelock.FileLock(root / LOCK_FILE):
            yield
    except (OSError, CheckpointError) as exc:
        raise JobError(f"the runs folder could not be written ({exc})") from exc


# ---- reading ----------------------------------------------------------------------------------


@dataclass
class RunView:
    """What a page shows of a run: plain values read from its folder."""

    name: str
    path: Path
    state: str  # one of STATES
    message: str = ""  # why it stopped or failed, or what it is doing
    settings: dict[str, Any] = field(default_factory=dict)
    step: int = 0
    max_steps: int | None = None  # None when the clock alone ends the run
    time_limit: float = 0.0  # seconds (0: none)
    progress: float = 0.0  # 0..1, by steps or by time, whichever is further along
    tokens_per_s: float = 0.0
    elapsed: float = 0.0  # seconds of training, earlier launches included
    time_left: float | None = None  # seconds, estimated
    train_loss: float | None = None
    val_loss: float | None = None
    lr: float | None = None  # the last step's learning rate
    peak_lr: float | None = None  # the schedule's peak (what set_lr changes)
    params: int | None = None
    threads: int | None = None
    device: str = ""  # where the worker trains (cpu, cuda, mps); "" before it starts
    pid: int | None = None
    pid_started: float | None = None  # the worker's start time (psutil create_time, epoch s)
    saved_step: int | None = None  # the step of the bundle on disk (what resume starts from)
    samples: list[dict[str, Any]] = field(default_factory=list)  # [{"step", "text"}], oldest first
    history: list[dict[str, Any]] = field(default_factory=list)  # StepRecord dicts
    updated: float = 0.0  # time.time() of the last status write
    estimate: dict[str, Any] = field(default_factory=dict)  # estimate.json: the promised speed

    @property
    def live(self) -> bool:
        return self.state in LIVE

    @property
    def has_bundle(self) -> bool:
        return (self.path / "config.json").is_file()


def read_json(path: Path, default: Any = None) -> Any:
    """A JSON file of a run (`default` if missing); JobError if unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default
    except (OSError, ValueError) as exc:
        raise JobError(f"{path.parent.name}/{path.name} cannot be read: {exc}") from exc


def read_history(path: Path) -> list[dict[str, Any]]:
    """The step records of history.jsonl; an unfinished last line (a kill mid-write) is skipped."""
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        with contextlib.suppress(ValueError):
            out.append(json.loads(line))
    return out


def process_started(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch, psutil's create_time), None if gone."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def worker_process(
    pid: int | None, folder: Path, started: float | None = None, command: str = WORKER
) -> psutil.Process | None:
    """The process `pid` when it is running this run's worker (worker_alive), else None."""
    if not pid or started is None:
        return None
    try:
        proc = psutil.Process(pid)
        if abs(proc.create_time() - started) > START_SLACK:
            return None
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        try:
            argv = proc.cmdline()
        except psutil.AccessDenied:
            return proc  # another user's process that started when our worker did
    except psutil.Error:  # gone (or a zombie), or nothing about it may be read
        return None
    if not argv:  # mid-exec: Popen returns before the kernel has filled in the new command line
        return proc  # (read right after Start a third of the time); its start time is ours
    return proc if command in argv and str(folder) in argv else None


def worker_alive(
    pid: int | None, folder: Path, started: float | None = None, command: str = WORKER
) -> bool:
    """True when `pid` is running this run's worker: it exists, it started at `started` (the
    status's pid_started; a pid reused by another process started at another time) and, where its
    command line can be read and is filled in, it is `python -m serving.job_worker FOLDER` (not
    a zombie). `command`: another module run on the folder (serving/sheets.py's builds)."""
    return worker_process(pid, folder, started, command) is not None


def suspended(proc: psutil.Process) -> bool:
    """True when the process is stopped by a signal (SIGSTOP, Ctrl-Z; psutil's state 'T', or 't'
    under a debugger): alive, but it runs no instruction until continued."""
    try:
        return proc.status() in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP)
    except psutil.Error:
        return False


def _end(proc: psutil.Process) -> None:
    """SIGTERM, then SIGCONT: a suspended worker wakes to a stop (after its step, with a save)."""
    with contextlib.suppress(psutil.Error):
        proc.terminate()  # pending while the process is stopped ...
        proc.resume()  # ... and handled as soon as it runs again


@dataclass(frozen=True)
class Worker:
    """A worker process found among the machine's processes (workers()), whatever its folder says."""

    pid: int
    folder: Path  # the folder its command line names (which may be gone)
    started: float  # its create_time
    suspended: bool

    @property
    def label(self) -> str:
        """'<name> (pid N)': how a refusal or the Training page names it."""
        return f"{self.folder.name} (pid {self.pid})"


def workers(root: Path | None = None) -> list[Worker]:
    """Every live `python -m serving.job_worker FOLDER` process whose FOLDER is a run under
    `root` (or a job of a kind, root/<kind>/), found by its command line, not by the folder: a
    worker whose folder was deleted is one too. A process whose command line cannot be read (another
    user's) is not seen."""
    base = (root or runs_root()).resolve()
    homes = {base, *(base / kind for kind in KINDS)}
    found = []
    for proc in psutil.process_iter(["cmdline", "create_time", "status"]):
        argv = proc.info.get("cmdline") or []
        if WORKER not in argv or proc.info.get("status") == psutil.STATUS_ZOMBIE:
            continue
        at = argv.index(WORKER)
        if at + 1 >= len(argv) or argv[at - 1 : at] != ["-m"]:
            continue
        folder = Path(argv[at + 1])
        if folder.parent in homes:
            stopped = proc.info.get("status") in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP)
            found.append(Worker(proc.pid, folder, proc.info.get("create_time") or 0.0, stopped))
    return found


def orphans(root: Path | None = None) -> list[Worker]:
    """The workers no run accounts for: their folder is gone (deleted outside the app), or its
    status names another live worker. Each holds a job slot until it ends; a worker notices a
    deleted folder by its next step and ends itself, so one that stays is suspended, or still
    building its model. (A worker whose folder's status does not name it yet is being started.)"""
    found = []
    for worker in workers(root):
        if not worker.folder.is_dir():
            found.append(worker)
            continue
        with contextlib.suppress(JobError):
            status = read_json(worker.folder / "status.json", {})
            pid = status.get("pid") if isinstance(status, dict) else None
            if pid != worker.pid and worker_alive(pid, worker.folder, status.get("pid_started")):
                found.append(worker)
    return found


def stop_orphan(pid: int, *, auth: Auth, root: Path | None = None) -> None:
    """End a worker whose run folder is gone (one of orphans()): SIGTERM and, when it is
    suspended, SIGCONT, so it wakes, finds its folder gone and ends without writing anything."""
    check(auth)
    base = root or runs_root()
    with locked(base):
        found = [w for w in orphans(base) if w.pid == pid]
        if not found:
            raise JobError(f"no worker without a run has pid {pid} (it may have ended)")
        proc = worker_process(pid, found[0].folder, found[0].started)
        if proc is not None:
            _end(proc)


def read(name: str, root: Path | None = None, history: bool = True) -> RunView:
    """The run's state as its files say, with a dead worker's running/paused read as interrupted."""
    path = run_dir(name, root)
    settings = read_json(path / "settings.json")
    if settings is None:
        raise JobError(f"there is no run named {name!r}")
    status = read_json(path / "status.json", {})
    known = {f.name for f in dataclasses.fields(RunView)} - {
        "name",
        "path",
        "settings",
        "history",
        "estimate",
    }
    view = RunView(name, path, "failed", settings=settings)
    found = read_json(path / ESTIMATE_FILE, {})
    view.estimate = found if isinstance(found, dict) else {}
    for key, value in status.items():
        if key in known:
            setattr(view, key, value)
    proc = worker_process(view.pid, path, view.pid_started) if view.state in LIVE else None
    if not status:
        view.message = "the run never started"
    elif view.state in LIVE and proc is None:
        view.state = "interrupted"
        view.message = (
            f"the job ended without finishing; resume continues from step {view.saved_step}"
            if view.saved_step
            else "the job ended before its first save; resume starts it again"
        )
    elif proc is not None and suspended(proc):
        view.state = "suspended"
        view.message = (
            f"its worker process (pid {view.pid}) is suspended by a signal (SIGSTOP or Ctrl-Z, "
            f"say) at step {view.step}: it trains no step but holds a job slot; Stop wakes it "
            "and stops it with a save"
        )
    elif view.state == "failed" and view.saved_step and view.has_bundle:  # a full disk, say
        view.message += f"; resume continues from step {view.saved_step}, its last save"
    if history:
        view.history = read_history(path / HISTORY_FILE)
    return view


def list_runs(root: Path | None = None) -> list[RunView]:
    """Every job run under the runs root (a folder with settings.json), newest first, without
    their histories (read one run for that)."""
    base = root or runs_root()
    if not base.is_dir():
        return []
    found = []
    for path in base.iterdir():
        if (path / "settings.json").is_file() and _NAME.fullmatch(path.name):
            # A run deleted by another process between these two reads is simply left out.
            with contextlib.suppress(JobError, OSError):
                view = read(path.name, base, history=False)
                found.append(((path / "settings.json").stat().st_mtime, view))
    return [view for _, view in sorted(found, key=lambda pair: pair[0], reverse=True)]


# ---- starting ---------------------------------------------------------------------------------


def _live_runs(root: Path) -> list[str]:
    """What holds a job slot: every live run (a suspended one too) and every worker process no
    run names (its folder deleted: it still computes), which a folder count would miss."""
    live = [v.name for v in list_runs(root) if v.live]
    for kind in KINDS:  # "sae/<name>": jobs of another kind hold a slot too
        live += [f"{kind}/{v.name}" for v in list_runs(root / kind) if v.live]
    live += [f"a worker whose run folder is gone: {w.label}" for w in orphans(root)]
    return live


def _room_problem(root: Path, limits: Limits) -> str | None:
    live = _live_runs(root)
    if len(live) < limits.max_jobs:
        return None
    return (
        f"the server runs at most {limits.max_jobs} training job(s) at once (VIZ_MAX_JOBS="
        f"{limits.max_jobs}); running now: {', '.join(live) or 'none'}"
    )


def _minutes_problem(minutes: float | None, limits: Limits) -> str | None:
    if minutes is None or minutes <= limits.max_minutes:
        return None
    return (
        f"a run may train for at most {limits.max_minutes:g} minutes here (VIZ_MAX_MINUTES="
        f"{limits.max_minutes:g}); asked for {minutes:g}"
    )


def _params_problem(params: int, limits: Limits) -> str | None:
    if params <= limits.max_params:
        return None
    return (
        f"this model has {params:,} parameters; the server trains at most "
        f"{limits.max_params:,} (VIZ_MAX_PARAMS={limits.max_params})"
    )


def cap_problems(params: int, minutes: float | None, root: Path | None = None) -> list[str]:
    """Every cap a new run of `params` parameters and `minutes` would break, in the words
    start() refuses with, so a page can say them all before Start."""
    limits = Limits.from_env()
    found = (
        _params_problem(params, limits),
        _minutes_problem(minutes, limits),
        _room_problem(root or runs_root(), limits),
    )
    return [problem for problem in found if problem]


def _check_room(root: Path, limits: Limits) -> None:
    if problem := _room_problem(root, limits):
        raise JobError(problem)


def _check_minutes(minutes: float | None, limits: Limits) -> None:
    if problem := _minutes_problem(minutes, limits):
        raise JobError(problem)


def _prepare(settings: RunSettings, text: str | bytes | None, limits: Limits) -> tuple[str, int]:
    """(the training text, the parameter count) after every check that needs no folder."""
    if (text is None) != (settings.text_file is None):
        raise JobError(
            "give the text with a text-file run (settings.text_file names it), and only then"
        )
    _check_base(settings.base)
    try:
        settings.train_config()  # the training settings are valid
        text = validate_user_text(text) if text is not None else load_text(settings.data_source())
        params = estimate_params(settings, text)  # a fine-tune: the base's, text checked
    except (ValueError, OSError, CheckpointError) as exc:  # DataError, TokenizerError, a shape
        raise JobError(str(exc)) from None
    if problem := _params_problem(params, limits):
        raise JobError(problem)
    _check_minutes(settings.minutes, limits)
    return text, params


def _check_base(base: str | None) -> None:
    """A fine-tune starts from a model this server lists (serving/models.py), not any folder."""
    if base is None:
        return
    if Path(base).resolve() not in set(discover().values()):
        raise JobError(f"{Path(base).name!r} is not a model of this server to fine-tune")


def start(
    name: str,
    settings: RunSettings,
    text: str | bytes | None = None,
    *,
    auth: Auth,
    root: Path | None = None,
    estimate: dict[str, Any] | None = None,
) -> RunView:
    """Start a new run `name` in a child process; returns its first view.

    `estimate` (optional) is what the page promised before Start, e.g. {"steps_per_s": [2.6,
    3.5], "threads": 1}: kept as estimate.json so the run can be compared with it afterwards.

    `text` is the pasted or uploaded text for a text-file run (settings.text_file is then just
    its label, e.g. the upload's name): it is checked like any upload and kept as text.txt in the
    run folder. Refused (JobError) for a wrong password, a bad or taken name, a full server, a
    model or a run longer than the caps, or settings the loop would refuse.
    """
    check(auth)
    limits = Limits.from_env()
    text_kept, params = _prepare(settings, text, limits)

    def fill(path: Path) -> RunSettings:
        if estimate:
            write_json(path / ESTIMATE_FILE, estimate)
        if text is None:
            return settings
        write_text(path / "text.txt", text_kept)
        return dataclasses.replace(settings, text_file=str(path / "text.txt"))

    return launch_run(name, root or runs_root(), params, {"mode": "new"}, fill)


def launch_run(
    name: str,
    root: Path,
    params: int,
    plan: dict[str, Any],
    fill: Callable[[Path], RunSettings],
    kind: str = "",
) -> RunView:
    """The one way a run begins (start here, and retrain.py's damaged copies): refuse a bad or
    taken name and a model over the parameter cap; then, under the lock, check the room, make
    the folder, let `fill(path)` write what the run starts from and return its settings, start
    the worker with `plan`, and write settings.json last. A failure leaves no half-made run.
    `kind` (one of KINDS) puts the folder in root/kind; the lock and the caps stay root's."""
    if kind and kind not in KINDS:
        raise JobError(f"unknown kind of job {kind!r}")
    folder_root = root / kind if kind else root
    path = run_dir(name, folder_root)
    if (bundled_dir() / name).exists():
        raise JobError(f"{name!r} is the name of a bundled model; choose another name")
    limits = Limits.from_env()
    if problem := _params_problem(params, limits):
        raise JobError(problem)
    with locked(root):
        _check_room(root, limits)
        try:
            folder_root.mkdir(exist_ok=True)
            path.mkdir()  # exclusive: of two starts of one name, the second fails here
        except FileExistsError:
            raise JobError(f"a run named {name!r} already exists; choose another name") from None
        try:
            settings = fill(path)
            _launch(path, plan, limits, params)
            # last: a folder with settings.json is a run (list_runs), complete from the start;
            # the worker reads it once we release the lock
            write_json(path / "settings.json", settings.to_dict())
        except (OSError, CheckpointError, ValueError) as exc:  # a full disk: leave no half-run
            shutil.rmtree(path, ignore_errors=True)
            raise JobError(f"could not start {name!r}: {exc}") from None
    return read(name, folder_root)


def spawn(command: list[str], log: Path, threads: int) -> subprocess.Popen:
    """A child process of this server (a training worker, a sheet build): `command` run from the
    app's folder with this server's runs folder and its torch threads capped at `threads`, its
    output appended to `log`, and wait()ed in a thread, so a finished one does not linger as a
    zombie of this server."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    env[RUNS_ENV] = str(runs_root())  # the child runs in the app's folder: it must not pick its own
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out
        )
    threading.Thread(target=proc.wait, daemon=True).start()
    return proc


def _launch(path: Path, plan: dict[str, Any], limits: Limits, params: int | None) -> None:
    """Write the plan and a fresh control file, start the worker, and record its pid (under the
    lock: the worker's first status write waits for it, so the pid is never overwritten)."""
    write_json(
        path / "plan.json", {**plan, "threads": limits.threads, "max_minutes": limits.max_minutes}
    )
    write_json(path / "control.json", {"paused": False, "stop": False, "lr": None, "steps": 0})
    proc = spawn([sys.executable, "-m", WORKER, str(path)], path / "job.log", limits.threads)
    old = read_json(path / "status.json", {})
    status = {
        **{k: old[k] for k in ("saved_step", "samples") if k in old},
        "step": old.get("saved_step") or 0,  # where a resumed run goes on from
        "state": "running",
        "message": "starting: loading the text, training the tokenizer, building the model",
        "pid": proc.pid,
        "pid_started": process_started(proc.pid),
        "threads": limits.threads,
        "params": params if params is not None else old.get("params"),
        "updated": time.time(),
    }
    write_json(path / "status.json", status)


# ---- controls ---------------------------------------------------------------------------------


def _control(name: str, auth: Auth, root: Path | None, change, allowed) -> RunView:
    """Check the password and the state, then apply change(control) to control.json under the
    lock; the run's view as it was before."""
    check(auth)
    root = root or runs_root()
    with locked(root):
        view = read(name, root, history=False)
        if view.state not in allowed:
            raise JobError(
                f"{name!r} is {view.state}; this works only when it is {' or '.join(allowed)}"
            )
        control = read_json(view.path / "control.json", {})
        change(control)
        write_json(view.path / "control.json", control)
    return view


def pause(name: str, *, auth: Auth, root: Path | None = None) -> None:
    """Pause after the step in progress (the page then offers Step and Resume)."""
    _control(name, auth, root, lambda c: c.update(paused=True), ("running", "paused"))


def stop(name: str, *, auth: Auth, root: Path | None = None) -> None:
    """Stop after the step in progress (while paused: after one more step), measure the
    validation loss and save the bundle; the state becomes stopped. A suspended worker reads
    no control file: it gets SIGTERM and SIGCONT (wake_to_stop), which stop it the same way."""
    view = _control(name, auth, root, lambda c: c.update(stop=True), LIVE)
    if view.state == "suspended":
        wake_to_stop(view)


def wake_to_stop(view: RunView) -> None:
    """A suspended run's worker: SIGTERM, then SIGCONT (a stop after its step, with a save)."""
    proc = worker_process(view.pid, view.path, view.pid_started)
    if proc is not None:
        _end(proc)


def step(name: str, *, auth: Auth, root: Path | None = None) -> None:
    """While paused: take one optimisation step (its record appears in the history)."""
    more = lambda c: c.update(steps=c.get("steps", 0) + 1)  # noqa: E731  a count, never lost
    _control(name, auth, root, more, ("paused",))


def set_lr(name: str, lr: float, *, auth: Auth, root: Path | None = None) -> None:
    """Change the peak learning rate of a running or paused run from its next step on (the
    warm-up and cosine keep their shape around it; the bundle records it)."""
    if isinstance(lr, bool) or not isinstance(lr, int | float) or not 0 < lr <= 1:
        raise JobError(f"the learning rate must be a number above 0 and at most 1; got {lr!r}")
    _control(name, auth, root, lambda c: c.update(lr=float(lr)), LIVE)


def resume(name: str, *, auth: Auth, root: Path | None = None) -> None:
    """Unpause a paused run, or start the worker of an interrupted run, or of a run that failed
    after a save (a disk that filled up, say), again from its last save."""
    check(auth)
    root = root or runs_root()
    view = read(name, root, history=False)
    if view.state == "paused":
        _control(name, auth, root, lambda c: c.update(paused=False), ("paused",))
    elif view.state == "failed" and not (view.saved_step and view.has_bundle):
        raise JobError(f"{name!r} failed before its first save; delete it and start it again")
    else:
        plan = {"mode": "resume", "event": f"resumed ({view.state})"}
        _relaunch(name, root, plan, ("interrupted", "failed"))


def train_more(
    name: str,
    steps: int | None = None,
    minutes: float | None = None,
    *,
    auth: Auth,
    root: Path | None = None,
) -> None:
    """Continue a finished or stopped run from its bundle for `steps` more steps or `minutes`
    more minutes (one of the two). The cosine stretches over the new total, so the learning rate
    rises again; the optimiser's running averages restart (bundles do not keep them)."""
    check(auth)
    if (steps is None) == (minutes is None):
        raise JobError("give either more steps or more minutes")
    if steps is not None and (not isinstance(steps, int) or steps < 1):
        raise JobError(f"more steps must be a whole number of at least 1; got {steps!r}")
    if minutes is not None and not minutes > 0:
        raise JobError(f"more minutes must be above 0; got {minutes!r}")
    _check_minutes(minutes, Limits.from_env())
    root = root or runs_root()
    config = read_json(run_dir(name, root) / "config.json", {})
    meta = config.get("meta") or {}
    if steps is not None:
        plan = {"train": {"max_steps": int(meta.get("step", 0)) + steps}, "minutes": 0.0}
        more = f"train more: {steps:,} steps"
    else:
        used = float(meta.get("wall_time", 0.0))
        plan = {"train": {"max_steps": STEPS_WHEN_TIMED}, "minutes": used / 60 + minutes}
        more = f"train more: {minutes:g} min"
    _relaunch(name, root, {"mode": "resume", "event": more, **plan}, ("finished", "stopped"))


def _relaunch(name: str, root: Path, plan: dict[str, Any], allowed: tuple[str, ...]) -> None:
    limits = Limits.from_env()
    with locked(root):
        view = read(name, root, history=False)
        if view.state not in allowed:
            raise JobError(
                f"{name!r} is {view.state}; this works only when it is {' or '.join(allowed)}"
            )
        _check_room(root, limits)
        _launch(view.path, plan, limits, None)


def _workers_in(view: RunView, root: Path) -> list[Worker]:
    """The worker processes in an ended run's folder: one its status does not name (a second
    launch, a status written over) trains there still, and deleting the folder would leave it
    training out of sight. The one it names wrote its last status and is exiting: it is waited
    for (up to ENDING_S)."""
    deadline = time.monotonic() + ENDING_S
    while True:
        found = [w for w in workers(root) if w.folder == view.path]
        if not any(w.pid == view.pid for w in found) or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def delete(name: str, *, auth: Auth, root: Path | None = None, kind: str = "") -> None:
    """Remove a run that is not running (its bundle goes with it). `kind` (one of KINDS): a job
    of that kind, in root/kind, under root's lock as launch_run keeps it."""
    check(auth)
    if kind and kind not in KINDS:
        raise JobError(f"unknown kind of job {kind!r}")
    root = root or runs_root()
    with locked(root):
        view = read(name, root / kind if kind else root, history=False)
        if view.live:
            raise JobError(f"{name!r} is {view.state}; stop it before deleting it")
        if still := _workers_in(view, root):
            pids = ", ".join(str(w.pid) for w in still)
            raise JobError(f"{name!r} still has a worker process (pid {pids}); try again")
        try:
            shutil.rmtree(view.path)
        except OSError as exc:
            raise JobError(f"could not delete {name!r}: {exc.strerror or exc}") from exc


__all__ = [
    "Auth",
    "JobError",
    "Worker",
    "bundled_dir",
    "cap_problems",
    "Limits",
    "RunView",
    "check",
    "delete",
    "list_runs",
    "orphans",
    "server_password",
    "pause",
    "read",
    "resume",
    "run_dir",
    "runs_root",
    "set_lr",
    "start",
    "step",
    "stop",
    "stop_orphan",
    "train_more",
    "wake_to_stop",
    "worker_alive",
    "workers",
]
