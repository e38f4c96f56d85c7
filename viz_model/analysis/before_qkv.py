"""Attention before Q, K and V: softmax(x xᵀ / √d + mask) on the vectors a layer's attention reads,
beside a trained head's pattern, and how far apart the two are.

The lectures introduce attention first with no learned matrices: each token scores every key it
may read by the dot product of their vectors, x_i · x_j, and a softmax turns each row into
weights. Q, K and V then give three learned views of the same x: q = x W_Q, k = x W_K, v = x W_V.

- `attention_inputs(model, ids)`: (L, T, D), what each layer's W_Q, W_K and W_V read: the
  residual stream `blocks.{l}.hook_resid_pre` after the layer's `ln1` (pre-LN), or as it is
  (post-LN, or no normalization).
- `xx_patterns(x, causal)`: (L, T, T), softmax(x xᵀ / √D + mask) for each layer.
- `compare(xx, pattern, causal)`: for every head, how often x·x and the head put their largest
  weight on the token itself, and the mean total-variation distance between the two patterns.
- `before_qkv_claim(...)`: the sentence comparing them, held against the untrained twin.

    x = attention_inputs(model, ids)            # (L, T, D)
    xx = xx_patterns(x, model.cfg.causal)       # (L, T, T), rows sum to 1
    c = compare(xx, attention_run(model, ids).pattern, model.cfg.causal)
    c.self_xx[layer], c.self_head[layer, head], c.tv[layer, head]

Not here: the attention run itself (analysis/attention.py), charts, anything streamlit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.analysis.claims import Claim, as_printed
from viz_model.model.gpt import GPT
from viz_model.model.mask import attention_mask
from viz_model.model.norms import apply_norm

MIN_ROWS = 4  # query rows needed before the distance between two patterns is compared
TV_MARGIN = 0.10  # how far the trained head's distance must sit from its random twin's


def attention_inputs(model: GPT, ids: list[int] | torch.Tensor) -> np.ndarray:
    """(L, T, D): the vectors each layer's attention multiplies by W_Q, W_K and W_V."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    names = [f"blocks.{layer}.hook_resid_pre" for layer in range(model.cfg.n_layer)]
    _, cache = model.run_with_cache(ids, names=names)
    out = []
    with torch.no_grad():
        for layer, block in enumerate(model.blocks):
            x = cache[f"blocks.{layer}.hook_resid_pre"]
            if block.pre_norm:  # pre-LN: attn(ln1(x)); post-LN: attn(x), the norm comes after
                x = apply_norm(block.ln1, x)
            out.append(x.float().reshape(len(ids), -1).cpu().numpy())
    return np.stack(out)


def xx_patterns(x: np.ndarray, causal: bool) -> np.ndarray:
    """(L, T, T) from (L, T, D): softmax(x xᵀ / √D + mask), rows = queries, columns = keys.

    The same formula as a head's pattern with q and k both replaced by x itself."""
    x = torch.as_tensor(x, dtype=torch.float64)
    T, D = x.shape[-2], x.shape[-1]
    scores = x @ x.transpose(-1, -2) / math.sqrt(D)
    visible = torch.from_numpy(attention_mask(causal, T))
    scores = scores.masked_fill(~visible, float("-inf"))
    return torch.softmax(scores, dim=-1).numpy()


def query_rows(T: int, causal: bool) -> np.ndarray:
    """The query rows a comparison averages over: 1..T-1 with a causal mask (row 0 can only read
    itself, so both patterns agree there by force), every row without one."""
    return np.arange(1 if causal else 0, T)


def self_is_top(pattern: np.ndarray) -> np.ndarray:
    """(..., T) bool: the row's largest weight is on the token itself (a tie counts)."""
    diag = np.diagonal(pattern, axis1=-2, axis2=-1)
    return diag >= pattern.max(axis=-1)


@dataclass(frozen=True)
class Comparison:
    """x·x against every head on one prompt (L layers, H heads, n query rows: `query_rows`).

    self_xx: (L,) rows whose largest x·x weight is on the token itself; self_head: (L, H) the same
    for each head's pattern; tv: (L, H) the mean over rows of the total-variation distance
    ½ Σ_j |xx[t, j] − pattern[t, j]| (0: the same weights, 1: no key in common); chance_self: the
    rows a pattern that picks a visible key at random would count, Σ 1 / (keys row t reads).
    """

    self_xx: np.ndarray
    self_head: np.ndarray
    tv: np.ndarray
    n_rows: int
    chance_self: float


