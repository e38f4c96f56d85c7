"""How far back a model's prediction reads: the sensitivity of its next-token log-probability to
each earlier token, by distance. Works on every family (a GPT, RNN, LSTM, GRU or causal CNN):

    g_k = mean over windows of || d ln p(x_T | x_1..x_T) / d e_(T-k) ||,   k = 0 .. T-1

where e_s is the token embedding the model read at position s (k = 0: the last token itself).
A CNN's g_k is exactly 0 past its receptive field; a GPT's can reach the whole context; a
recurrent model's usually fades with distance. The gradient is a local measure (how much a small
change of that token's vector would move the prediction), not an ablation. Its scale depends
on the embeddings' (a GPT's are about 50 times smaller than an LSTM's, so its gradients are
larger): compare families by the shape of the profile (`distance_holding`), not its height.

Not here: the models (model/), what a page says about the profile (a claim of its own).
"""

from __future__ import annotations

import copy

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def _embedding_grads(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x (N, T) ids, y (N,) the token after each window -> (N, T) the gradient norm of
    ln p(y | x) with respect to each position's token embedding.

    Runs on a copy of the model: the shared, cached model gets neither a hook (another session
    may be running it at this moment) nor a gradient."""
    probe = copy.deepcopy(model).eval()
    for p in probe.parameters():
        p.requires_grad_(False)
    kept: list[torch.Tensor] = []

    def keep(_module, _inputs, out):  # the embedding's output, made a leaf whose grad we read
        out = out.detach().requires_grad_(True)
        kept.append(out)
        return out

    probe.embed.register_forward_hook(keep)
    with torch.enable_grad():
        logits = probe(x)[:, -1]  # (N, V) after the last token of each window
        log_p = F.log_softmax(logits.float(), dim=-1).gather(1, y[:, None]).sum()
        (grad,) = torch.autograd.grad(log_p, kept[0])  # (N, T, D)
    return grad.norm(dim=-1)  # (N, T)


def reach_profile(model: nn.Module, windows: torch.Tensor) -> np.ndarray:
    """windows (N, T + 1) of token ids -> (T,) g_k for k = 0 .. T-1 (see the module docstring):
    each window's first T tokens are read, its last is the token predicted."""
    if windows.dim() != 2 or windows.shape[1] < 2:
        raise ValueError("give windows of at least two tokens, shaped (N, T + 1)")
    x, y = windows[:, :-1], windows[:, -1]
    grads = _embedding_grads(model, x, y)  # (N, T), position s
    return grads.mean(dim=0).flip(0).cpu().numpy()  # distance k = T - 1 - s


def distance_holding(profile: np.ndarray, share: float = 0.9) -> int:
    """The smallest distance K such that g_0 + ... + g_K is at least `share` of the whole
    profile's sum: e.g. 0.9 -> the distance within which 90% of the sensitivity lies."""
    if not 0.0 < share <= 1.0:
        raise ValueError(f"share must be in (0, 1], got {share}")
    values = np.asarray(profile, dtype=np.float64)
    total = float(values.sum())
    if total <= 0:
        return 0
    cumulative = np.cumsum(values) / total
    return min(int(np.searchsorted(cumulative, share - 1e-9)), len(values) - 1)
