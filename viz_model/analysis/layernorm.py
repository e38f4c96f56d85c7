"""One LayerNorm taken apart: what enters it, its mean and sigma, the normalized vector, gamma and beta.

    y = (x - mu) / sigma * gamma + beta,   mu = mean(x),   sigma = sqrt(mean((x - mu)^2) + eps)

`layernorm_names` lists a model's LayerNorms by module path (blocks.{l}.ln1, blocks.{l}.ln2, ln_final);
`input_name` says which residual enters each (it differs between pre-LN and post-LN blocks);
`layernorm_stats` returns everything about one of them on one prompt, as numpy.

The length of a LayerNorm's output, stated once here and used by every page: the normalized vector
has mean 0 and variance 1 over its D numbers, so its length is sqrt(D); multiplied entry by entry
by gamma it is about sqrt(D) * rms(gamma) = ||gamma|| (the length of the gain vector), exactly so
when every gamma_i is equal and beta = 0. `output_length_claim` checks that on a real LayerNorm.

`stream_lengths` measures the residual stream's mean length at each station, with each post-LN
block's closing gain length; `growth_claim`, `post_ln_gain_claim` and `pre_post_claim` turn those
numbers into the sentences the pages print (docs/ARCHITECTURE.md, Claims).

Not here: charts (charts/layernorm.py); the residual stream across layers (analysis/residual.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from viz_model.analysis.claims import Claim
from viz_model.analysis.residual import growth_claim  # noqa: F401  (re-exported for the pages)
from viz_model.model.cache import ActivationCache
from viz_model.model.gpt import GPT, LayerNorm


def layernorm_names(model: GPT) -> list[str]:
    """Module paths of every LayerNorm, in forward order: none in a model normalized by RMSNorm
    or not at all (config.norm_kind), whose page says so."""
    if model.cfg.norm_kind != "layernorm":
        return []
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

    Pre-LN: the stream is a running sum, whose length is whatever the sum comes to. Post-LN: after
    each block the stream is a LayerNorm's output, whose length that LayerNorm's gain sets.
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


# ---- claims about lengths -------------------------------------------------------------------------
GAIN_TOLERANCE = 0.15  # |length / ||gamma|| - 1| within which "about ||gamma||" is said
LONGER_MARGIN = 0.10  # one stream is called longer than another beyond this relative margin


def gain_length(model: GPT, ln: str) -> float:
    """||gamma|| of LayerNorm `ln`: sqrt(D) * rms(gamma), the length its output is about."""
    return float(model.get_submodule(ln).weight.detach().float().norm())


def output_length_claim(s: LNStats) -> Claim:
    """Is this LayerNorm's output about ||gamma|| = sqrt(D) rms(gamma) long, on this prompt?"""
    d = s.gamma.size
    length = float(np.linalg.norm(s.y, axis=-1).mean())
    gain = float(np.linalg.norm(s.gamma))
    rms = gain / np.sqrt(d)
    ratio = length / gain if gain > 0 else float("inf")
    made = abs(ratio - 1) <= GAIN_TOLERANCE
    numbers = dict(length=length, gain=gain, rms_gamma=rms, D=d, ratio=ratio, tol=GAIN_TOLERANCE)
    rule = (
        f"The normalized vector has mean 0 and variance 1 over its D = {d} numbers, so its "
        f"length is √D ≈ {np.sqrt(d):.2f} (a hair less, for ε); times γ it is about "
        f"√D · rms(γ) = ‖γ‖ = {gain:.2f} long (exactly so if every γᵢ were equal, β = 0 and "
        "ε = 0)."
    )
    if made:
        return Claim(
            f"{rule} Here the output's mean length over the prompt is {length:.2f}, within "
            f"{GAIN_TOLERANCE:.0%} of ‖γ‖.",
            True,
            numbers,
        )
    return Claim(
        f"{rule} Here the output's mean length over the prompt is {length:.2f}, {ratio:.2f} × ‖γ‖: "
        f"not within {GAIN_TOLERANCE:.0%}. The difference comes from β and from where the "
        "normalized vector's large entries fall (on large or on small γᵢ).",
        False,
        numbers,
    )


@dataclass(frozen=True)
class StreamLengths:
    """A model's residual stream on one prompt: mean length at each station (embed, after each
    block), and for post-LN the gain length ||gamma|| of the LayerNorm that closes each block."""

    norm: str  # "pre" or "post"
    lengths: np.ndarray  # (L + 1,)
    gains: np.ndarray  # (L,) post-LN: ||gamma|| of each block's last LayerNorm; pre-LN: empty


def stream_lengths(model: GPT, ids: list[int] | torch.Tensor) -> StreamLengths:
    """`resid_norm_profile` and, for a post-LN model, each block's closing ||gamma||."""
    cfg = model.cfg
    last = "ln1" if cfg.attn_only else "ln2"
    gains = [gain_length(model, f"blocks.{i}.{last}") for i in range(cfg.n_layer)]
    return StreamLengths(
        cfg.norm,
        resid_norm_profile(model, ids),
        np.array(gains if cfg.norm == "post" else [], dtype=float),
    )


def post_ln_gain_claim(s: StreamLengths, tol: float = GAIN_TOLERANCE) -> Claim:
    """Post-LN: is the stream's length after each block about the closing LayerNorm's ||gamma||?"""
    after = s.lengths[1:]
    ratio = after / s.gains
    made = bool(np.all(np.abs(ratio - 1) <= tol))
    pairs = ", ".join(f"{a:.2f} against {g:.2f}" for a, g in zip(after, s.gains, strict=True))
    numbers = {f"length_{i + 1}": float(a) for i, a in enumerate(after)}
    numbers |= {f"gain_{i}": float(g) for i, g in enumerate(s.gains)} | {"tol": tol}
    if made:
        return Claim(
            "After each block the post-LN stream is about as long as the gain ‖γ‖ of the "
            f"LayerNorm that closes the block ({pairs}), whatever came before it.",
            True,
            numbers,
        )
    return Claim(
        "After each block the post-LN stream's length and the closing LayerNorm's ‖γ‖ are "
        f"{pairs}: not all within {tol:.0%} of each other.",
        False,
        numbers,
    )


def pre_post_claim(
    pre: tuple[str, StreamLengths], post: tuple[str, StreamLengths], margin: float = LONGER_MARGIN
) -> Claim:
    """Which stream ends longer, after the last block (named models, on one prompt)."""
    (a, pa), (b, pb) = pre, post
    la, lb = float(pa.lengths[-1]), float(pb.lengths[-1])
    numbers = dict(pre_final=la, post_final=lb, margin=margin)
    if lb > la * (1 + margin) or la > lb * (1 + margin):
        longer, shorter, big, small = (b, a, lb, la) if lb > la else (a, b, la, lb)
        return Claim(
            f"After the last block the stream of {longer} is longer than that of {shorter} "
            f"({big:.2f} against {small:.2f}).",
            True,
            numbers,
        )
    return Claim(
        f"After the last block the two streams are about as long ({a}: {la:.2f}, {b}: {lb:.2f}; "
        f"within {margin:.0%}).",
        False,
        numbers,
    )
