"""Ablation: knock out attention heads, whole MLP layers or single neurons (set to zero, or to
their mean over a reference text) and measure the next-token distribution and the held-out loss
before and after, with the noise of the change across stretches of the text; and the sweep that
ablates each head in turn.

Shapes: L layers, H heads, E d_head, D d_model, M d_mlp, V vocab, T tokens, N validation windows.
Not here: the sentences about the effects (claims.py), baking an ablation into weights
(damage.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from viz_model.analysis.labs.interventions.forward import (
    mlp_out_name,
    post_name,
    resid_names,
    resid_pre_name,
    run_from,
    z_name,
)
from viz_model.model.gpt import GPT
from viz_model.model.hooks import HookFn, HookPoint, ablate_heads, custom

HOW = ("zero", "mean")


# ---- what to ablate ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Ablation:
    """Which parts to knock out, and how: "zero" sets them to 0, "mean" to their mean over a
    reference text (or over the prompt itself when no reference means are given)."""

    heads: tuple[tuple[int, int], ...] = ()  # (layer, head)
    mlps: tuple[int, ...] = ()  # layers whose whole MLP output is removed
    neurons: tuple[tuple[int, int], ...] = ()  # (layer, neuron) of hook_post
    how: str = "zero"

    def __post_init__(self) -> None:
        if self.how not in HOW:
            raise ValueError(f"ablation must be 'zero' or 'mean', got {self.how!r}")

    @property
    def empty(self) -> bool:
        return not (self.heads or self.mlps or self.neurons)

    def describe(self) -> str:
        """Plain words: "heads L0H1, L1H3; MLP 1; neurons L0N5" (or "nothing")."""
        parts = []
        if self.heads:
            parts.append("head" + "s" * (len(self.heads) > 1) + " " + format_heads(self.heads))
        if self.mlps:
            parts.append("MLP " + ", ".join(str(layer) for layer in self.mlps))
        if self.neurons:
            parts.append("neurons " + format_neurons(self.neurons))
        return "; ".join(parts) or "nothing"


def format_heads(heads: Iterable[tuple[int, int]]) -> str:
    """[(0, 1), (1, 3)] -> "L0H1, L1H3"."""
    return ", ".join(f"L{layer}H{head}" for layer, head in heads)


def format_neurons(neurons: Iterable[tuple[int, int]]) -> str:
    return ", ".join(f"L{layer}N{n}" for layer, n in neurons)


_NEURON = re.compile(r"^\s*L?(\d+)\s*[N.:/ ]\s*(\d+)\s*$", re.IGNORECASE)


def parse_neurons(text: str, n_layer: int, d_mlp: int) -> tuple[list[tuple[int, int]], list[str]]:
    """Neurons written "L1N37, L0N5" (or "1.37"), sorted and unique, and a message per entry
    that could not be read or is out of range.

    >>> parse_neurons("L1N3, 0.2, x, L9N1", 2, 8)
    ([(0, 2), (1, 3)], ["'x' is not a neuron: write it like L1N37", 'L9N1: the model has layers 0-1'])
    """
    found, problems = set(), []
    for item in (s for s in re.split(r"[,;\n]+", text) if s.strip()):
        m = _NEURON.match(item)
        if not m:
            problems.append(f"{item.strip()!r} is not a neuron: write it like L1N37")
            continue
        layer, n = int(m.group(1)), int(m.group(2))
        if layer >= n_layer:
            problems.append(f"L{layer}N{n}: the model has layers 0-{n_layer - 1}")
        elif n >= d_mlp:
            problems.append(f"L{layer}N{n}: a layer has neurons 0-{d_mlp - 1}")
        else:
            found.add((layer, n))
    return sorted(found), problems


def parse_heads(text: str, n_layer: int, n_head: int) -> list[tuple[int, int]]:
    """Heads from the URL form "0.1,1.3" (layer.head); unreadable or out-of-range items dropped."""
    out = set()
    for item in str(text).split(","):
        m = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", item)
        if m and int(m.group(1)) < n_layer and int(m.group(2)) < n_head:
            out.add((int(m.group(1)), int(m.group(2))))
    return sorted(out)


def parse_ints(text: str, n: int) -> list[int]:
    """The ints 0..n-1 in a comma list ("0,2"), sorted, each once; others dropped."""
    return sorted({int(s) for s in str(text).split(",") if s.strip().isdigit() and int(s) < n})


def heads_to_url(heads: Iterable[tuple[int, int]]) -> str:
    return ",".join(f"{layer}.{head}" for layer, head in sorted(heads))


# ---- running with an ablation -----------------------------------------------------------------


def reference_means(model: GPT, ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """Each head's z (H, E), each MLP output (D,) and each neuron (M,) averaged over every token
    of `ids` ((T,) or (N, T), at most n_ctx long): what mean ablation puts in their place."""
    names = [z_name(layer) for layer in range(model.cfg.n_layer)]
    if not model.cfg.attn_only:
        names += [
            n for layer in range(model.cfg.n_layer) for n in (mlp_out_name(layer), post_name(layer))
        ]
    _, cache = model.run_with_cache(ids, names=names)
    # (N, T, ...) ids keep the batch axis in the cache: the mean runs over windows and positions
    return {
        name: (cache[name].flatten(0, 1) if cache.batched else cache[name]).mean(0)
        for name in names
    }


def _replace(x: torch.Tensor, value: torch.Tensor | None, cols: list[int] | None) -> torch.Tensor:
    """x (B, T, C) with columns `cols` (all when None) set to 0 or to value's; value is (C,) or
    None, meaning the mean over this call's own tokens."""
    out = x.clone()
    sel = slice(None) if cols is None else cols
    if value is None:
        out[..., sel] = x[..., sel].mean(dim=1, keepdim=True)
    else:
        out[..., sel] = value.to(x)[sel]
    return out


