"""The normalizations a block may use (config.NORM_KINDS): LayerNorm, RMSNorm, or none.

LayerNorm (GPT-2): y = (x - mu) / sigma * gamma + beta, sigma = sqrt(var(x) + eps).
RMSNorm (Llama):   y = x / rms * gamma,                  rms = sqrt(mean(x^2) + eps).
RMSNorm skips the centring and the bias: cheaper, and in practice as good. Both record their
scale and their normalized vector; only LayerNorm has a mean to record.

Not here: where a norm sits in the block (gpt.Block: pre- or post-LN).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from viz_model.model.hooks import HookPoint, active_context


class LayerNorm(nn.Module):
    """LayerNorm whose mean, scale (sigma) and normalized vector can be recorded.

    y = (x - mu) / sigma * gamma + beta, with sigma = sqrt(var(x) + eps).
    """

    def __init__(self, d: int, bias: bool, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))  # gamma
        self.bias = nn.Parameter(torch.zeros(d)) if bias else None  # beta
        self.hook_mean = HookPoint()  # (B, T, 1)
        self.hook_scale = HookPoint()  # (B, T, 1)
        self.hook_normalized = HookPoint()  # (B, T, D), before gamma and beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ctx = active_context()
        hooks = (self.hook_mean, self.hook_scale, self.hook_normalized)
        if ctx is None or not any(ctx.wants(h.name) for h in hooks):
            return F.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)
        # Two means rather than torch.var_mean, which is ~10x slower on CPU at these sizes.
        mean = self.hook_mean(x.mean(-1, keepdim=True))
        centred = x - mean
        scale = self.hook_scale(((centred * centred).mean(-1, keepdim=True) + self.eps).sqrt())
        normalized = self.hook_normalized(centred / scale)
        if self.bias is None:
            return normalized * self.weight
        return torch.addcmul(self.bias, normalized, self.weight)


class RMSNorm(nn.Module):
    """RMSNorm whose scale (the root mean square) and normalized vector can be recorded.

    y = x / rms * gamma, with rms = sqrt(mean(x^2) + eps). No mean is taken away, no bias added.
    """

    bias = None  # what LayerNorm's readers look for: RMSNorm has no beta

    def __init__(self, d: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))  # gamma
        self.hook_scale = HookPoint()  # (B, T, 1)
        self.hook_normalized = HookPoint()  # (B, T, D), before gamma

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ctx = active_context()
        hooks = (self.hook_scale, self.hook_normalized)
        if ctx is None or not any(ctx.wants(h.name) for h in hooks):
            return F.rms_norm(x, x.shape[-1:], self.weight, self.eps)
        scale = self.hook_scale(((x * x).mean(-1, keepdim=True) + self.eps).sqrt())
        return self.hook_normalized(x / scale) * self.weight


Norm = LayerNorm | RMSNorm


def make_norm(kind: str, d: int, bias: bool) -> Norm | None:
    """The normalization `kind` names (config.NORM_KINDS), None for "none"."""
    if kind == "layernorm":
        return LayerNorm(d, bias)
    if kind == "rmsnorm":
        return RMSNorm(d)
    return None


def apply_norm(norm: Norm | None, x: torch.Tensor) -> torch.Tensor:
    return x if norm is None else norm(x)
