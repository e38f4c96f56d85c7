"""The hook names the interventions write to, and the rest of a forward pass from one block.

`run_from` is what the head sweep (ablation.py) and the patching (activation_patching.py) share:
copies of a run that differ only from block `layer` on need not recompute the blocks before it.
Shapes: B batch, T tokens, D d_model, V vocab.
Not here: the hook points themselves (viz_model/model/hooks.py).
"""

from __future__ import annotations

import torch

from viz_model.model.gpt import GPT


def z_name(layer: int) -> str:
    return f"blocks.{layer}.attn.hook_z"


def mlp_out_name(layer: int) -> str:
    return f"blocks.{layer}.hook_mlp_out"


def post_name(layer: int) -> str:
    return f"blocks.{layer}.mlp.hook_post"


def resid_pre_name(layer: int) -> str:
    return f"blocks.{layer}.hook_resid_pre"


def run_from(model: GPT, layer: int, resid: torch.Tensor, last_only: bool = False) -> torch.Tensor:
    """The rest of the forward pass from the residual stream entering block `layer` (B, T, D):
    blocks layer.. L-1, the final norm, the unembedding -> logits (B, T, V), or (B, 1, V) for the
    last position only. Hooks of the active context still apply. `layer` = L runs no block.

    What the sweep and the patching share: copies that differ only from block `layer` on need
    not recompute the blocks before it."""
    x = resid
    for block in model.blocks[layer:]:
        x = block(x)
    if last_only:
        x = x[:, -1:]
    return model.unembed(model.final_norm(x))


def resid_names(model: GPT) -> list[str]:
    """The residual stream entering each block, then leaving the last: L + 1 names."""
    L = model.cfg.n_layer
    return [resid_pre_name(layer) for layer in range(L)] + [f"blocks.{L - 1}.hook_resid_post"]
