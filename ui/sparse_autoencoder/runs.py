"""The Sparse autoencoder page's cached computations: the SAE a `Spec` describes, trained in the
page or read from a finished job's folder, the same SAE trained on random weights (the matching's
control), and what the sections measure on it (a feature's top snippets, its activation along the
prompt, steering with it, the features matched across training). Each is keyed by plain values
(ui/cache.py), so students on the same settings train one SAE.

Not here: the training, the measures and the matching themselves (viz_model/analysis/labs/sae/),
reading a job's saved lab (viz_model/analysis/labs/sae_files.py).
"""

from __future__ import annotations

from dataclasses import astuple, dataclass

import numpy as np

from serving import jobs, models
from ui import cache, corpus, sae_job_panel
from viz_model.analysis.labs import sae_files
from viz_model.analysis.labs.sae.activations import hook_name
from viz_model.analysis.labs.sae.features import activations_along, feature_in_windows, top_snippets
from viz_model.analysis.labs.sae.features import steered as sae_steered
from viz_model.analysis.labs.sae.lab import Lab
from viz_model.analysis.labs.sae.lab import lab as train_lab
from viz_model.analysis.labs.sae.matching import Matches, match_labs, same_weights
from viz_model.analysis.labs.sae.training import SAEConfig
from viz_model.analysis.untrained import fresh_model
from viz_model.model.sampling import SamplingSettings
from viz_model.text.data import VAL_FRACTION

N_SNIPPETS, STEER_TOKENS = 6, 80


@dataclass(frozen=True)
class Spec:
    """Everything a trained SAE depends on: k > 0 for top-k, else the L1 coefficient l1; `job`
    names a finished job's folder and its file's mtime ("" for an SAE trained in the page)."""

    bundle_id: str
    layer: int
    site: str
    n_features: int
    k: int
    l1: float
    n_train: int
    seed: int
    job: str = ""

    @property
    def hook(self) -> str:
        return hook_name(self.layer, self.site)

    @property
    def sparsity(self) -> str:
        return f"top-{self.k}" if self.k else f"L1 λ = {self.l1:g}"


def job_spec(bundle_id: str, view: jobs.RunView) -> Spec:
    """The Spec of a finished job: its settings, and its SAE file's mtime (a redo reloads)."""
    job = sae_job_panel.settings_of(view)
    mtime = (view.path / sae_files.SAE_FILE).stat().st_mtime_ns if view.path.is_dir() else 0
    l1 = 0.0 if job.k else job.l1_coeff
    return Spec(
        bundle_id,
        job.layer,
        job.site,
        job.n_features,
        job.k,
        l1,
        job.tokens,
        job.seed,
        f"{view.path}@{mtime}",
    )


def _train_here(bundle_id: str, model, layer, site, n_features, k, l1, n_train, seed) -> Lab:
    """An SAE trained in the page on `model`'s activations, over the text of `bundle_id`."""
    bundle = cache.bundle(bundle_id)
    config = SAEConfig(n_features=n_features, k=k, l1_coeff=l1 or 3e-2, seed=seed)
    hook = hook_name(layer, site)
    held_out = corpus.source_of(bundle).get("val_fraction", VAL_FRACTION)
    text = corpus.text_of(bundle)
    return train_lab(model, bundle.tokenizer, text, hook, config, n_train, val_fraction=held_out)


@cache.per_model(keep=2)
def _trained(
    bundle_id: str,
    layer: int,
    site: str,
    n_features: int,
    k: int,
    l1: float,
    n_train: int,
    seed: int,
    job: str,
) -> Lab:
    bundle = cache.bundle(bundle_id)
    if job:  # a finished job's lab, read and checked (sae_files.SAEFileError if damaged)
        return sae_files.load_lab(job.rsplit("@", 1)[0], bundle.model.cfg.d_model)
    return _train_here(bundle_id, bundle.model, layer, site, n_features, k, l1, n_train, seed)


