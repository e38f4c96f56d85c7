"""Sparse autoencoder jobs: a bigger SAE trained in a child process, like a training run.

    job = SAEJob(bundle_id, layer=1, site="resid_post", n_features=4096, k=16, tokens=1_000_000)
    sae_jobs.start("sc-l1-4096", job, auth=jobs.Auth(...))   # refused (JobError) when not allowed
    view = sae_jobs.read("sc-l1-4096")        # a jobs.RunView: .state, .progress, .message
    lab = sae_files.load_lab(view.path, d_model)              # once finished
    sae_jobs.delete("sc-l1-4096", auth=jobs.Auth(...))        # one not running, with its files

A job's folder is runs/sae/<name>/ (under VIZ_RUNS_DIR when set), made by jobs.launch_run with
kind "sae": the same worker command (`python -m serving.job_worker FOLDER`, which hands an SAE
plan to serving/sae_worker.py), the same lock on RUNS/.jobs.lock, the same caps (a live SAE job
holds one of VIZ_MAX_JOBS' slots; VIZ_MAX_MINUTES stops it; VIZ_MAX_PARAMS bounds the SAE's own
parameters), the same teacher password, and the same liveness check (a killed worker reads as
interrupted). The folder holds:

    settings.json    SAEJob.to_dict(): the model's id, hook, F, k or L1, tokens, seed   (once, last)
    plan.json        {"mode": "new", "kind": "sae", threads, max_minutes}               (API)
    control.json     {"stop": ...}: the worker polls it                                  (API)
    status.json      state, pid, stage, progress, tokens/s, elapsed, message             (worker)
    sae.safetensors, metrics.json, features.json: the lab (viz_model/analysis/labs/sae_files.py)
    job.log          the worker's stderr

States as for runs: running, finished, stopped (Stop, the minutes cap, SIGTERM: nothing is
saved), failed (the message says why: a model folder that vanished, say), interrupted.

Not here: the training itself (viz_model/analysis/labs/sae/), the page.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from serving import jobs, models
from serving.jobs import JobError
from viz_model.analysis.labs.sae.activations import SITES, hook_name
from viz_model.analysis.labs.sae.training import SAEConfig
from viz_model.bundles.checkpoint import read_config
from viz_model.bundles.files import CheckpointError, write_json

KIND = "sae"
MAX_TOKENS = 4_000_000  # activations held in memory: 4M x 128 floats is 2 GB
MAX_FEATURES = 16_384


@dataclass(frozen=True)
class SAEJob:
    """What an SAE job trains: on the model `bundle_id` (serving.models' id: folder, weights'
    mtime, maybe "#step"), at hook blocks.{layer}.hook_{site}; F features; k > 0 for top-k, else
    an L1 penalty of l1_coeff; about `tokens` activations; seeded."""

    bundle_id: str
    layer: int
    site: str = "resid_post"
    n_features: int = 1024
    k: int = 16
    l1_coeff: float = 3e-2
    tokens: int = 500_000
    seed: int = 0

    @property
    def hook(self) -> str:
        return hook_name(self.layer, self.site)

    @property
    def model_path(self) -> Path:
        return models.path_of(self.bundle_id)

    @property
    def step(self) -> int | None:
        return models.split_step(self.bundle_id)[1]

    def config(self) -> SAEConfig:
        return SAEConfig(
            n_features=self.n_features, k=self.k, l1_coeff=self.l1_coeff, seed=self.seed
        )

    def sparsity(self) -> str:
        """'top-16' or 'L1 0.01', as the page names it."""
        return f"top-{self.k}" if self.k else f"L1 {self.l1_coeff:g}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: object) -> SAEJob:
        """The job a settings.json describes, checked (JobError in plain words otherwise)."""
        if not isinstance(raw, dict):
            raise JobError("an SAE job's settings must be a JSON object")
        try:
            job = cls(**raw)
        except TypeError as exc:
            raise JobError(f"an SAE job's settings do not fit: {exc}") from None
        job.check()
        return job

    def check(self) -> None:
        """JobError for a value no job may have (the model's own limits are checked at start)."""
        whole = (self.layer, self.n_features, self.k, self.tokens, self.seed)
        if not isinstance(self.bundle_id, str) or "@" not in self.bundle_id:
            raise JobError(f"{self.bundle_id!r} is not a model id")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in whole):
            raise JobError("layer, features, k, tokens and seed must be whole numbers")
        if self.site not in SITES:
            raise JobError(f"the activation must be one of {sorted(SITES)}, not {self.site!r}")
        if not 1 <= self.n_features <= MAX_FEATURES:
            raise JobError(f"the dictionary size must be 1 to {MAX_FEATURES:,}")
        if not 0 <= self.k <= self.n_features:
            raise JobError("k must be between 0 (L1) and the dictionary size")
        if not self.k and not (isinstance(self.l1_coeff, int | float) and 0 < self.l1_coeff <= 10):
            raise JobError("the L1 coefficient must be above 0 and at most 10")
        if not 1_000 <= self.tokens <= MAX_TOKENS:
            raise JobError(f"an SAE job trains on 1,000 to {MAX_TOKENS:,} tokens")


