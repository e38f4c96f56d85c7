"""Damage, then retrain: start a training job from a damaged copy of a model bundle.

    damaged = interventions.damaged_copy(bundle.model, Ablation(heads=((1, 2),)))
    retrain.start_damaged("no-L1H2", bundle.path, damaged, 300, "head L1H2 zeroed", auth=auth)

`auth` is a jobs.Auth (the UI builds it with ui.teacher.password_field); there is no default.

The new run folder is a bundle (the source's tokenizer, training settings and history, the damaged
weights) that the job worker resumes for `steps` more steps on the source's own data, so its loss
curve carries on from the source's and the Training page shows the recovery live. It goes through
the same checks as jobs.start: the teacher password, a safe free name, the job and size caps,
all under the runs folder's lock.

Not here: the damage itself (analysis/labs/interventions.damaged_copy), the worker (job_worker.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from serving import jobs
from viz_model.bundles.checkpoint import save_bundle
from viz_model.bundles.files import CheckpointError
from viz_model.model.gpt import GPT
from viz_model.training.loop import resume_state
from viz_model.training.settings import TOKENIZERS, RunSettings

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
    jobs.run_dir(name, root)  # a bad name is refused before the model is read
    try:
        bundle, step, history = resume_state(source)
    except (CheckpointError, OSError) as exc:
        raise jobs.JobError(f"could not read the model to damage: {exc}") from None
    data = bundle.meta.get("data")
    if not data:
        raise jobs.JobError(
            f"{bundle.name} does not say what it was trained on, so it cannot retrain"
        )
    meta = {**bundle.meta, "damaged": {"source": bundle.name, "step": step, "what": note}}
    plan = {"mode": "resume", "train": {"max_steps": step + steps}, "minutes": 0.0}
    plan["event"] = f"damaged: {note}" if note else "damaged"

    def fill(path: Path) -> RunSettings:
        save_bundle(path, model, bundle.tokenizer, bundle.train_config, history, meta)
        return settings_for(data, bundle.meta)

    return jobs.launch_run(name, root, model.n_params(), plan, fill)


def can_retrain(meta: dict[str, Any]) -> bool:
    """True when a bundle says what it was trained on (a retrain needs that data)."""
    return bool(meta.get("data"))