def compare(xx: np.ndarray, pattern: np.ndarray, causal: bool) -> Comparison:
    """xx (L, T, T) against pattern (L, H, T, T): see `Comparison`."""
    T = xx.shape[-1]
    rows = query_rows(T, causal)
    visible = attention_mask(causal, T)
    xx_rows = xx[:, rows]  # (L, n, T)
    head_rows = pattern[:, :, rows]  # (L, H, n, T)
    self_xx = self_is_top(xx)[:, rows].sum(axis=-1)
    self_head = self_is_top(pattern)[:, :, rows].sum(axis=-1)
    if len(rows):
        tv = 0.5 * np.abs(xx_rows[:, None] - head_rows).sum(axis=-1).mean(axis=-1)
    else:
        tv = np.full(pattern.shape[:2], np.nan)
    chance = float(sum(1 / visible[t].sum() for t in rows))
    return Comparison(self_xx, self_head, tv, len(rows), chance)


def top_key(row: np.ndarray) -> int:
    """The key a row of weights (or scores) puts most on; the earliest on a tie."""
    return int(np.argmax(row))


def before_qkv_claim(
    trained: Comparison, twin: Comparison, layer: int, head: int, name: str
) -> Claim:
    """What x·x does on this prompt, what head `name` does, and whether the distance between the
    two is the head's training or would be there with random weights too.

    The counts are stated as measured, with chance and the random twin's; the finding (made) is
    only that training moved the head closer to or further from x·x than its random weights sit,
    by at least TV_MARGIN on the two decimals printed."""
    n = trained.n_rows
    a, b = int(trained.self_xx[layer]), int(trained.self_head[layer, head])
    a0, b0 = int(twin.self_xx[layer]), int(twin.self_head[layer, head])
    numbers = {
        "rows": n,
        "self xx": a,
        "self head": b,
        "twin self xx": a0,
        "twin self head": b0,
        "chance self": trained.chance_self,
        "min_rows": MIN_ROWS,
        "margin": TV_MARGIN,
    }
    if n < MIN_ROWS:
        text = (
            f"This prompt gives {n} query row{'s' * (n != 1)} to compare x·x with {name} on; "
            f"{MIN_ROWS} are needed (with a causal mask the first token reads only itself, so "
            "its row does not count): type a longer prompt."
        )
        return Claim(text, False, numbers)
    tv, tv0 = as_printed(trained.tv[layer, head]), as_printed(twin.tv[layer, head])
    numbers |= {"tv": tv, "twin tv": tv0}
    counts = (
        f"softmax(x·xᵀ/√d) puts its largest weight on the token itself in **{a} of {n}** query "
        f"rows, and {name} in **{b} of {n}** (a key picked at random: {trained.chance_self:.1f} "
        f"of {n}). With random weights (the untrained twin), x·x does so in {a0} of {n} rows "
        f"and the same head in {b0} of {n}."
    )
    if min(a, a0) >= n / 2:
        counts += (
            " The diagonal wins with random weights too: it comes from the dot product "
            "(x·x = |x|², the most x·y can be for any y no longer than x), not from training."
        )
    gap = f"The mean distance between the two patterns is **{tv:.2f}** (0: the same weights, 1: no key in common)"
    if round(abs(tv - tv0), 2) < TV_MARGIN:
        text = (
            f"{counts} {gap}; with random weights it is {tv0:.2f}, within {TV_MARGIN:.2f}: this "
            "distance alone does not tell this head from a random one."
        )
        return Claim(text, False, numbers)
    moved = "further apart" if tv > tv0 else "closer together"
    text = (
        f"{counts} {gap}, against {tv0:.2f} with random weights: training put {name} and x·x "
        f"{abs(tv - tv0):.2f} {moved} (x·x changed too: it reads the trained vectors)."
    )
    return Claim(text, True, numbers)
