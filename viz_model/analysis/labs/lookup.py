"""Attention as a dictionary look-up: one head's query answered three ways, and why sqrt(d_head).

A Python dict answers d[q] only when q equals a key exactly. Attention's keys and queries are
vectors, which are never exactly equal, so it relaxes the look-up in two steps:

    exact    the other positions holding the same token as the query (a dict on the tokens)
    nearest  the one key with the largest q . k: a hard choice, argmax
    soft     softmax(q . k / sqrt(d_head)): every key gets a weight, the values are blended

`lookup(q, k, v, ids, query, causal)` answers one query all three ways over the keys it may read
(itself and the earlier ones in a causal model, every position without the mask), and with softmax
of the unscaled q . k, to show what the scaling is for. `spread(scores, d_head)` measures how wide q . k is with
and without the scaling on a real head; `random_spread(ds)` shows the reason on random vectors:
for q, k with independent unit-variance entries, var(q . k) = d, so q . k / sqrt(d) has spread 1
whatever the width, and the softmax neither saturates to an argmax nor flattens as d grows.

Not here: the head's vectors (analysis/labs/block.py, block_walk); charts (charts/block/lookup.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from viz_model.model.config import GPTConfig
from viz_model.model.mask import attention_mask


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


@dataclass(frozen=True)
class Lookup:
    """One query (position `query`) of one head against the n keys it may read: positions
    0..query in a causal model, every position 0..T-1 in a model without the mask.

    keys (n,): those positions; dots (n,): q . k; weights: name -> (n,) weights over the keys
    ("exact" is all zeros when no other readable position holds the query's token); outputs:
    name -> (E,) the weighted sum of the values, or None for an exact look-up that found nothing.
    """

    query: int
    d_head: int
    keys: np.ndarray
    dots: np.ndarray
    weights: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray | None]

    @property
    def matches(self) -> list[int]:
        """Positions of the exact matches (other positions holding the query's token)."""
        return [int(self.keys[i]) for i in np.flatnonzero(self.weights["exact"])]


def lookup(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, ids, query: int, causal: GPTConfig | bool
) -> Lookup:
    """One head's query answered by exact match, argmax and softmax; q, k, v (T, E), ids (T,).
    causal: the model's config (or its flag), which says which keys the query may read."""
    T, E = q.shape
    keys = np.flatnonzero(attention_mask(causal, T)[query])
    ids = np.asarray(ids)
    dots = k[keys] @ q[query]
    same = (ids[keys] == ids[query]) & (keys != query)  # other copies, not itself
    n = len(keys)
    weights = {
        "exact": same / same.sum() if same.any() else np.zeros(n),
        "nearest": np.eye(n)[int(np.argmax(dots))],
        "soft": softmax(dots / math.sqrt(E)),
        "soft, unscaled": softmax(dots),
    }
    outputs = {name: w @ v[keys] for name, w in weights.items()}
    if not same.any():
        outputs["exact"] = None
    return Lookup(query, E, keys, dots, weights, outputs)


def default_query(ids) -> int:
    """The last position whose token also appears earlier (so all three look-ups have an answer),
    else the last position."""
    ids = list(ids)
    for t in range(len(ids) - 1, 0, -1):
        if ids[t] in ids[:t]:
            return t
    return len(ids) - 1


@dataclass(frozen=True)
class Spread:
    """q . k over every visible (query, key) pair of a head, unscaled and divided by sqrt(E),
    with their standard deviations and the softmax's mean largest weight and entropy either way."""

    raw: np.ndarray
    scaled: np.ndarray
    std_raw: float
    std_scaled: float
    max_weight_raw: float
    max_weight_scaled: float
    entropy_raw: float
    entropy_scaled: float


def _row_stats(scores: np.ndarray) -> tuple[float, float]:
    """Mean largest weight and mean entropy (nats) of softmax over each row (T, T, -inf masked),
    over rows 1.. (row 0 of a causal model sees one key)."""
    z = scores[1:] - scores[1:].max(-1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(-1, keepdims=True)
    logp = np.log(np.where(p > 0, p, 1.0))
    return float(p.max(-1).mean()), float(-(p * logp).sum(-1).mean())


def spread(scores: np.ndarray, d_head: int) -> Spread:
    """How wide one head's scores are with and without the scaling; scores (T, T) as the model
    computes them (q . k / sqrt(d_head), -inf where its mask hides a key). Needs T >= 2."""
    visible = np.isfinite(scores)
    scaled = scores[visible]
    unscaled = np.where(visible, scores * math.sqrt(d_head), -np.inf)
    max_raw, ent_raw = _row_stats(unscaled)
    max_scaled, ent_scaled = _row_stats(scores)
    return Spread(
        raw=unscaled[visible],
        scaled=scaled,
        std_raw=float(unscaled[visible].std()),
        std_scaled=float(scaled.std()),
        max_weight_raw=max_raw,
        max_weight_scaled=max_scaled,
        entropy_raw=ent_raw,
        entropy_scaled=ent_scaled,
    )


def random_spread(ds: list[int], n: int = 4000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(std of q . k, std of q . k / sqrt(d)) for n random pairs with N(0, 1) entries, per width d.
    The first grows like sqrt(d); the second stays near 1."""
    rng = np.random.default_rng(seed)
    raw, scaled = [], []
    for d in ds:
        dots = (rng.standard_normal((n, d)) * rng.standard_normal((n, d))).sum(-1)
        raw.append(dots.std())
        scaled.append((dots / math.sqrt(d)).std())
    return np.array(raw), np.array(scaled)
