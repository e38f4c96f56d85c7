"""Attention: every head's pattern on a prompt, what each head is for, and one row's arithmetic.

- `attention_run(model, ids)` runs the model once and keeps, as numpy, what the attention page
  draws: patterns, scores, per-head q/k/v/z and each head's write into the residual.
- `head_scores(patterns, ids)` measures every head's role on that prompt: previous-token,
  first-token sink, self, induction, and the pattern's entropy; `head_roles` names each head.
- `query_arithmetic(q, k, v, W_O, query)` redoes one query row by hand, step by step:
  pattern = softmax(q k^T / sqrt(d_head) + mask), z = pattern @ v, result = z @ W_O.
- `repeated_random_tokens(vocab_size, length, seed)` is the standard induction test input.

Not here: charts (charts/attention.py) and anything streamlit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.model import GPT

ROLES = ("previous-token", "induction", "first-token sink", "self")
ROLE_THRESHOLD = 0.4

# One sentence per role, for the page's table.
ROLE_EXPLANATIONS = {
    "previous-token": "Each token looks mostly at the token just before it (position t-1).",
    "induction": (
        "A token looks at whatever followed an earlier copy of itself, so the model can continue a "
        "pattern it has seen before ('A B ... A' -> look at B)."
    ),
    "first-token sink": (
        "Attention piles up on position 0, a resting place when the head has nothing useful to do."
    ),
    "self": "Each token looks mostly at itself.",
    "mixed": f"No single role scores above {ROLE_THRESHOLD}: the head spreads its attention.",
}


# ---- one forward pass, kept as numpy --------------------------------------------------------


@dataclass(frozen=True)
class AttentionRun:
    """What one forward pass recorded in every attention layer (L layers, H heads, T tokens).

    pattern, scores: (L, H, T, T), queries down and keys across; masked scores are -inf.
    q, k, v, z: (L, T, H, E); result: (L, T, H, D), each head's write into the residual;
    W_O: (L, H, E, D), each head's slice of the output matrix.
    """

    pattern: np.ndarray
    scores: np.ndarray
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    z: np.ndarray
    result: np.ndarray
    W_O: np.ndarray


def head_W_O(model: GPT, layer: int) -> torch.Tensor:
    """(H, E, D): head h writes z_h @ W_O[h] into the residual (the output bias is shared)."""
    cfg = model.cfg
    w = model.blocks[layer].attn.out.weight  # (D, H*E), out = z_flat @ w.T
    return w.view(cfg.d_model, cfg.n_head, cfg.d_head).permute(1, 2, 0)


def attention_run(model: GPT, ids: list[int] | torch.Tensor) -> AttentionRun:
    """Run the model once on one sequence and keep every attention layer's internals as numpy."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    L = model.cfg.n_layer
    parts = ("hook_pattern", "hook_attn_scores", "hook_q", "hook_k", "hook_v", "hook_z")
    parts += ("hook_result",)
    names = [f"blocks.{layer}.attn.{p}" for layer in range(L) for p in parts]
    _, cache = model.run_with_cache(ids, names=names)

    def stack(part: str) -> np.ndarray:
        return np.stack([cache.numpy(f"blocks.{layer}.attn.{part}") for layer in range(L)])

    with torch.no_grad():
        W_O = np.stack([head_W_O(model, layer).float().cpu().numpy() for layer in range(L)])
    return AttentionRun(
        pattern=stack("hook_pattern"),
        scores=stack("hook_attn_scores"),
        q=stack("hook_q"),
        k=stack("hook_k"),
        v=stack("hook_v"),
        z=stack("hook_z"),
        result=stack("hook_result"),
        W_O=W_O,
    )


# ---- head roles ---------------------------------------------------------------------------


def induction_targets(ids: list[int] | np.ndarray) -> np.ndarray:
    """(T, T) bool: target[t, s + 1] is True when token s (s < t) is an earlier copy of token t.

    An induction head at query t attends to the token that followed an earlier occurrence of
    the current token. Example: ids = [5, 6, 5] -> target[2, 1] (the 6 after the first 5).
    """
    ids = np.asarray(ids)
    T = len(ids)
    target = np.zeros((T, T), dtype=bool)
    for t in range(T):
        for s in range(t):
            if ids[s] == ids[t]:
                target[t, s + 1] = True
    return target


@dataclass(frozen=True)
class HeadScores:
    """Each score is (L, H). Scores are means over query rows 1..T-1 (row 0 can only see itself).

    previous_token: attention to position t-1; first_token: attention to position 0;
    self_: attention to the diagonal; induction: attention to induction targets, averaged over
    the queries that have an earlier copy (NaN when no token repeats); entropy: nats per row.
    """

    previous_token: np.ndarray
    first_token: np.ndarray
    self_: np.ndarray
    induction: np.ndarray
    entropy: np.ndarray
    n_induction_queries: int

    def by_role(self) -> dict[str, np.ndarray]:
        return {
            "previous-token": self.previous_token,
            "induction": self.induction,
            "first-token sink": self.first_token,
            "self": self.self_,
        }


def pattern_entropy(pattern: np.ndarray) -> np.ndarray:
    """Entropy in nats of each row of a pattern (..., T, T): -sum p log p, with 0 log 0 = 0."""
    p = np.asarray(pattern, dtype=np.float64)
    logp = np.log(np.where(p > 0, p, 1.0))
    return -(p * logp).sum(-1)


