"""The corpus index against direct scans of small streams: ranks, look-ups, followers, Shannon
sampling and matching statistics, with the seam between the training and validation splits."""

from __future__ import annotations

import numpy as np
import pytest

from viz_model.text.corpus_index import CorpusIndex, ranks

RNG = np.random.default_rng(0)
STREAM = RNG.integers(0, 4, 300)  # a small alphabet, so contexts repeat
N_TRAIN = 240


def _segment(i: int, n: int = STREAM.size, n_train: int = N_TRAIN) -> tuple[int, int]:
    return (0, n_train) if i < n_train else (n_train, n)


def _prefix(i: int, k: int) -> tuple[int, ...]:
    return tuple(STREAM[i : min(i + k, _segment(i)[1])].tolist())


def _occurrences(pattern: list[int]) -> list[int]:
    """Where pattern starts, wholly inside one split, by a scan."""
    m = len(pattern)
    return [
        i
        for i in range(STREAM.size)
        if i + m <= _segment(i)[1] and STREAM[i : i + m].tolist() == pattern
    ]


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8, 16])
def test_ranks_order_the_truncated_prefixes(k):
    rank = ranks(STREAM, N_TRAIN, [k])[k]
    prefixes = [_prefix(i, k) for i in range(STREAM.size)]
    order = sorted(set(prefixes))
    assert rank.tolist() == [order.index(p) for p in prefixes]


def test_ranks_pack_wide_vocabularies_too():
    # ~460 distinct tokens need 9 bits: 7 fit in one key, the 8th comes from a one-token step
    stream = np.random.default_rng(1).integers(0, 3000, 500)
    rank = ranks(stream, 400, [8])
    for k in (5, 6, 8):
        prefixes = [
            tuple(stream[i : min(i + k, 400 if i < 400 else 500)].tolist()) for i in range(500)
        ]
        order = sorted(set(prefixes))
        assert rank[k].tolist() == [order.index(p) for p in prefixes]


def test_suffix_array_is_sorted_by_the_first_depth_tokens():
    index = CorpusIndex.build(STREAM, N_TRAIN, depth=8)
    keys = [_prefix(int(i), 8) for i in index.sa]
    assert keys == sorted(keys) and sorted(index.sa.tolist()) == list(range(STREAM.size))


@pytest.mark.parametrize("length", [1, 2, 4, 7, 8, 9, 14])
def test_find_equals_a_scan(length):
    index = CorpusIndex.build(STREAM, N_TRAIN, depth=8)
    for start in (0, 37, 120, 235, 250):
        pattern = STREAM[start : start + length].tolist()
        assert sorted(index.find(pattern).tolist()) == _occurrences(pattern)


def test_nothing_is_found_across_the_seam():
    stream = [5, 6, 7, 8]
    index = CorpusIndex.build(stream, n_train=2)
    assert index.find([6, 7]).size == 0  # 6 ends the training split, 7 starts validation
    assert index.followers([6], 9).sum() == 0
    assert index.find([7, 8]).tolist() == [2]


def test_followers_count_what_came_next_in_each_split():
    index = CorpusIndex.build(STREAM, N_TRAIN)
    context = STREAM[10:12].tolist()
    expected_train = np.zeros(4, int)
    expected_val = np.zeros(4, int)
    for i in _occurrences(context):
        if i + 2 < _segment(i)[1]:
            (expected_train if i < N_TRAIN else expected_val)[STREAM[i + 2]] += 1
    assert index.followers(context, 4).tolist() == expected_train.tolist()
    assert index.followers(context, 4, split="val").tolist() == expected_val.tolist()


def test_sample_next_takes_only_tokens_seen_after_the_context():
    stream = [0, 1, 2, 0, 1, 3, 0, 2, 2]
    index = CorpusIndex.build(stream, n_train=len(stream))
    seen = {index.sample_next([0, 1], np.random.default_rng(s))[0] for s in range(40)}
    assert seen == {2, 3}
    token, used = index.sample_next([3, 3, 2], np.random.default_rng(0))  # "3 3 2", "3 2" unseen
    assert used == 1 and token == 2  # backs off to "2", always followed by 0 or 2
    assert {index.sample_next([3, 3, 2], np.random.default_rng(s))[0] for s in range(40)} == {0, 2}


def test_match_lengths_equal_brute_force():
    index = CorpusIndex.build(STREAM, N_TRAIN, depth=4)
    query = [*STREAM[50:70].tolist(), 9, *STREAM[260:275].tolist(), 3, 3]

    def longest(i: int) -> int:
        m = 0
        while i + m < len(query) and _occurrences(query[i : i + m + 1]):
            m += 1
        return m

    assert index.match_lengths(query).tolist() == [longest(i) for i in range(len(query))]


def test_an_empty_stream_builds():
    index = CorpusIndex.build([], 0)
    assert index.find([1]).size == 0 and index.match_lengths([1, 2]).tolist() == [0, 0]
