"""Which models this server offers: bundles on disk, and the stable ids the caches are keyed by.

A bundle is a folder holding config.json (see viz_model/bundles/checkpoint.py). We look in assets/models/
(bundled), runs/ (trained on this server; VIZ_RUNS_DIR moves it: a training job's run folder is
itself a bundle) and every folder listed in the env var VIZ_MODEL_DIRS (os.pathsep-separated;
tests use it). An id may end in "#step" (a training snapshot) and then "#q=<precision>" (a
quantised copy, ui/cache.py builds it). A listed folder may itself be a bundle. When two bundles
share a name, the first found wins. Nothing here imports streamlit.
"""

from __future__ import annotations

import os
from pathlib import Path

from serving.paths import REPO as ROOT
from serving.paths import bundled_dir, runs_root

ENV_VAR = "VIZ_MODEL_DIRS"
DEFAULT_MODEL = "shakespeare-char"


def search_dirs(root: Path = ROOT) -> list[Path]:
    """Where bundles are looked for, in order."""
    dirs = [bundled_dir(root), runs_root(root)]  # runs_root: VIZ_RUNS_DIR or root/runs
    extra = os.environ.get(ENV_VAR, "")
    dirs += [Path(d).expanduser() for d in extra.split(os.pathsep) if d.strip()]
    return dirs


def _is_bundle(path: Path) -> bool:
    return (path / "config.json").is_file()


def discover(root: Path = ROOT) -> dict[str, Path]:
    """Bundle name -> folder, bundled models first, then runs/, then VIZ_MODEL_DIRS."""
    found: dict[str, Path] = {}
    for folder in search_dirs(root):
        try:
            if not folder.is_dir():
                continue
            candidates = [folder] if _is_bundle(folder) else sorted(folder.iterdir())
        except OSError:
            continue
        for path in candidates:
            try:
                if path.is_dir() and _is_bundle(path) and path.name not in found:
                    found[path.name] = path.resolve()
            except OSError:
                continue
    return found


def default_model(names: list[str]) -> str | None:
    """shakespeare-char when present, else the first bundle, else None."""
    if DEFAULT_MODEL in names:
        return DEFAULT_MODEL
    return names[0] if names else None


def bundle_id(path: Path, step: int | None = None) -> str:
    """A stable id for a bundle: its folder and the weights' mtime, so a retrained model reloads;
    with `step`, the id of the snapshot saved at that training step ("#step" at the end).

    >>> bundle_id(Path("/srv/runs/a")), bundle_id(Path("/srv/runs/a"), 30)  # no weights yet
    ('/srv/runs/a@0', '/srv/runs/a@0#30')
    """
    try:
        mtime = (Path(path) / "model.safetensors").stat().st_mtime_ns
    except OSError:
        mtime = 0
    return f"{Path(path)}@{mtime}" + ("" if step is None else f"#{int(step)}")


PRECISION_MARK = "#q="  # "<path>@<mtime>[#step]#q=<precision>": a quantised copy


def with_precision(bundle_id: str, precision: str) -> str:
    """The id of a copy of the model stored at `precision` (viz_model/model/quantize.py names:
    "int8", "int4-outliers", "float16"). It goes last, so it combines with a step: the weights
    saved at that step, quantised.

    >>> with_precision("/srv/runs/a@5", "int8"), with_precision("/srv/runs/a@5#30", "int4")
    ('/srv/runs/a@5#q=int8', '/srv/runs/a@5#30#q=int4')
    """
    return f"{split_precision(bundle_id)[0]}{PRECISION_MARK}{precision}"


def split_precision(bundle_id: str) -> tuple[str, str | None]:
    """(the id without its precision, the precision or None).

    >>> split_precision("/srv/runs/a@5#30#q=int4"), split_precision("/srv/runs/a@5")
    (('/srv/runs/a@5#30', 'int4'), ('/srv/runs/a@5', None))
    """
    base, sep, precision = bundle_id.rpartition(PRECISION_MARK)
    if sep and precision and "@" in base:
        return base, precision
    return bundle_id, None


def split_step(bundle_id: str) -> tuple[str, int | None]:
    """(the final model's id, the snapshot step or None); a precision suffix is set aside.

    >>> split_step("/srv/runs/a@5#30"), split_step("/srv/runs/a@5"), split_step("/a@5#30#q=int8")
    (('/srv/runs/a@5', 30), ('/srv/runs/a@5', None), ('/a@5', 30))
    """
    bundle_id = split_precision(bundle_id)[0]
    base, sep, step = bundle_id.rpartition("#")
    if sep and step.isdigit() and "@" in base:
        return base, int(step)
    return bundle_id, None


def path_of(bundle_id: str) -> Path:
    """The folder a bundle id names (inverse of bundle_id)."""
    return Path(split_step(bundle_id)[0].rsplit("@", 1)[0])
