"""One LayerNorm taken apart: what enters it, its mean and sigma, the normalized vector, gamma and beta.

    y = (x - mu) / sigma * gamma + beta,   mu = mean(x),   sigma = sqrt(mean((x - mu)^2) + eps)

`layernorm_names` lists a model's LayerNorms by module path (blocks.{l}.ln1, blocks.{l}.ln2, ln_final);
`input_name` says which residual enters each (it differs between pre-LN and post-LN blocks);
`layernorm_stats` returns everything about one of them on one prompt, as numpy.

Not here: charts (charts/layernorm.py); the residual stream across layers (analysis/residual.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from viz_model.cache import ActivationCache
from viz_model.model import GPT, LayerNorm


def layernorm_names(model: GPT) -> list[str]:
    """Module paths of every LayerNorm, in forward order."""
    names = []
    for i in range(model.cfg.n_layer):
        names.append(f"blocks.{i}.ln1")
        if not model.cfg.attn_only:
            names.append(f"blocks.{i}.ln2")
    if model.ln_final is not None:
        names.append("ln_final")
    return names


def place(model: GPT, ln: str) -> str:
    """Where a LayerNorm sits, for people: 'block 0, before attention'."""
    if ln == "ln_final":
        return "the final LayerNorm, before the unembedding"
    layer, which = ln.split(".")[1], ln.split(".")[2]
    pre = model.cfg.norm == "pre"
    part = "attention" if which == "ln1" else "the MLP"
    where = f"before {part}" if pre else f"after {part} and its residual add"
    return f"block {layer}, {where}"


def title(model: GPT, ln: str) -> str:
    """A LayerNorm named in a sentence: 'the LayerNorm of block 0, before attention'."""
    return place(model, ln) if ln == "ln_final" else f"the LayerNorm of {place(model, ln)}"


def describe(model: GPT, ln: str) -> str:
    """Where a LayerNorm sits, in words, with its short name: 'block 0, before attention (ln1)'."""
    return f"{place(model, ln)} ({ln.split('.')[-1]})"


def input_names(model: GPT, ln: str) -> list[str]:
    """The hooks whose sum is the vector entering `ln`.

    Pre-LN: ln1 reads resid_pre, ln2 reads resid_mid, ln_final reads the last resid_post.
    Post-LN: ln1 reads resid_pre + attn_out, ln2 reads resid_mid + mlp_out (the sum is not hooked).
    """
    if ln == "ln_final":
        return [f"blocks.{model.cfg.n_layer - 1}.hook_resid_post"]
    _, layer, which = ln.split(".")
    b = f"blocks.{layer}"
    if model.cfg.norm == "pre":
        return [f"{b}.hook_resid_pre" if which == "ln1" else f"{b}.hook_resid_mid"]
    if which == "ln1":
        return [f"{b}.hook_resid_pre", f"{b}.hook_attn_out"]
    return [f"{b}.hook_resid_mid", f"{b}.hook_mlp_out"]


def stats_names(model: GPT, ln: str) -> list[str]:
    """Every hook `layernorm_stats` needs for `ln`."""
    return input_names(model, ln) + [f"{ln}.hook_mean", f"{ln}.hook_scale", f"{ln}.hook_normalized"]


@dataclass
class LNStats:
    """One LayerNorm on one prompt. x, normalized, y: (T, D); mean, sigma: (T,); gamma, beta: (D,)."""

    name: str
    x: np.ndarray
    mean: np.ndarray
    sigma: np.ndarray
    normalized: np.ndarray
    gamma: np.ndarray
    beta: np.ndarray
    y: np.ndarray
    eps: float


def layernorm_stats(model: GPT, cache: ActivationCache, ln: str) -> LNStats:
    """The input, recorded mean/sigma/normalized, the weights and the output of LayerNorm `ln`."""
    module = model.get_submodule(ln)
    assert isinstance(module, LayerNorm)
    with torch.no_grad():
        x = sum(cache[n] for n in input_names(model, ln))
        normalized = cache[f"{ln}.hook_normalized"]
        gamma = module.weight
        beta = module.bias if module.bias is not None else torch.zeros_like(gamma)
        y = normalized * gamma + beta

    def np_(t: torch.Tensor) -> np.ndarray:
        return t.detach().float().cpu().numpy()

    return LNStats(
        name=ln,
        x=np_(x),
        mean=np_(cache[f"{ln}.hook_mean"][:, 0]),
        sigma=np_(cache[f"{ln}.hook_scale"][:, 0]),
        normalized=np_(normalized),
        gamma=np_(gamma),
        beta=np_(beta),
        y=np_(y),
        eps=module.eps,
    )


def resid_norm_profile(model: GPT, ids: list[int] | torch.Tensor) -> np.ndarray:
    """Mean residual norm over the prompt's tokens at each station (embed, after block l): (L + 1,).

    Pre-LN lets the residual stream grow from layer to layer; post-LN renormalises it every block.
    """
    n = model.cfg.n_layer
    names = [f"blocks.{i}.hook_resid_pre" for i in range(n)] + [f"blocks.{n - 1}.hook_resid_post"]
    _, cache = model.run_with_cache(torch.as_tensor(ids, dtype=torch.long), names=names)
    return cache.resid_stack().norm(dim=-1).mean(dim=-1).float().cpu().numpy()


def all_stats(model: GPT, ids: list[int]) -> dict[str, LNStats]:
    """`layernorm_stats` of every LayerNorm on a prompt, from one forward pass."""
    lns = layernorm_names(model)
    names = list(dict.fromkeys(n for ln in lns for n in stats_names(model, ln)))
    _, cache = model.run_with_cache(torch.tensor(ids, dtype=torch.long), names=names)
    return {ln: layernorm_stats(model, cache, ln) for ln in lns}


def stats_for(model: GPT, ids: list[int], ln: str) -> LNStats:
    """`layernorm_stats` of LayerNorm `ln` on a prompt (one forward pass)."""
    _, cache = model.run_with_cache(
        torch.tensor(ids, dtype=torch.long), names=stats_names(model, ln)
    )
    return layernorm_stats(model, cache, ln)