def sae_root(root: Path | None = None) -> Path:
    """Where SAE jobs live: <runs root>/sae."""
    return (root or jobs.runs_root()) / KIND


def start(name: str, job: SAEJob, *, auth: jobs.Auth, root: Path | None = None) -> jobs.RunView:
    """Start SAE job `name` in a child process; its first view. Refused (JobError) for a wrong
    password, a bad or taken name, a full server, a model that is gone or too small for the
    hook, or settings out of range."""
    jobs.check(auth)
    job.check()
    if models.split_precision(job.bundle_id)[1] is not None:
        raise JobError("an SAE job trains on the model at full precision; choose float32")
    try:
        cfg, _ = read_config(job.model_path)
    except (CheckpointError, OSError) as exc:
        raise JobError(f"the model at {job.model_path} cannot be read: {exc}") from None
    if getattr(cfg, "n_layer", None) is None or not 0 <= job.layer < cfg.n_layer:
        raise JobError(f"this model has no block {job.layer}")
    if job.site == "mlp_out" and getattr(cfg, "attn_only", False):
        raise JobError("this model's blocks have no MLP")
    d = cfg.d_model
    params = 2 * d * job.n_features + job.n_features + d  # W_enc, W_dec, b_enc, b_dec
    plan = {"mode": "new", "kind": KIND}
    return jobs.launch_run(name, root or jobs.runs_root(), params, plan, lambda _: job, kind=KIND)


def read(name: str, root: Path | None = None) -> jobs.RunView:
    """The job's state as its files say (a dead worker's running status reads as interrupted)."""
    view = jobs.read(name, sae_root(root), history=False)
    if view.state == "interrupted":  # jobs.read's words are about resuming a model's training
        view.message = "the worker ended without finishing (killed, or the server restarted)"
    return view


def list_jobs(root: Path | None = None, bundle_id: str | None = None) -> list[jobs.RunView]:
    """Every SAE job, newest first; only those on the model `bundle_id` when given."""
    found = []
    for view in jobs.list_runs(sae_root(root)):
        if bundle_id is None or view.settings.get("bundle_id") == bundle_id:
            found.append(read(view.name, root) if view.state == "interrupted" else view)
    return found


def stop(name: str, *, auth: jobs.Auth, root: Path | None = None) -> None:
    """Ask a running job to stop (the worker stops within a batch; nothing is saved)."""
    jobs.check(auth)
    base = root or jobs.runs_root()
    with jobs.locked(base):
        view = read(name, base)
        if not view.live:
            raise JobError(f"{name!r} is {view.state}; only a running job can be stopped")
        control = jobs.read_json(view.path / "control.json", {})
        write_json(view.path / "control.json", {**control, "stop": True})
        if view.state == "suspended":  # stopped by a signal: it reads no control file
            jobs.wake_to_stop(view)


def delete(name: str, *, auth: jobs.Auth, root: Path | None = None) -> None:
    """Remove a job that is not running, and the SAE it saved (password as for Start)."""
    jobs.delete(name, auth=auth, root=root, kind=KIND)


def free_name(base: str, root: Path | None = None) -> str:
    """`base` made into a job name (a slug of at most 64 characters) no job has taken yet."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", base).strip("-_")[:56] or "sae"
    taken = {p.name for p in sae_root(root).iterdir()} if sae_root(root).is_dir() else set()
    name, n = slug, 1
    while name in taken:
        n += 1
        name = f"{slug}-{n}"
    return name
