"""Training dynamics: how each head's role and the model's copying change over its training, read
from the snapshots a bundle keeps (weights at log-spaced steps, plus any asked for).

- `probe(tokenizer, meta, n_ctx)`: the fixed input every snapshot is measured on: a few repeated
  random sequences, the Attention page's induction test (same tokens, same copy length), (B, 2k).
- `measure(model, ids)`: one model's numbers on that input: the head-role scores of
  analysis/attention.py averaged over the sequences, and the loss and copy accuracy on the first
  copy (unpredictable) and the second (predictable only by copying).
- `dynamics(steps, load, ids)`: `measure` for every step's model, stacked by step.
- `formation_step(steps, first, second)`: the first step where copying is half learned.

Not here: charts (charts/dynamics.py), streamlit, caching (the page caches by bundle id).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from viz_model.analysis.attention import (
    HeadScores,
    head_scores,
    induction_test,
    repeated_random_tokens,
)
from viz_model.model import GPT
from viz_model.tokenization import Tokenizer

N_PROBES = 32  # sequences averaged at every step: one random sequence is a noisy measurement
# The four scores drawn against step: the named roles of the Attention page, then "looks k back"
# (the best fixed offset k >= 2; on a repeated sequence an induction head also looks k-1 back).
ROLES = ("previous-token", "induction", "first-token sink", "looks k back")


def probe(tokenizer: Tokenizer, meta: dict, n_ctx: int, n: int = N_PROBES) -> np.ndarray:
    """(n, 2k) int64: sequence i is k random ordinary tokens written twice, seed i; k is the
    Attention page's default copy length (the longest copy a repeat-task model trained on)."""
    test = induction_test(tokenizer, meta, n_ctx)
    rows = [repeated_random_tokens(test.token_ids, test.default_length, seed=i) for i in range(n)]
    return np.stack(rows)


def mean_scores(scores: Sequence[HeadScores]) -> HeadScores:
    """The field-by-field mean of head scores on prompts of one length (one per sequence)."""
    first = scores[0]

    def mean(name: str) -> np.ndarray:
        return np.mean([getattr(s, name) for s in scores], axis=0)

    return HeadScores(
        previous_token=mean("previous_token"),
        first_token=mean("first_token"),
        self_=mean("self_"),
        induction=mean("induction"),
        entropy=mean("entropy"),
        n_induction_queries=first.n_induction_queries,
        looks_back=mean("looks_back"),
        even_entropy=first.even_entropy,
    )


@dataclass(frozen=True)
class Measures:
    """One model on the probe (B sequences of 2k tokens, L layers, H heads).

    scores: role -> (L, H) (see ROLES); offset_k (L, H): the k of "looks k back";
    loss_first / loss_second: mean loss in nats per token predicting the first copy's tokens
    1..k-1 / the second copy's tokens k+1..2k-1 (its first token cannot be known);
    copy_accuracy: share of those second-copy tokens that are the model's top guess;
    exact_copy: share of sequences whose whole second copy (k+1..2k-1) is top guesses.
    """

    scores: dict[str, np.ndarray]
    offset_k: np.ndarray
    loss_first: float
    loss_second: float
    copy_accuracy: float
    exact_copy: float


def role_scores(scores: HeadScores) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """(role -> (L, H) in ROLES order, offset k (L, H)) from one HeadScores."""
    offset_k, offset = scores.fixed_offset()
    named = scores.by_role()
    out = {role: named[role] for role in ROLES[:3]}
    return {**out, ROLES[3]: offset}, offset_k


def measure(model: GPT, ids: np.ndarray) -> Measures:
    """Run the model once on the probe ids (B, 2k) and measure roles, losses and copying."""
    B, T = ids.shape
    k = T // 2
    L = model.cfg.n_layer
    names = [f"blocks.{layer}.attn.hook_pattern" for layer in range(L)]
    x = torch.as_tensor(ids, dtype=torch.long)
    logits, cache = model.run_with_cache(x, names=names)
    logits = logits.reshape(B, T, -1)  # (B, T, V), also when B == 1
    patterns = np.stack([cache.numpy(n).reshape(B, -1, T, T) for n in names], axis=1)
    scores, offset_k = role_scores(
        mean_scores([head_scores(p, row) for p, row in zip(patterns, ids, strict=True)])
    )
    # position i predicts token i+1: the first copy's tokens 1..k-1 from i = 0..k-2, the
    # second copy's tokens k+1..2k-1 from i = k..2k-2
    loss = F.cross_entropy(logits[:, :-1].transpose(1, 2), x[:, 1:], reduction="none")  # (B, T-1)
    right = (logits[:, :-1].argmax(-1) == x[:, 1:])[:, k : 2 * k - 1]  # (B, k-1)
    return Measures(
        scores=scores,
        offset_k=offset_k,
        loss_first=float(loss[:, : k - 1].mean()),
        loss_second=float(loss[:, k : 2 * k - 1].mean()),
        copy_accuracy=float(right.float().mean()),
        exact_copy=float(right.all(-1).float().mean()),
    )


@dataclass(frozen=True)
class Dynamics:
    """`measure` at every step (S steps): each array's first axis is the step.

    scores: role -> (S, L, H); offset_k (S, L, H); loss_first, loss_second, copy_accuracy,
    exact_copy: (S,); copy_length: k, the tokens in each copy of the probe.
    """

    steps: np.ndarray
    scores: dict[str, np.ndarray]
    offset_k: np.ndarray
    loss_first: np.ndarray
    loss_second: np.ndarray
    copy_accuracy: np.ndarray
    exact_copy: np.ndarray
    copy_length: int

    def head_names(self) -> list[str]:
        """'L0 H0', 'L0 H1', ... in (layer, head) order, as the Attention page names heads."""
        _, L, H = self.offset_k.shape
        return [f"L{layer} H{head}" for layer in range(L) for head in range(H)]


def dynamics(steps: Sequence[int], load: Callable[[int], GPT], ids: np.ndarray) -> Dynamics:
    """`measure` the model of every step (load(step) gives it) on the same probe ids (B, 2k)."""
    found = [measure(load(step), ids) for step in steps]
    return Dynamics(
        steps=np.asarray(steps, dtype=np.int64),
        scores={role: np.stack([m.scores[role] for m in found]) for role in ROLES},
        offset_k=np.stack([m.offset_k for m in found]),
        loss_first=np.array([m.loss_first for m in found]),
        loss_second=np.array([m.loss_second for m in found]),
        copy_accuracy=np.array([m.copy_accuracy for m in found]),
        exact_copy=np.array([m.exact_copy for m in found]),
        copy_length=ids.shape[1] // 2,
    )


def formation_step(
    steps: np.ndarray, loss_first: np.ndarray, loss_second: np.ndarray
) -> int | None:
    """The first step where copying is half learned: where the gain from copying (first-copy loss
    minus second-copy loss) first reaches half its largest value. None when it never grows above
    0.1 nats (nothing was learned to copy).

    >>> formation_step(np.array([0, 10, 20, 30]), np.full(4, 3.0), np.array([3.0, 2.9, 1.5, 1.0]))
    20
    """
    gain = np.asarray(loss_first) - np.asarray(loss_second)
    if gain.size == 0 or gain.max() < 0.1:
        return None
    return int(np.asarray(steps)[np.argmax(gain >= gain.max() / 2)])
