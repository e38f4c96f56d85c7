"""Reading an SAE's features: each one's firing frequency and top snippets over browsing windows,
which to open on, the tokens its direction promotes, its activation along a prompt, and
steering with it. What the page's feature browser shows, apart from training and measuring.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from viz_model.analysis.labs.sae.activations import collect
from viz_model.analysis.labs.sae.model import SparseAutoencoder
from viz_model.model.gpt import GPT
from viz_model.model.hooks import HookFn, custom
from viz_model.model.sampling import SamplingSettings, generate


@dataclass(frozen=True)
class FeatureTable:
    """Over browsing windows (N, T): each feature's firing frequency (F,) (share of tokens where it
    is > 0), its largest activation (F,), and its top activations: values, window and position
    (F, k), largest first (these two past each window's first MIN_LEFT tokens)."""

    freq: np.ndarray
    max_act: np.ndarray
    top_values: np.ndarray
    top_window: np.ndarray
    top_position: np.ndarray


MIN_LEFT = 8  # a top snippet has at least this many tokens before its token (when windows allow)


@torch.no_grad()
def feature_table(
    model: GPT,
    sae: SparseAutoencoder,
    name: str,
    windows: torch.Tensor,
    k: int = 8,
    min_left: int = MIN_LEFT,
) -> FeatureTable:
    """Run the browsing windows (N, T) through the model and the SAE, keeping per feature only
    its count and its k largest activations (never the whole (N * T, F) table at once). The top
    activations skip each window's first min_left positions: a window starts mid-text, so its
    first tokens are read without their context, and a snippet there would show none."""
    N, T = windows.shape
    left = min(min_left, T - 1)
    counts = torch.zeros(sae.n_features)
    best_v = torch.full((k, sae.n_features), -1.0)
    best_i = torch.zeros((k, sae.n_features), dtype=torch.long)
    for i in range(0, N, 16):
        f = sae.encode(collect(model, windows[i : i + 16], name))  # (n * T, F)
        counts += (f > 0).sum(0)
        early = torch.arange(f.shape[0]) % T < left
        v = torch.cat([best_v, f.masked_fill(early[:, None], -1.0)])
        at = torch.cat([best_i, torch.arange(i * T, i * T + f.shape[0])[:, None].expand_as(f)])
        top = v.topk(k, dim=0)
        best_v, best_i = top.values, at.gather(0, top.indices)
    flat = best_i.T.numpy()
    return FeatureTable(
        freq=(counts / (N * T)).numpy(),
        max_act=best_v[0].clamp_min(0).numpy(),
        top_values=best_v.T.clamp_min(0).numpy(),
        top_window=flat // T,
        top_position=flat % T,
    )


def top_snippets(table: FeatureTable, feature: int, n: int) -> list[tuple[int, int]]:
    """Up to n (window, position) pairs of the feature's top activations, one per window (its
    strongest token there), strongest first: a window where it fires on five tokens shows once."""
    seen: dict[int, int] = {}
    for w, p, v in zip(
        table.top_window[feature],
        table.top_position[feature],
        table.top_values[feature],
        strict=True,
    ):
        if v > 0 and int(w) not in seen:
            seen[int(w)] = int(p)
    return list(seen.items())[:n]


def alive_by_frequency(table: FeatureTable) -> list[int]:
    """The features that fired on the browsing windows, most frequent first."""
    order = np.argsort(-table.freq, kind="stable")
    return [int(i) for i in order if table.freq[i] > 0]


DENSE = 0.2  # a feature firing on more than this share of tokens is rarely one concept
TYPICAL = 0.05  # the feature a page opens on fires on at most this share of tokens


def is_dense(table: FeatureTable, feature: int) -> bool:
    return bool(table.freq[feature] > DENSE)


def default_feature(table: FeatureTable) -> int | None:
    """The feature to open on: the most frequent one firing on at most TYPICAL of tokens. The
    most frequent features overall are often dense (a third of all tokens, promoting "]" and
    "1"), which reads as no concept; the rarest fire in one or two snippets. A feature just under
    5% is sparse enough to mean one thing and frequent enough to fill the snippets. When every
    alive feature fires more often, the rarest of them; None when none fired."""
    alive = alive_by_frequency(table)
    typical = [f for f in alive if table.freq[f] <= TYPICAL]
    return typical[0] if typical else (alive[-1] if alive else None)


def promoted_tokens(model: GPT, sae: SparseAutoencoder, feature: int, k: int = 10):
    """The tokens the feature's direction raises and lowers most, read through the final norm's
    centring and gain and the unembedding (the logit lens without the division by the stream's
    length, which scales every token alike): (raised, lowered), lists of (id, logit change)."""
    d = sae.direction(feature)
    ln = model.ln_final
    with torch.no_grad():
        if ln is not None:
            if hasattr(ln, "hook_mean"):  # LayerNorm centres; RMSNorm does not
                d = d - d.mean()
            d = d * ln.weight
        logits = (d @ model.W_U).numpy()
    order = np.argsort(-logits, kind="stable")
    pairs = [(int(i), float(logits[i])) for i in order]
    return pairs[:k], pairs[::-1][:k]


def readout_path(model: GPT) -> str:
    """What `promoted_tokens` reads a direction through, in words, for this model's final norm."""
    ln = model.ln_final
    if ln is None:
        return "the unembedding W_U (this model has no final norm)"
    if hasattr(ln, "hook_mean"):
        return "the final LayerNorm's centring and gain, then the unembedding W_U"
    return "the final RMSNorm's gain, then the unembedding W_U"


@torch.no_grad()
def activations_along(model: GPT, sae: SparseAutoencoder, name: str, ids: list[int]) -> np.ndarray:
    """Every feature's activation at every token of a prompt: (T, F)."""
    ids = ids[-model.cfg.n_ctx :]
    return sae.encode(collect(model, torch.tensor([ids]), name)).numpy()


def steering_hooks(name: str, vector: torch.Tensor) -> list[tuple[str, HookFn]]:
    """Add `vector` (D,) to the activation at `name`, at every position."""
    return custom(name, lambda x, hook: x + vector.to(x))


def steered(
    model: GPT,
    ids: list[int],
    name: str,
    vector: torch.Tensor,
    n_tokens: int,
    seed: int,
    settings: SamplingSettings | None = None,
) -> tuple[list[int], list[int]]:
    """(new tokens without steering, with `vector` added at `name`), same seed: the difference is
    the push."""
    settings = settings or SamplingSettings()
    plain = generate(model, ids, n_tokens, settings, seed)
    with model.intervene(steering_hooks(name, vector)):
        pushed = generate(model, ids, n_tokens, settings, seed)
    return plain, pushed


@torch.no_grad()
def feature_in_windows(
    model: GPT, sae: SparseAutoencoder, name: str, windows: torch.Tensor | np.ndarray, feature: int
) -> np.ndarray:
    """One feature's activation at every token of some windows (n, T), ids as a tensor or an
    array: (n, T)."""
    windows = torch.tensor(np.asarray(windows))  # a copy: a cached array is read-only
    f = sae.encode(collect(model, windows, name))[:, feature]
    return f.view(windows.shape).numpy()