def head_scores(patterns: np.ndarray, ids: list[int] | np.ndarray) -> HeadScores:
    """Role scores for every head from a pattern stack (L, H, T, T) on the prompt ids (T,)."""
    patterns = np.asarray(patterns, dtype=np.float64)
    T = patterns.shape[-1]
    if T < 2:
        nan = np.full(patterns.shape[:2], np.nan)
        return HeadScores(nan, nan, nan, nan, nan, 0)
    rows = np.arange(1, T)
    previous = patterns[..., rows, rows - 1].mean(-1)
    first = patterns[..., rows, 0].mean(-1)
    self_ = patterns[..., rows, rows].mean(-1)
    entropy = pattern_entropy(patterns)[..., 1:].mean(-1)
    target = induction_targets(ids)
    has_copy = target.any(-1)
    if has_copy.any():
        on_target = (patterns * target).sum(-1)  # (L, H, T)
        induction = on_target[..., has_copy].mean(-1)
    else:
        induction = np.full(patterns.shape[:2], np.nan)
    return HeadScores(previous, first, self_, induction, entropy, int(has_copy.sum()))


def head_roles(scores: HeadScores, threshold: float = ROLE_THRESHOLD) -> list[dict]:
    """One row per head: its role (the highest role score above threshold, else 'mixed') and scores."""
    by_role = scores.by_role()
    L, H = scores.previous_token.shape
    rows = []
    for layer in range(L):
        for head in range(H):
            values = {role: float(by_role[role][layer, head]) for role in ROLES}
            finite = {r: s for r, s in values.items() if not math.isnan(s)}
            best = max(finite, key=finite.get) if finite else None
            role = best if best is not None and finite[best] > threshold else "mixed"
            rows.append(
                {
                    "head": f"L{layer} H{head}",
                    "layer": layer,
                    "index": head,
                    "role": role,
                    "role score": finite.get(role, math.nan),
                    **values,
                    "entropy (nats)": float(scores.entropy[layer, head]),
                }
            )
    return rows


def repeated_random_tokens(
    vocab_size: int, length: int, seed: int = 0, repeats: int = 2
) -> np.ndarray:
    """`length` tokens drawn uniformly from the vocabulary, then the same block repeated.

    The standard test for induction heads: in the second copy every token has an earlier copy
    whose successor is known, so a head that copies patterns lights up on the offset diagonal.
    Returns (length * repeats,) int64.
    """
    rng = np.random.default_rng(seed)
    block = rng.integers(0, vocab_size, size=length)
    return np.tile(block, repeats).astype(np.int64)


# ---- one query row, by hand -----------------------------------------------------------------


@dataclass(frozen=True)
class QueryArithmetic:
    """Every step of one head's attention for one query token, as arrays (T keys, E = d_head).

    q (E,), k (T, E), v (T, E); dots = k @ q (T,); scaled = dots / sqrt(E); visible (T,) bool,
    True for keys at or before the query; masked = scaled with -inf where hidden;
    pattern = softmax(masked) (T,); weighted_v = pattern[:, None] * v (T, E);
    z = weighted_v.sum(0) (E,); W_O (E, D); result = z @ W_O (D,).
    """

    query: int
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    dots: np.ndarray
    scaled: np.ndarray
    visible: np.ndarray
    masked: np.ndarray
    pattern: np.ndarray
    weighted_v: np.ndarray
    z: np.ndarray
    W_O: np.ndarray
    result: np.ndarray

    @property
    def d_head(self) -> int:
        return self.q.shape[-1]


def query_arithmetic(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, W_O: np.ndarray, query: int
) -> QueryArithmetic:
    """Recompute one head's attention for one query from its q, k, v (T, E each) and W_O (E, D).

    Done in float64 with plain numpy, so a student can compare it with what the model recorded.
    """
    q64, k64, v64, w64 = (np.asarray(a, dtype=np.float64) for a in (q, k, v, W_O))
    T, E = k64.shape
    if not 0 <= query < T:
        raise IndexError(f"query {query} is outside 0..{T - 1}")
    q_row = q64[query]
    dots = k64 @ q_row
    scaled = dots / math.sqrt(E)
    visible = np.arange(T) <= query
    masked = np.where(visible, scaled, -np.inf)
    shifted = np.exp(masked - masked[visible].max())
    pattern = shifted / shifted.sum()
    weighted_v = pattern[:, None] * v64
    z = weighted_v.sum(0)
    return QueryArithmetic(
        query=query,
        q=q_row,
        k=k64,
        v=v64,
        dots=dots,
        scaled=scaled,
        visible=visible,
        masked=masked,
        pattern=pattern,
        weighted_v=weighted_v,
        z=z,
        W_O=w64,
        result=z @ w64,
    )


def run_query_arithmetic(run: AttentionRun, layer: int, head: int, query: int) -> QueryArithmetic:
    """query_arithmetic for one head of an AttentionRun."""
    return query_arithmetic(
        run.q[layer, :, head],
        run.k[layer, :, head],
        run.v[layer, :, head],
        run.W_O[layer, head],
        query,
    )


def recorded_differences(
    arith: QueryArithmetic, run: AttentionRun, layer: int, head: int
) -> dict[str, float]:
    """Largest absolute difference between each recomputed step and what the model recorded."""
    t = arith.query
    visible = arith.visible
    return {
        "hook_attn_scores": float(
            np.abs(arith.scaled[visible] - run.scores[layer, head, t][visible]).max()
        ),
        "hook_pattern": float(np.abs(arith.pattern - run.pattern[layer, head, t]).max()),
        "hook_z": float(np.abs(arith.z - run.z[layer, t, head]).max()),
        "hook_result": float(np.abs(arith.result - run.result[layer, t, head]).max()),
    }
