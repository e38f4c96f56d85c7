"""Two SAEs' features matched (say, on two training snapshots of a model): each feature of one
against the feature of the other whose activations correlate most with it over the same tokens,
with the controls (shuffled tokens, an SAE on random weights) the page's claims need.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from viz_model.analysis.labs.sae.activations import collect
from viz_model.analysis.labs.sae.lab import Lab
from viz_model.analysis.labs.sae.model import SparseAutoencoder
from viz_model.model.gpt import GPT

MATCH_CORR = 0.7  # two features "are the same" when their activations correlate at least this much
MATCH_WINDOWS = 64  # browsing windows the two SAEs' activations are correlated over


@torch.no_grad()
def feature_acts(
    model: GPT, sae: SparseAutoencoder, name: str, windows: torch.Tensor
) -> torch.Tensor:
    """Every feature's activation at every token of windows (N, T): (N * T, F)."""
    return torch.cat(
        [sae.encode(collect(model, windows[i : i + 16], name)) for i in range(0, len(windows), 16)]
    )


def _standardise(a: torch.Tensor) -> torch.Tensor:
    """Columns centred and scaled to unit length (a silent column stays 0)."""
    a = a - a.mean(0)
    return a / a.norm(dim=0).clamp_min(1e-12)


def best_matches(acts_a: torch.Tensor, acts_b: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """For each feature of A (columns of (n, F_a)), the feature of B ((n, F_b), the same tokens)
    whose activations correlate most with it, and that correlation: ((F_a,) ids, (F_a,) r).
    Correlation over tokens does not care how each model's residual basis is turned, which a
    cosine between decoder directions of two different models would."""
    corr = _standardise(acts_a).T @ _standardise(acts_b)  # (F_a, F_b)
    r, idx = corr.max(1)
    return idx.numpy(), r.numpy()


def chance_matches(acts_a: torch.Tensor, acts_b: torch.Tensor, seed: int = 0) -> np.ndarray:
    """best_matches' correlations when B's tokens are shuffled: what matching finds by chance."""
    perm = torch.randperm(acts_b.shape[0], generator=torch.Generator().manual_seed(seed))
    return best_matches(acts_a, acts_b[perm])[1]


@dataclass(frozen=True)
class Matches:
    """Each feature of lab A's SAE against lab B's: its best match in B (F_a,), their correlation
    (F_a,), the same with B's tokens shuffled (F_a,), which of A's features fired at all, and
    its best correlation with an SAE trained the same way on a model of the same shape with
    random weights (F_a,), a model that learned nothing (None when none was given)."""

    best: np.ndarray
    r: np.ndarray
    chance: np.ndarray
    alive: np.ndarray
    tokens: int = 0  # how many tokens the activations were correlated over
    untrained: np.ndarray | None = None


def match_labs(
    model_a: GPT,
    lab_a: Lab,
    model_b: GPT,
    lab_b: Lab,
    untrained: tuple[GPT, Lab] | None = None,
) -> Matches:
    """Match two SAEs on one hook (say, of two training snapshots of a model) by how their
    features' activations correlate over lab A's first MATCH_WINDOWS browsing windows; with
    `untrained` (a model of the same shape with random weights, analysis/untrained.py, and an SAE
    trained on it the same way), A's features are matched against that one too."""
    windows = torch.tensor(
        lab_a.browse.ids[:MATCH_WINDOWS]
    )  # a copy: the cached array is read-only
    acts_a = feature_acts(model_a, lab_a.sae, lab_a.name, windows)
    acts_b = feature_acts(model_b, lab_b.sae, lab_b.name, windows)
    best, r = best_matches(acts_a, acts_b)
    alive = (acts_a > 0).any(0).numpy()
    blank = None
    if untrained is not None:
        model_c, lab_c = untrained
        blank = best_matches(acts_a, feature_acts(model_c, lab_c.sae, lab_c.name, windows))[1]
    return Matches(best, r, chance_matches(acts_a, acts_b), alive, int(windows.numel()), blank)


def same_weights(a: nn.Module, b: nn.Module) -> bool:
    """Whether two models hold the very same weights (a snapshot and the untrained twin read
    from it): matching an SAE against one trained the same way on the same weights says nothing."""
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(
        sa[k].shape == sb[k].shape and torch.equal(sa[k], sb[k]) for k in sa
    )
