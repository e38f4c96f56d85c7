"""The baseline for "the model has / reaches / learned X": the same measurement on a model of the
same shape that learned nothing (docs/ARCHITECTURE.md, Claims). Its twin has the model's config and the
random weights its family starts from:

- the bundle's step-0 snapshot where it kept one (the very weights its training started from),
- else a fresh initialisation of the same config under a fixed seed (the run's own seed where the
  bundle records one, so it is the run's step 0 again; 0 otherwise). A fine-tune's step 0 is its
  base model, which learned plenty, so a fine-tune always gets the fresh initialisation.

    twin = untrained_twin(bundle)      # twin.model: same config, random weights
    twin.source                        # "its step-0 snapshot" or "a fresh initialisation (seed 0)"

Not here: the measurements themselves (each analysis module runs its own on both models), the
models' init rules (model/gpt.py, model/recurrent.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from viz_model.bundles.checkpoint import Bundle
from viz_model.model.families import LanguageModel, ModelConfig, build_model

DEFAULT_SEED = 0


@dataclass(frozen=True)
class Twin:
    """A model of the same shape that learned nothing, and where its weights came from."""

    model: LanguageModel
    source: str  # in words, for a caption: "its step-0 snapshot", "a fresh initialisation (seed 0)"


def fresh_model(cfg: ModelConfig, seed: int = DEFAULT_SEED) -> LanguageModel:
    """A model of `cfg` initialised as its family initialises one, under `seed`: the same weights
    for the same seed, and the global random state left as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = build_model(cfg)
    return model.eval()


def _is_finetune(bundle: Bundle) -> bool:
    """A run tuned from another model: its step 0 is that model, not random weights."""
    return bool(bundle.meta.get("base"))


def untrained_twin(bundle: Bundle, seed: int | None = None) -> Twin:
    """The model of `bundle`'s shape before any training: its step-0 snapshot where it has one
    (not a fine-tune), else `fresh_model` under `seed` (default: the run's recorded seed, else
    DEFAULT_SEED)."""
    if not _is_finetune(bundle) and 0 in bundle.snapshot_steps():
        return Twin(bundle.load_snapshot(0).eval(), "its step-0 snapshot")
    if seed is None:
        seed = int((bundle.train_config or {}).get("seed", DEFAULT_SEED))
    return Twin(fresh_model(bundle.config, seed), f"a fresh initialisation (seed {seed})")
