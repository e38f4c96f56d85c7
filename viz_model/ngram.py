"""Counting models of text (Shannon's n-grams) as yardsticks for a GPT's loss.

Covers: the cross-entropy on the validation split, in nats per token, of the simplest models of
the same token stream, so a training curve can show "better than counting":
- a blind guess: every token equally likely, loss ln V;
- unigram: each token with its frequency in the training split;
- bigram: each token given the one before, from counts of pairs in the training split.
Counts are smoothed by adding k to every count (k chosen on a slice of the training split held
out from the counts, never on the validation split), so a pair never seen costs a finite loss.

Not here: generating text from n-grams or higher orders (the N-grams page's issue).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SMOOTHING_GRID = (1e-3, 1e-2, 0.1, 0.3, 1.0)
TUNE_FRACTION = 0.1  # the end of the training split that picks k


@dataclass(frozen=True)
class Baselines:
    """Validation loss in nats per token of each counting model, and the k each one used."""

    blind: float
    unigram: float
    bigram: float
    k_unigram: float
    k_bigram: float

    def as_dict(self) -> dict[str, float]:
        return {"blind guess": self.blind, "unigram": self.unigram, "bigram": self.bigram}


def unigram_loss(counts: np.ndarray, targets: np.ndarray, k: float) -> float:
    """Mean -ln p(target) with p = (count + k) / (N + kV). counts: (V,), targets: (n,) ints."""
    V = counts.shape[0]
    p = (counts[targets] + k) / (counts.sum() + k * V)
    return float(-np.log(p).mean())


def pair_counts(ids: np.ndarray, vocab_size: int) -> dict[int, int]:
    """Counts of each (previous, next) pair, keyed by previous * V + next (sparse: V^2 is big)."""
    codes = ids[:-1].astype(np.int64) * vocab_size + ids[1:]
    keys, counts = np.unique(codes, return_counts=True)
    return dict(zip(keys.tolist(), counts.tolist(), strict=True))


def bigram_loss(
    pairs: dict[int, int], prev_counts: np.ndarray, ids: np.ndarray, vocab_size: int, k: float
) -> float:
    """Mean -ln p(next | previous) over the pairs of `ids`, p = (c(prev, next) + k) / (c(prev) + kV).

    prev_counts[a] counts the pairs that start with a (the training tokens but the last).
    """
    codes = ids[:-1].astype(np.int64) * vocab_size + ids[1:]
    c_pair = np.array([pairs.get(code, 0) for code in codes.tolist()], dtype=np.float64)
    c_prev = prev_counts[ids[:-1]]
    return float(-np.log((c_pair + k) / (c_prev + k * vocab_size)).mean())


def _best_k(loss_of_k) -> float:
    return min(SMOOTHING_GRID, key=loss_of_k)


def baselines(train_ids, val_ids, vocab_size: int) -> Baselines:
    """Blind, unigram and bigram validation losses for a stream split into train and val ids.

    >>> b = baselines([0, 1] * 50, [0, 1] * 10, vocab_size=4)
    >>> round(b.blind, 3), b.bigram < b.unigram < b.blind
    (1.386, True)
    """
    train = np.asarray(train_ids, dtype=np.int64)
    val = np.asarray(val_ids, dtype=np.int64)
    if train.size < 2 or val.size < 2:
        raise ValueError("Baselines need at least 2 training and 2 validation tokens.")
    n_tune = max(2, int(train.size * TUNE_FRACTION))
    fit, tune = train[:-n_tune], train[-n_tune:]
    if fit.size < 2:
        fit, tune = train, train

    def unigram_on(ids: np.ndarray, source: np.ndarray, k: float) -> float:
        return unigram_loss(np.bincount(source, minlength=vocab_size), ids, k)

    def bigram_on(ids: np.ndarray, source: np.ndarray, k: float) -> float:
        prev = np.bincount(source[:-1], minlength=vocab_size).astype(np.float64)
        return bigram_loss(pair_counts(source, vocab_size), prev, ids, vocab_size, k)

    k_uni = _best_k(lambda k: unigram_on(tune, fit, k))
    k_bi = _best_k(lambda k: bigram_on(tune, fit, k))
    return Baselines(
        blind=math.log(vocab_size),
        unigram=unigram_on(val, train, k_uni),
        bigram=bigram_on(val, train, k_bi),
        k_unigram=k_uni,
        k_bigram=k_bi,
    )