@cache.per_model(keep=2)
def _untrained_lab(
    bundle_id: str,
    layer: int,
    site: str,
    n_features: int,
    k: int,
    l1: float,
    n_train: int,
    seed: int,
    fresh_seed: int = -1,
) -> Lab:
    """The same SAE trained on the model's shape with random weights: cache.untrained's, or a
    fresh initialisation under `fresh_seed` when that is not -1 (analysis/untrained.py)."""
    twin = _blank_model(bundle_id, fresh_seed)
    return _train_here(bundle_id, twin, layer, site, n_features, k, l1, n_train, seed)


def _blank_model(bundle_id: str, fresh_seed: int):
    if fresh_seed < 0:
        return cache.untrained(bundle_id).model
    return fresh_model(cache.bundle(bundle_id).config, fresh_seed)


def control_seed(spec: Spec) -> int:
    """-1: the matching's model that learned nothing is the untrained twin; else the seed of a
    fresh initialisation, used when the model on screen is that twin itself (its step-0
    snapshot): an SAE matched against one trained the same way on the same weights finds every
    feature again, which says nothing."""
    final_id = models.split_step(spec.bundle_id)[0]
    if not same_weights(cache.bundle(spec.bundle_id).model, cache.untrained(final_id).model):
        return -1
    return int((cache.bundle(final_id).train_config or {}).get("seed", 0)) + 1


def control_source(spec: Spec) -> str:
    """The model that learned nothing the matching is checked against, in words."""
    seed = control_seed(spec)
    final_id = models.split_step(spec.bundle_id)[0]
    if seed < 0:
        return cache.untrained(final_id).source
    return f"a fresh initialisation (seed {seed}; the model on screen is its own random weights)"


def trained(spec: Spec) -> Lab:
    """The SAE `spec` describes, trained (or read) once per server (plain values key the cache)."""
    return _trained(*astuple(spec))


@cache.per_prompt
def feature_snippets(spec: Spec, feature: int) -> tuple[list[tuple[int, int]], np.ndarray]:
    """The feature's top windows, one each: (window, position) pairs and activations (n, T)."""
    found = trained(spec)
    where = top_snippets(found.table, feature, N_SNIPPETS)
    rows = found.browse.ids[[w for w, _ in where]]
    model = cache.bundle(spec.bundle_id).model
    return where, feature_in_windows(model, found.sae, spec.hook, rows, feature)


@cache.per_prompt
def matched(spec: Spec, other: Spec) -> Matches:
    """The SAE on screen's features matched against another's (another training step's), and
    against one trained the same way (`other`'s settings) on random weights of the same shape."""
    final_id = models.split_step(spec.bundle_id)[0]
    seed = control_seed(spec)
    blank = _untrained_lab(final_id, *astuple(other)[1:-1], fresh_seed=seed)
    return match_labs(
        cache.bundle(spec.bundle_id).model,
        trained(spec),
        cache.bundle(other.bundle_id).model,
        trained(other),
        untrained=(_blank_model(final_id, seed), blank),
    )


@cache.per_prompt
def along(spec: Spec, ids: tuple[int, ...]) -> np.ndarray:
    """The feature activations at each prompt token: (T, F)."""
    found = trained(spec)
    return activations_along(cache.bundle(spec.bundle_id).model, found.sae, spec.hook, list(ids))


@cache.per_prompt
def steered(spec: Spec, ids: tuple[int, ...], feature: int, alpha: float, gen_seed: int):
    """(new tokens without steering, with alpha times the feature's largest activation along its
    direction), same sampling seed."""
    found = trained(spec)
    vector = alpha * float(found.table.max_act[feature]) * found.sae.direction(feature)
    model = cache.bundle(spec.bundle_id).model
    settings = SamplingSettings(temperature=0.8)
    return sae_steered(model, list(ids), spec.hook, vector, STEER_TOKENS, gen_seed, settings)
