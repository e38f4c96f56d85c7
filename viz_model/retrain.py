"""Damage, then retrain: start a training job from a damaged copy of a model bundle.

    damaged = interventions.damaged_copy(bundle.model, Ablation(heads=((1, 2),)))
    retrain.start_damaged("no-L1H2", bundle.path, damaged, 300, "head L1H2 zeroed", auth=auth)

`auth` is a jobs.Auth (the UI builds it with ui.teacher.password_field); there is no default.

The new run folder is a bundle (the source's tokenizer, training settings and history, the damaged
weights) that the job worker resumes for `steps` more steps on the source's own data, so its loss
curve carries on from the source's and the Training page shows the recovery live. It goes through
the same checks as jobs.start: the teacher password, a safe free name, the job and size caps,
all under the runs folder's lock.

Not here: the damage itself (analysis/interventions.damaged_copy), the worker (job_worker.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from viz_model import jobs
from viz_model.checkpoint import CheckpointError, save_bundle, write_json
from viz_model.model import GPT
from viz_model.run_settings import TOKENIZERS, RunSettings
from viz_model.train import resume_state

MAX_STEPS = 100_000


def settings_for(source: dict[str, Any], meta: dict[str, Any]) -> RunSettings:
    """The RunSettings that describe a bundle's data (its meta["data"]) for the run's card."""
    kind = meta.get("tokenizer") if meta.get("tokenizer") in TOKENIZERS else "char"
    common = {"val_fraction": source.get("val_fraction", 0.1), "tokenizer": kind}
    if "corpus" in source:
        return RunSettings(corpus=source["corpus"], **common)
    if "task" in source:
        keep = {k: source[k] for k in ("task_examples", "task_len") if k in source}
        return RunSettings(task=source["task"], **keep, **common)
    return RunSettings(text_file=str(source["text_file"]), **common)


def start_damaged(
    name: str,
    source: Path,
    model: GPT,
    steps: int,
    note: str = "",
    *,
    auth: jobs.Auth,
    root: Path | None = None,
) -> jobs.RunView:
    """Start run `name`: `model` (a damaged copy of the bundle at `source`) trained `steps` more
    steps on the bundle's data. Refused (JobError) like jobs.start, and when the source does not
    say what it was trained on."""
    jobs.check(auth)
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS:
        raise jobs.JobError(f"steps must be a whole number from 1 to {MAX_STEPS:,}; got {steps!r}")
    root = root or jobs.runs_root()
    path = jobs.run_dir(name, root)
    if (jobs.REPO / "assets" / "models" / name).exists():
        raise jobs.JobError(f"{name!r} is the name of a bundled model; choose another name")
    try:
        bundle, step, history = resume_state(source)
    except (CheckpointError, OSError) as exc:
        raise jobs.JobError(f"could not read the model to damage: {exc}") from None
    data = bundle.meta.get("data")
    if not data:
        raise jobs.JobError(
            f"{bundle.name} does not say what it was trained on, so it cannot retrain"
        )
    limits = jobs.Limits.from_env()
    if problem := jobs._params_problem(model.n_params(), limits):
        raise jobs.JobError(problem)
    meta = {**bundle.meta, "damaged": {"source": bundle.name, "step": step, "what": note}}
    with jobs.locked(root):
        jobs._check_room(root, limits)
        try:
            path.mkdir()
        except FileExistsError:
            raise jobs.JobError(
                f"a run named {name!r} already exists; choose another name"
            ) from None
        try:
            save_bundle(path, model, bundle.tokenizer, bundle.train_config, history, meta)
            what = f"damaged: {note}" if note else "damaged"
            plan = {"mode": "resume", "train": {"max_steps": step + steps}, "minutes": 0.0}
            plan["event"] = what
            jobs._launch(path, plan, limits, model.n_params())
            write_json(path / "settings.json", settings_for(data, bundle.meta).to_dict())
        except (OSError, CheckpointError, ValueError) as exc:
            shutil.rmtree(path, ignore_errors=True)
            raise jobs.JobError(f"could not start {name!r}: {exc}") from None
    return jobs.read(name, root)


def can_retrain(meta: dict[str, Any]) -> bool:
    """True when a bundle says what it was trained on (a retrain needs that data)."""
    return bool(meta.get("data"))
