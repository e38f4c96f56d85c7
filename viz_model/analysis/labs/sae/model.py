"""The sparse autoencoder: one module, so that what an SAE is reads on one screen.

An SAE rewrites each activation x (D,) as a sparse sum of F > D learned directions:

    f = ReLU(W_enc (x - b_dec) / s + b_enc)        (F,) feature activations, most of them 0
    x_hat = s * W_dec f + b_dec                     (D,) the reconstruction

W_dec's columns are kept at unit length (so a feature's size lives in f, not in its direction), and
s is a fixed scale, measured once, that makes the centred activations about 1 per dimension (so one
learning rate and one L1 coefficient suit every model). Sparsity comes from an L1 penalty on f or
from top-k (only the k largest pre-activations of each token are kept, the rest set to 0).

Not here: training it (training.py), the activations it reads (activations.py).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class SparseAutoencoder(nn.Module):
    """x (N, D) -> feature activations f (N, F) -> reconstruction x_hat (N, D); see the module doc."""

    def __init__(self, d_in: int, n_features: int, k: int = 0, seed: int = 0) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        w = torch.randn(d_in, n_features, generator=gen)
        w = w / w.norm(dim=0, keepdim=True)
        self.W_dec = nn.Parameter(w)  # (D, F), unit columns
        self.W_enc = nn.Parameter(w.T.clone())  # (F, D), tied at the start
        self.b_enc = nn.Parameter(torch.zeros(n_features))
        self.b_dec = nn.Parameter(torch.zeros(d_in))
        self.register_buffer("scale", torch.tensor(1.0))
        self.k = k

    @property
    def n_features(self) -> int:
        return self.W_dec.shape[1]

    def fit_input(self, x: torch.Tensor) -> None:
        """Start b_dec at the activations' mean and set the scale s: centred, |x - b_dec| ~ sqrt(D)."""
        with torch.no_grad():
            mean = x.mean(0)
            self.b_dec.copy_(mean)
            spread = ((x - mean) ** 2).sum(-1).mean() / x.shape[-1]
            self.scale.fill_(float(spread.sqrt().clamp_min(1e-8)))

    def pre(self, x: torch.Tensor) -> torch.Tensor:
        """Pre-activations W_enc (x - b_dec) / s + b_enc: (N, F)."""
        return ((x - self.b_dec) / self.scale) @ self.W_enc.T + self.b_enc

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Feature activations (N, F): ReLU of the pre-activations, only the k largest kept if k."""
        pre = self.pre(x)
        if not self.k:
            return F.relu(pre)
        top = pre.topk(min(self.k, pre.shape[-1]), dim=-1)
        return torch.zeros_like(pre).scatter(-1, top.indices, F.relu(top.values))

    def decode(self, f: torch.Tensor) -> torch.Tensor:
        """s * W_dec f + b_dec: (N, D)."""
        return self.scale * (f @ self.W_dec.T) + self.b_dec

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        f = self.encode(x)
        return self.decode(f), f

    def direction(self, feature: int) -> torch.Tensor:
        """What one unit of the feature adds to the activation: s * W_dec[:, feature] (D,)."""
        return (self.scale * self.W_dec[:, feature]).detach()

    @torch.no_grad()
    def normalize_decoder(self) -> None:
        self.W_dec.div_(self.W_dec.norm(dim=0, keepdim=True).clamp_min(1e-8))


def reconstruct(sae: SparseAutoencoder, x: torch.Tensor) -> torch.Tensor:
    """x_hat for activations of any leading shape (..., D)."""
    with torch.no_grad():
        return sae(x.reshape(-1, x.shape[-1]))[0].reshape(x.shape)
