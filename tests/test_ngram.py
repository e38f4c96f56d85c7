"""Counting baselines: each loss against a direct computation, and their order on real text."""

from __future__ import annotations

import math

import numpy as np
import pytest

from viz_model.text import ngram


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


# ---- every order: add-k, Kneser-Ney, sparsity ----------------------------------------------------

from collections import Counter as Tally  # noqa: E402

from viz_model.text.corpus_index import CorpusIndex, ranks  # noqa: E402

TEXT = "the cat sat on the mat. the cat ate the rat. a rat sat on a cat. " * 3 + "the dog sat."


def _stream(text: str = TEXT, val: int = 40):
    alphabet = sorted(set(text))
    ids = np.array([alphabet.index(c) for c in text])
    return ids, ids.size - val, len(alphabet) + 2  # two tokens the text never uses


def _direct_kn(train: list[int], history: list[int], w: int, n: int, vocab: int, D: dict) -> float:
    """Interpolated Kneser-Ney written out with dictionaries, one (history, w) at a time."""
    grams = {
        m: Tally(tuple(train[i : i + m]) for i in range(len(train) - m + 1)) for m in (1, 2, 3, 4)
    }
    p = 1.0 / vocab
    for m in range(1, n + 1):
        h = tuple(history[len(history) - (m - 1) :]) if m > 1 else ()
        if m == n:  # raw counts
            c = {g[-1]: k for g, k in grams[m].items() if g[:-1] == h}
            d = D[(m, "raw")]
        else:  # continuation: distinct left neighbours of h w
            c = Tally(g[-1] for g in grams[m + 1] if g[1:-1] == h)
            d = D[(m, "cont")]
        total = sum(c.values())
        if total:
            p = max(c.get(w, 0) - d, 0) / total + d * len(c) / total * p
    return p


@pytest.mark.parametrize("n", [1, 2, 3])
def test_kneser_ney_loss_matches_a_direct_computation(n):
    ids, n_train, V = _stream()
    rank = ranks(ids, n_train, [8])
    scores = ngram.order_scores(rank, n_train, V)
    train = ids[:n_train].tolist()
    at = range(n_train + ngram.MAX_ORDER - 1, ids.size)
    direct = [
        -math.log(_direct_kn(train, ids[t - n + 1 : t].tolist(), ids[t], n, V, scores.discounts))
        for t in at
    ]
    assert scores.kneser_ney[n - 1] == pytest.approx(np.mean(direct), rel=1e-9)
    assert scores.n_eval == len(at)


def test_discounts_follow_the_counts_of_counts():
    counts = np.array([1, 1, 1, 2, 5, 0])
    assert ngram.discount(counts[counts > 0]) == pytest.approx(3 / (3 + 2 * 1))


@pytest.mark.parametrize("order", [1, 2, 3, 4, 6])
@pytest.mark.parametrize("context", ["the c", "zzq", " a rat", ""])
def test_kneser_ney_sums_to_one_seen_or_unseen(order, context):
    ids, n_train, V = _stream()
    alphabet = sorted(set(TEXT))
    rank = ranks(ids, n_train, [8])
    scores = ngram.order_scores(rank, n_train, V)
    index = CorpusIndex.build(ids, n_train, rank=rank)
    ctx = [alphabet.index(c) if c in alphabet else V - 1 for c in context]
    p = ngram.kn_distribution(index, ctx, order, scores.discounts, V)
    assert p.sum() == pytest.approx(1.0) and (p > 0).all()  # never 0, even after "zzq"


def test_kn_distribution_agrees_with_the_scores():
    """The whole distribution through the index, read at each validation token, gives the same
    loss as the vectorised scoring through n-gram ids."""
    ids, n_train, V = _stream()
    rank = ranks(ids, n_train, [8])
    scores = ngram.order_scores(rank, n_train, V)
    index = CorpusIndex.build(ids, n_train, rank=rank)
    at = range(n_train + ngram.MAX_ORDER - 1, ids.size)
    for n in (1, 2, 4, 6):
        losses = [
            -math.log(
                ngram.kn_distribution(index, ids[t - n + 1 : t], n, scores.discounts, V)[ids[t]]
            )
            for t in at
        ]
        assert scores.kneser_ney[n - 1] == pytest.approx(np.mean(losses), rel=1e-9)


def test_add_k_bigram_is_the_training_page_bigram():
    ids, n_train, V = _stream()
    scores = ngram.order_scores(ranks(ids, n_train, [8]), n_train, V)
    train, val = ids[:n_train], ids[n_train + ngram.MAX_ORDER - 2 :]  # the same scored tokens
    prev = np.bincount(train[:-1], minlength=V).astype(float)
    k = scores.k[1]
    expected = ngram.bigram_loss(ngram.pair_counts(train, V), prev, val, V, k)
    assert scores.add_k[1] == pytest.approx(expected)
    assert all(k in ngram.SMOOTHING_GRID for k in scores.k)


def test_unseen_contexts_match_sets_of_training_contexts():
    ids, n_train, _ = _stream()
    shares = ngram.unseen_contexts(ranks(ids, n_train, [8]), n_train, max_n=5)
    train = ids[:n_train].tolist()
    at = range(n_train + 5, ids.size)
    for n in range(1, 6):
        seen = {tuple(train[i : i + n]) for i in range(n_train - n)}  # followed by a token
        expected = np.mean([tuple(ids[t - n : t].tolist()) not in seen for t in at])
        assert shares[n - 1] == pytest.approx(expected)
    assert 0 < shares[0] < shares[-1]  # 'd' and 'g' of "dog" never occur in training
    assert list(shares) == sorted(shares)  # a longer context holds the shorter one


def test_order_scores_refuse_a_too_short_text():
    ids = np.arange(10)
    with pytest.raises(ValueError, match="too short"):
        ngram.order_scores(ranks(ids, 8, [8]), 8, 10)
