"""Counting baselines: each loss against a direct computation, and their order on real text."""

from __future__ import annotations

import math

import numpy as np
import pytest

from viz_model import ngram


def test_blind_guess_is_log_vocabulary():
    b = ngram.baselines([0, 1, 2] * 20, [2, 1, 0] * 5, vocab_size=7)
    assert b.blind == pytest.approx(math.log(7))


def test_unigram_loss_is_cross_entropy_of_smoothed_frequencies():
    counts = np.array([3, 1, 0])
    targets = np.array([0, 1, 2, 0])
    k = 0.5
    p = (counts + k) / (4 + 3 * k)  # [3.5, 1.5, 0.5] / 5.5
    expected = -np.mean(np.log(p[targets]))
    assert ngram.unigram_loss(counts, targets, k) == pytest.approx(expected)


def test_bigram_loss_matches_a_dense_table():
    rng = np.random.default_rng(0)
    V = 5
    train = rng.integers(0, V, 200)
    val = rng.integers(0, V, 50)
    table = np.zeros((V, V))
    for a, b in zip(train[:-1], train[1:], strict=True):
        table[a, b] += 1
    k = 0.3
    p = (table + k) / (table.sum(1, keepdims=True) + k * V)
    expected = -np.mean(np.log(p[val[:-1], val[1:]]))
    prev = np.bincount(train[:-1], minlength=V).astype(float)
    got = ngram.bigram_loss(ngram.pair_counts(train, V), prev, val, V, k)
    assert got == pytest.approx(expected)


def test_bigram_beats_unigram_when_the_next_token_follows_from_the_last():
    # A cycle 0 1 2 3: unigram is uniform (ln 4), a bigram predicts each token almost surely.
    b = ngram.baselines([0, 1, 2, 3] * 100, [0, 1, 2, 3] * 10, vocab_size=4)
    assert b.unigram == pytest.approx(math.log(4), abs=0.01)
    assert b.bigram < 0.1
    assert b.k_bigram in ngram.SMOOTHING_GRID


def test_a_pair_never_seen_costs_a_finite_loss():
    b = ngram.baselines([0, 1] * 50, [1, 1, 1, 0, 0], vocab_size=3)
    assert math.isfinite(b.bigram) and b.bigram > 0


def test_too_short_streams_are_refused():
    with pytest.raises(ValueError, match="at least 2"):
        ngram.baselines([0], [1, 2], vocab_size=3)