def ablation_hooks(
    model: GPT, ablation: Ablation, means: dict[str, torch.Tensor] | None = None
) -> list[tuple[str, HookFn]]:
    """The (hook name, fn) pairs that carry out `ablation`; mean ablation uses `means` (from
    reference_means) when given, else each call's own mean over its tokens."""
    mean = ablation.how == "mean"
    pairs: list[tuple[str, HookFn]] = []
    by_layer: dict[int, list[int]] = {}
    for layer, head in ablation.heads:
        by_layer.setdefault(layer, []).append(head)
    for layer, heads in sorted(by_layer.items()):
        m = means.get(z_name(layer)) if mean and means else None
        pairs += ablate_heads(layer, heads, ablation.how, means=m)
    for layer in ablation.mlps:
        value = None if mean else torch.zeros(model.cfg.d_model)
        if mean and means:
            value = means[mlp_out_name(layer)]
        pairs += custom(mlp_out_name(layer), lambda x, hook, v=value: _replace(x, v, None))
    neurons: dict[int, list[int]] = {}
    for layer, n in ablation.neurons:
        neurons.setdefault(layer, []).append(n)
    for layer, cols in sorted(neurons.items()):
        value = None if mean else torch.zeros(model.cfg.d_mlp)
        if mean and means:
            value = means[post_name(layer)]
        pairs += custom(post_name(layer), lambda x, hook, v=value, c=cols: _replace(x, v, c))
    return pairs


