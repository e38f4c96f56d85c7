"""What the block's newer parts change, measured on two models (Architecture contrasts, issue 25).

- `extrapolation(model, val_ids, length)`: the mean loss at each position of windows `length`
  tokens long, longer than the model's training context: positions given inside attention (RoPE,
  ALiBi, none) can be read that far, a learned or sinusoidal table only up to n_ctx (NaN after).
  `extrapolation_claim` says what happened past n_ctx, against the loss just before it.
- `kv_bytes_per_token(model)`: the KV cache's memory per token, measured by running the model
  with a real cache (keys and values of every layer); `kv_claim` compares two models.

Not here: charts (charts/contrasts.py), the bundles (scripts/train_bundled_models.sh).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from viz_model.analysis.claims import Claim
from viz_model.model.gpt import GPT, KVCache

EXTRAPOLATION_MARGIN = 0.1  # nats: a loss past n_ctx "rises" only beyond this over the one before
WINDOWS = 64  # validation windows averaged per position (fewer leave each point noisy)


def windows(val_ids: torch.Tensor, length: int, n: int = WINDOWS) -> torch.Tensor:
    """(n, length) windows spread evenly over the validation tokens (fewer when they are short)."""
    last = val_ids.numel() - length - 1
    if last < 0:
        raise ValueError(
            f"the validation text has {val_ids.numel()} tokens, fewer than {length + 1}"
        )
    starts = np.unique(np.linspace(0, last, n).astype(int))
    return torch.stack([val_ids[s : s + length + 1] for s in starts])


@torch.no_grad()
def extrapolation(model: GPT, val_ids: torch.Tensor, length: int) -> np.ndarray:
    """(length,) mean loss in nats predicting token t+1 at each position t over `windows`; NaN
    at positions the model cannot read (past its max_len: a position table ends at n_ctx)."""
    batch = windows(val_ids, length)  # (n, length + 1)
    readable = min(length, model.cfg.max_len)
    x, y = batch[:, :readable], batch[:, 1 : readable + 1]
    loss = F.cross_entropy(model(x).transpose(1, 2), y, reduction="none").mean(0)  # (readable,)
    out = np.full(length, np.nan)
    out[:readable] = loss.float().numpy()
    return out


def extrapolation_claim(name: str, profile: np.ndarray, n_ctx: int, pos: str) -> Claim:
    """Past the training context: the mean loss over positions n_ctx..2 n_ctx-1 against the mean
    over the last half of the context (n_ctx/2..n_ctx-1, where a model has seen plenty), with a
    margin of EXTRAPOLATION_MARGIN nats."""
    half, beyond_end = n_ctx // 2, min(2 * n_ctx, len(profile))
    inside = float(np.mean(profile[half:n_ctx]))
    numbers = {"inside": inside, "margin": EXTRAPOLATION_MARGIN, "n_ctx": float(n_ctx)}
    if beyond_end <= n_ctx or np.isnan(profile[n_ctx:beyond_end]).all():
        text = (
            f"**{name}** ({pos} positions) has no position vector past {n_ctx}: it cannot read a "
            "longer window at all (a longer text is read in windows of its context)."
        )
        return Claim(text, False, numbers)
    beyond = float(np.nanmean(profile[n_ctx:beyond_end]))
    numbers["beyond"] = beyond
    span = f"positions {n_ctx}–{beyond_end - 1}"
    if beyond > inside + EXTRAPOLATION_MARGIN:
        text = (
            f"**{name}** ({pos}): past its training context the loss rises, from {inside:.2f} "
            f"nats (positions {half}–{n_ctx - 1}) to {beyond:.2f} ({span}): it reads positions it "
            "never trained on worse than those it did."
        )
        return Claim(text, True, numbers)
    text = (
        f"**{name}** ({pos}): {inside:.2f} nats on positions {half}–{n_ctx - 1}, {beyond:.2f} on "
        f"{span}: within {EXTRAPOLATION_MARGIN} nats or lower, so here it holds past the length "
        "it trained on."
    )
    return Claim(text, True, numbers)


@torch.no_grad()
def kv_bytes_per_token(model: GPT, T: int | None = None) -> float:
    """Bytes the KV cache holds per token: run T tokens (default n_ctx) through the model with a
    real cache and count its keys and values, every layer, at the weights' precision."""
    T = model.cfg.n_ctx if T is None else T
    kv = KVCache(model.cfg.n_layer)
    model(torch.zeros(1, T, dtype=torch.long), kv)
    held = sum(t.numel() * t.element_size() for t in (*kv.k, *kv.v) if t is not None)
    return held / T


def kv_claim(named: Sequence[tuple[str, float, int]]) -> Claim:
    """Two models' KV memory per token, (name, bytes per token, key-value heads) each; the first
    the usual multi-head one. A measured ratio, said with what makes it."""
    (a, bytes_a, heads_a), (b, bytes_b, heads_b) = named
    ratio = bytes_a / bytes_b
    numbers = {"bytes_a": bytes_a, "bytes_b": bytes_b, "ratio": ratio}
    text = f"Per token the cache of **{a}** holds {bytes_a:,.0f} bytes, that of **{b}** {bytes_b:,.0f}: "
    text += f"{ratio:.1f} times less" if bytes_b < bytes_a else f"{1 / ratio:.1f} times more"
    if abs(ratio - heads_a / heads_b) < 1e-9:
        text += f", as many times as it has fewer key-value heads ({heads_a} against {heads_b})"
    text += ". The queries are not cached, so they cost nothing here."
    return Claim(text, bytes_b < bytes_a, numbers)
