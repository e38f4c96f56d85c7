"""Measuring a trained SAE on held-out text: the variance it explains, how many features fire per
token, and what splicing its reconstruction into the model costs in the next-token loss against
mean-ablating the hook. The numbers the page's first claims are decided on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from viz_model.analysis.labs.sae.activations import collect
from viz_model.analysis.labs.sae.model import SparseAutoencoder, reconstruct
from viz_model.model.gpt import GPT
from viz_model.model.hooks import HookFn, custom


def fve(x: torch.Tensor, x_hat: torch.Tensor) -> float:
    """Fraction of variance explained: 1 - sum |x - x_hat|^2 / sum |x - mean(x)|^2 over tokens
    (N, D). 1 is perfect; 0 is no better than the mean activation."""
    x, x_hat = x.double(), x_hat.double()
    return float(1 - ((x - x_hat) ** 2).sum() / ((x - x.mean(0)) ** 2).sum())


def splice_hooks(sae: SparseAutoencoder, name: str) -> list[tuple[str, HookFn]]:
    """Replace the activation at `name` by the SAE's reconstruction, at every position."""
    return custom(name, lambda x, hook: reconstruct(sae, x).to(x))


def mean_ablation_hooks(name: str, mean: torch.Tensor) -> list[tuple[str, HookFn]]:
    """Replace the activation at `name` by a fixed mean activation (D,), at every position."""
    return custom(name, lambda x, hook: mean.to(x).expand_as(x).clone())


@torch.no_grad()
def next_token_loss(
    model: GPT, windows: torch.Tensor, hooks: list[tuple[str, HookFn]] = ()
) -> float:
    """Mean cross-entropy (nats per token) of each next token in windows (N, T + 1)."""
    total, count = 0.0, 0
    for i in range(0, len(windows), 32):
        w = windows[i : i + 32]
        with model.intervene(hooks):
            logits = model(w[:, :-1])
        ce = F.cross_entropy(logits.flatten(0, 1).float(), w[:, 1:].flatten(), reduction="sum")
        total, count = total + float(ce), count + w[:, 1:].numel()
    return total / count


@dataclass(frozen=True)
class SAEMetrics:
    """Measured on held-out windows: fve and l0 (mean active features per token) of the
    reconstruction; the next-token loss clean, with the reconstruction spliced in, and with the
    hook mean-ablated (its mean activation over the training tokens at every position)."""

    fve: float
    l0: float
    n_dead: int
    n_features: int
    clean_loss: float
    spliced_loss: float
    ablated_loss: float
    tokens: int

    @property
    def n_alive(self) -> int:
        return self.n_features - self.n_dead

    @property
    def loss_recovered(self) -> float:
        """(ablated - spliced) / (ablated - clean): 1 when splicing costs nothing, 0 when the SAE
        is worth no more than the mean. NaN when ablating costs nothing."""
        worth = self.ablated_loss - self.clean_loss
        return (self.ablated_loss - self.spliced_loss) / worth if worth > 0 else float("nan")


def evaluate(
    model: GPT,
    sae: SparseAutoencoder,
    name: str,
    windows: torch.Tensor,
    mean: torch.Tensor,
    dead: np.ndarray,
) -> SAEMetrics:
    """The SAE's metrics on held-out windows (N, T + 1); `mean` the training mean at `name`."""
    acts = collect(model, windows[:, :-1], name)
    with torch.no_grad():
        x_hat, f = sae(acts)
    return SAEMetrics(
        fve=fve(acts, x_hat),
        l0=float((f > 0).sum(-1).float().mean()),
        n_dead=int(np.asarray(dead).sum()),
        n_features=sae.n_features,
        clean_loss=next_token_loss(model, windows),
        spliced_loss=next_token_loss(model, windows, splice_hooks(sae, name)),
        ablated_loss=next_token_loss(model, windows, mean_ablation_hooks(name, mean)),
        tokens=int(acts.shape[0]),
    )
