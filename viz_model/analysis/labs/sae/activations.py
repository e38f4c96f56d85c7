"""What an SAE reads: the hook (`blocks.{l}.hook_resid_post` or `blocks.{l}.hook_mlp_out`) and the
activations there on windows of the model's own training text, read through `model.intervene`
so the shared model is never changed. Apart from training, since measuring, reading features and
matching read activations the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from viz_model.model.gpt import GPT
from viz_model.model.hooks import custom

SITES = {"resid_post": "the residual stream after block", "mlp_out": "the MLP output of block"}


def hook_name(layer: int, site: str = "resid_post") -> str:
    """The hook an SAE reads: `blocks.{layer}.hook_resid_post` or `blocks.{layer}.hook_mlp_out`."""
    if site not in SITES:
        raise ValueError(f"site must be one of {sorted(SITES)}, got {site!r}")
    return f"blocks.{layer}.hook_{site}"


class _Enough(Exception):
    """Raised by the recording hook: the later blocks' work is not needed."""


@torch.no_grad()
def collect(
    model: GPT,
    windows: torch.Tensor,
    name: str,
    batch_size: int = 64,
    progress: Callable[[float], None] | None = None,
) -> torch.Tensor:
    """The activation at hook `name` for every token of windows (N, T): (N * T, D) float32. The
    forward pass stops at the hook, so blocks after it cost nothing. `progress(share)` is called
    after each batch (a job's worker reports it, and may raise there to stop)."""
    model.check_names([name])
    out: list[torch.Tensor] = []

    def grab(x: torch.Tensor, hook) -> None:
        out.append(x.reshape(-1, x.shape[-1]).float().clone())
        raise _Enough

    for i in range(0, len(windows), batch_size):
        try:
            with model.intervene(custom(name, grab)):
                model(windows[i : i + batch_size])
        except _Enough:
            pass
        if progress is not None:
            progress(min(1.0, (i + batch_size) / len(windows)))
    return torch.cat(out)


def random_windows(stream: torch.Tensor, n_tokens: int, n_ctx: int, seed: int) -> torch.Tensor:
    """About n_tokens tokens of `stream` (1-D ids) as seeded random windows (N, n_ctx + 1): the
    inputs and the next tokens, as TokenData.batch cuts them."""
    width = min(n_ctx, stream.numel() - 1)
    n = max(1, math.ceil(n_tokens / width))
    gen = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, stream.numel() - width, (n,), generator=gen)
    return stream[starts[:, None] + torch.arange(width + 1)]
