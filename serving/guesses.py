"""Wrong teacher passwords, counted per browser across every server process, so that a password
cannot be guessed at the speed of a script (200 guesses in 16 s once went through "Start a
class").

    wait = guesses.wait_s("10.0.0.7")     # 0.0, or the seconds this browser must still wait
    guesses.failed("10.0.0.7")            # one more wrong password from it

After FAILURES_MAX wrong passwords from one browser within WINDOW_S seconds, every password it
tries is refused until the oldest of them is WINDOW_S old, the right one too (otherwise the limit
would not slow a guesser down). The counts live in one small JSON file in the runs folder,
written under its own lock (filelock), so each server process sees the others' counts; a browser
is named by its address (ui/teacher.client_key). A file that cannot be read or written counts
nothing: the password check itself still holds.

Not here: the password check (jobs.Auth), the join codes' limit (serving/classroom/classes.py).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import filelock

from serving.paths import runs_root

FAILURES_MAX = 5  # wrong passwords a browser may try ...
WINDOW_S = 60.0  # ... within this many seconds
FILE = ".password_failures.json"
KEYS_MAX = 1000  # browsers kept in the file (the oldest forgotten first)


def _path(root: Path | None) -> Path:
    return (root or runs_root()) / FILE


def _recent(data: dict, client: str, now: float) -> list[float]:
    return [t for t in data.get(client, []) if now - t < WINDOW_S]


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def wait_s(client: str, root: Path | None = None, now: float | None = None) -> float:
    """Seconds until `client` may try a password again (0.0: now)."""
    now = time.time() if now is None else now
    recent = _recent(_read(_path(root)), client, now)
    if len(recent) < FAILURES_MAX:
        return 0.0
    return max(0.0, min(recent) + WINDOW_S - now)


def failed(client: str, root: Path | None = None, now: float | None = None) -> None:
    """Count one wrong password from `client`."""
    now = time.time() if now is None else now
    path = _path(root)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with filelock.FileLock(str(path) + ".lock", timeout=5):
            data = _read(path)
            data[client] = [*_recent(data, client, now), now]
            data = {k: v for k, v in data.items() if _recent(data, k, now)}
            kept = sorted(data, key=lambda k: max(data[k]))[-KEYS_MAX:]
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps({k: data[k] for k in kept}), encoding="utf-8")
            tmp.replace(path)
    except (OSError, filelock.Timeout):
        return
