"""Damage, then retrain: a zero or mean ablation baked into a copy's weights, so the damaged model
can be saved and trained again.

Not here: the training job (serving/retrain.py).
"""

from __future__ import annotations

import copy

import torch

from viz_model.analysis.labs.interventions.ablation import Ablation
from viz_model.analysis.labs.interventions.forward import mlp_out_name, post_name, z_name
from viz_model.model.gpt import GPT


def damaged_copy(
    model: GPT, ablation: Ablation, means: dict[str, torch.Tensor] | None = None
) -> GPT:
    """A copy of the model whose weights carry out the ablation by themselves, so it can be saved
    and trained: a head's columns of W_O are zeroed (its mean write moves into the bias), an
    MLP layer's W_out and bias are zeroed (its mean becomes the bias), a neuron's column of W_out
    is zeroed (its mean write moves into the bias). Mean ablation needs `means` and biases."""
    if ablation.how == "mean" and (means is None or not model.cfg.bias):
        raise ValueError("mean ablation can be baked in only with reference means and biases")
    out = copy.deepcopy(model)
    E = model.cfg.d_head
    mean = ablation.how == "mean"
    with torch.no_grad():
        for layer, h in ablation.heads:
            lin = out.blocks[layer].attn.out
            cols = lin.weight[:, h * E : (h + 1) * E]  # (D, E)
            if mean:
                lin.bias += cols @ means[z_name(layer)][h]
            cols.zero_()
        for layer, n in ablation.neurons:
            lin = out.blocks[layer].mlp.fc_out
            if mean:
                lin.bias += lin.weight[:, n] * means[post_name(layer)][n]
            lin.weight[:, n] = 0.0
        for layer in ablation.mlps:
            lin = out.blocks[layer].mlp.fc_out
            lin.weight.zero_()
            if lin.bias is not None:
                lin.bias.copy_(means[mlp_out_name(layer)] if mean else torch.zeros_like(lin.bias))
    return out
