"""Where the server's files are: the app's folder (REPO) and the runs folder (VIZ_RUNS_DIR, else
<repo>/runs in a checkout, ./runs of the current folder in an installed copy). The lowest serving
module: jobs.py and models.py both read it, so a job can ask which models the server offers
without an import cycle."""

from __future__ import annotations

import os
from pathlib import Path

from viz_model import ASSETS_DIR

REPO = Path(__file__).resolve().parent.parent  # the checkout, or site-packages/viz_gpt installed
RUNS_ENV = "VIZ_RUNS_DIR"


def installed(repo: Path = REPO) -> bool:
    """Whether the app runs from an installed copy: its folder is then the package viz_gpt
    (packaging/viz_gpt/__init__.py), where nothing may be written."""
    return (repo / "__init__.py").is_file()


def bundled_dir(repo: Path = REPO) -> Path:
    """The models that ship with the app: <repo>/assets/models, or the engine's own assets in an
    installed copy (viz_model.ASSETS_DIR)."""
    return ASSETS_DIR / "models" if installed(repo) else repo / "assets" / "models"


def runs_root(repo: Path = REPO) -> Path:
    """Where runs live: VIZ_RUNS_DIR, else <repo>/runs, or ./runs of the current folder when the
    app is installed (never inside the package)."""
    env = os.environ.get(RUNS_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    return Path.cwd() / "runs" if installed(repo) else repo / "runs"
