"""Where the server's files are: the checkout (REPO) and the runs folder (VIZ_RUNS_DIR, else
<repo>/runs). The lowest serving module: jobs.py and models.py both read it, so a job can ask
which models the server offers without an import cycle."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUNS_ENV = "VIZ_RUNS_DIR"


def runs_root(repo: Path = REPO) -> Path:
    """Where runs live: VIZ_RUNS_DIR, else <repo>/runs."""
    env = os.environ.get(RUNS_ENV, "").strip()
    return Path(env).expanduser() if env else repo / "runs"