def validation_windows(ids: list[int], n_ctx: int, max_tokens: int = 512) -> torch.Tensor:
    """Cut a token list into whole windows of n_ctx + 1 tokens (inputs and their next tokens),
    at most max_tokens in all: (N, min(n_ctx, len - 1) + 1). One shorter window if it is short."""
    width = min(n_ctx, len(ids) - 1, max_tokens) + 1
    if width < 2:
        raise ValueError("the validation text needs at least two tokens")
    n = max(1, min(len(ids) // width, max(1, max_tokens // width)))
    return torch.tensor(ids[: n * width], dtype=torch.long).view(n, width)


@torch.no_grad()
def loss(model: GPT, windows: torch.Tensor, hooks: list[tuple[str, HookFn]] = ()) -> float:
    """Mean cross-entropy (nats per token) of predicting each next token in windows (N, T + 1)."""
    with model.intervene(hooks):
        logits = model(windows[:, :-1])  # (N, T, V)
    return float(F.cross_entropy(logits.flatten(0, 1), windows[:, 1:].flatten()))


@torch.no_grad()
def token_losses(
    model: GPT, windows: torch.Tensor, hooks: list[tuple[str, HookFn]] = ()
) -> np.ndarray:
    """Cross-entropy of each next token in windows (N, T + 1): (N, T) nats."""
    with model.intervene(hooks):
        logits = model(windows[:, :-1])  # (N, T, V)
    ce = F.cross_entropy(logits.flatten(0, 1).float(), windows[:, 1:].flatten(), reduction="none")
    return ce.view(windows.shape[0], -1).numpy()


N_CHUNKS = 16  # the held-out text is cut into this many stretches to measure the noise
MIN_CHUNK = 8  # tokens: stretches are never shorter (so a short text gives fewer)
NOISE_SE = 2.0  # a change is beyond noise when it is larger than this many standard errors


def chunk_se(diff: np.ndarray) -> tuple[float, int]:
    """(standard error, number of stretches) of the mean of a per-token change (..., n): the
    tokens in order are cut into up to N_CHUNKS stretches of at least MIN_CHUNK tokens, and the
    error is the spread of the stretches' means over sqrt(their number): how much the change
    would differ on another stretch of text. NaN below two stretches. Leading axes are kept."""
    diff = np.asarray(diff, dtype=float)
    n = diff.shape[-1]
    k = min(N_CHUNKS, n // MIN_CHUNK)
    if k < 2:
        return np.full(diff.shape[:-1], np.nan) if diff.ndim > 1 else float("nan"), k
    means = np.stack([c.mean(-1) for c in np.array_split(diff, k, axis=-1)], -1)
    se = means.std(-1, ddof=1) / np.sqrt(k)
    return (se if diff.ndim > 1 else float(se)), k


@torch.no_grad()
def last_probs(model: GPT, ids: list[int], hooks: list[tuple[str, HookFn]] = ()) -> np.ndarray:
    """The next-token probabilities after the prompt (V,)."""
    with model.intervene(hooks):
        logits = model(torch.tensor(ids, dtype=torch.long))[-1]
    return torch.softmax(logits.float(), -1).numpy()


@dataclass(frozen=True)
class Effect:
    """An intervention's effect: the next-token distribution and the validation loss, before and
    after."""

    p_before: np.ndarray  # (V,)
    p_after: np.ndarray  # (V,)
    loss_before: float
    loss_after: float
    change_se: float = float("nan")  # standard error of loss_change across stretches of text
    n_chunks: int = 0  # how many stretches it was measured on

    @property
    def loss_change(self) -> float:
        return self.loss_after - self.loss_before

    def changed_tokens(self, n: int) -> np.ndarray:
        """The n tokens most likely before or after, most likely before first."""
        score = np.maximum(self.p_before, self.p_after)
        top = np.argsort(-score, kind="stable")[:n]
        return top[np.argsort(-self.p_before[top], kind="stable")]

    def total_variation(self) -> float:
        """Half the sum of |p_after - p_before|: the share of probability that moved (0..1)."""
        return float(0.5 * np.abs(self.p_after - self.p_before).sum())


def effect(
    model: GPT, ids: list[int], windows: torch.Tensor, hooks: list[tuple[str, HookFn]]
) -> Effect:
    """The next token after `ids` and the loss on `windows`, without and with `hooks` (and the
    noise of the loss change across stretches of the windows)."""
    return effect_from(model, ids, windows, hooks, hooks)


def effect_from(
    model: GPT,
    ids: list[int],
    windows: torch.Tensor,
    hooks: list[tuple[str, HookFn]],
    window_hooks: list[tuple[str, HookFn]],
) -> Effect:
    """`effect`, with separate hooks for the prompt and the windows (positions depend on length)."""
    before, after = token_losses(model, windows), token_losses(model, windows, window_hooks)
    se, k = chunk_se((after - before).ravel())
    return Effect(
        last_probs(model, ids),
        last_probs(model, ids, hooks),
        float(before.mean()),
        float(after.mean()),
        se,
        k,
    )


# ---- ablating each head in turn ---------------------------------------------------------------


def _head_fn(how: str, H: int, N: int, mean: torch.Tensor | None) -> HookFn:
    """hook_z for H copies of a batch of N: copy h has head h ablated. z: (H * N, T, H, E)."""

    def fn(z: torch.Tensor, hook: HookPoint) -> torch.Tensor:
        z = z.clone().view(H, N, *z.shape[1:])
        for h in range(H):
            if how == "zero":
                z[h, :, :, h] = 0.0
            elif mean is not None:
                z[h, :, :, h] = mean[h].to(z)
            else:  # each window's own mean over its tokens
                z[h, :, :, h] = z[h, :, :, h].mean(dim=1, keepdim=True)
        return z.flatten(0, 1)

    return fn


@dataclass(frozen=True)
class HeadSweep:
    """Each head's ablation's loss increase (L, H), its standard error across stretches of the
    text (L, H; NaN when the text is too short) and the number of stretches."""

    increase: np.ndarray
    se: np.ndarray
    n_chunks: int


def head_sweep(
    model: GPT,
    windows: torch.Tensor,
    how: str = "zero",
    means: dict[str, torch.Tensor] | None = None,
) -> np.ndarray:
    """The validation loss increase when each head alone is ablated: (L, H)."""
    return head_sweep_stats(model, windows, how, means).increase


@torch.no_grad()
def head_sweep_stats(
    model: GPT,
    windows: torch.Tensor,
    how: str = "zero",
    means: dict[str, torch.Tensor] | None = None,
) -> HeadSweep:
    """The validation loss increase when each head alone is ablated, with its noise.

    One clean run records the residual stream entering each block; then, per layer, H copies of
    it (a batch of H * N windows, copy h with head h ablated) run from that block on. The sweep
    costs about (L + 1) / 2 forward passes of H * N windows instead of L.
    """
    L, H = model.cfg.n_layer, model.cfg.n_head
    x, y = windows[:, :-1], windows[:, 1:]
    N = x.shape[0]
    logits, cache = model.run_with_cache(x, names=resid_names(model)[:L])
    base = F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none").numpy()  # (N*T,)
    resid = {name: cache[name].view(N, *x.shape[1:], -1) for name in cache}  # (N, T, D) each
    diff = np.zeros((L, H, base.size))
    for layer in range(L):
        mean = None if how == "zero" else (means or {}).get(z_name(layer))
        with model.intervene(custom(z_name(layer), _head_fn(how, H, N, mean))):
            logits = run_from(model, layer, resid[resid_pre_name(layer)].repeat(H, 1, 1))
        ce = F.cross_entropy(logits.flatten(0, 1), y.repeat(H, 1).flatten(), reduction="none")
        diff[layer] = ce.view(H, -1).numpy() - base
    se, k = chunk_se(diff)
    return HeadSweep(diff.mean(-1), se, k)


def top_heads(scores: np.ndarray, k: int) -> list[tuple[int, int]]:
    """The (layer, head) of the k largest scores of an (L, H) grid, largest first."""
    order = np.argsort(-scores, axis=None, kind="stable")[:k]
    return [(int(i) // scores.shape[1], int(i) % scores.shape[1]) for i in order]
