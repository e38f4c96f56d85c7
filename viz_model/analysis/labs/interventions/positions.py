"""Positions: the position embeddings removed or shuffled, and each prompt token's surprisal with
or without that change.

Shapes: T tokens, V vocab.
"""

from __future__ import annotations

import numpy as np
import torch

from viz_model.model.gpt import GPT
from viz_model.model.hooks import HookFn, custom

POSITION_MODES = ("remove", "shuffle")


def position_hooks(model: GPT, mode: str, T: int, seed: int = 0) -> list[tuple[str, HookFn]]:
    """Zero the position embeddings ("remove"), or give the tokens the rows of the position table
    in a seeded random order ("shuffle"). A model without position embeddings has nothing to change."""
    if not model.cfg.adds_positions:
        return []
    if mode == "remove":
        return custom("hook_pos_embed", lambda x, hook: torch.zeros_like(x))
    if mode != "shuffle":
        raise ValueError(f"mode must be one of {POSITION_MODES}, got {mode!r}")
    order = shuffled_positions(T, seed)
    return custom("hook_pos_embed", lambda x, hook: x[:, order])


def shuffled_positions(T: int, seed: int) -> torch.Tensor:
    """A seeded permutation of 0..T-1 that moves at least one position when T > 1."""
    gen = torch.Generator().manual_seed(seed)
    order = torch.randperm(T, generator=gen)
    if T > 1 and bool((order == torch.arange(T)).all()):
        order = order.roll(1)
    return order


@torch.no_grad()
def surprisals(model: GPT, ids: list[int], hooks: list[tuple[str, HookFn]] = ()) -> np.ndarray:
    """-log p of each prompt token given those before it (T,), NaN for the first."""
    with model.intervene(hooks):
        logits = model(torch.tensor(ids, dtype=torch.long))
    logp = torch.log_softmax(logits.float(), -1)[:-1]
    out = -logp.gather(1, torch.tensor(ids[1:])[:, None])[:, 0]
    return np.concatenate([[np.nan], out.numpy()])
