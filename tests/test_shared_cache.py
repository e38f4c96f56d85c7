"""ui/shared_cache.py: one byte budget for per-prompt results, shared and read-only."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from ui import shared_cache
from ui.shared_cache import SharedCache, nbytes, per_prompt


def array(kb: int) -> np.ndarray:
    return np.zeros(kb * 1000, dtype=np.uint8)


def test_nbytes_counts_the_data_of_arrays_inside_containers():
    value = {"a": array(100), "b": [array(50), (array(25), "x")]}
    assert 175_000 < nbytes(value) < 177_000


def test_the_least_recently_used_result_goes_when_the_budget_is_full():
    cache = SharedCache(budget_bytes=250_000, ttl_s=60)
    cache.get_or_compute(("f", "a"), lambda: array(100))
    cache.get_or_compute(("f", "b"), lambda: array(100))
    cache.get_or_compute(("f", "a"), lambda: pytest.fail("a is cached"))  # a is now the newest
    cache.get_or_compute(("g", "c"), lambda: array(100))  # no room for three: b goes
    assert set(cache.entries) == {("f", "a"), ("g", "c")}
    assert cache.used <= 250_000
    assert cache.sizes() == {"a": nbytes(array(100)), "c": nbytes(array(100))}


def test_a_result_bigger_than_the_budget_is_returned_but_not_kept():
    cache = SharedCache(budget_bytes=50_000, ttl_s=60)
    value = cache.get_or_compute(("f", "big"), lambda: array(100))
    assert value.nbytes == 100_000
    assert len(cache.entries) == 0


def test_results_unused_for_the_ttl_are_dropped_by_the_sweep():
    now = [0.0]
    cache = SharedCache(budget_bytes=10**6, ttl_s=10, timer=lambda: now[0])
    cache.get_or_compute(("f", "a"), lambda: array(1))
    now[0] = 5.0
    cache.get_or_compute(("f", "b"), lambda: array(1))
    now[0] = 12.0
    assert cache.expire() == nbytes(array(1))
    assert set(cache.entries) == {("f", "b")}
    now[0] = 16.0
    cache.expire()
    assert cache.used == 0 and cache.expire() == 0


def test_shared_results_are_read_only():
    cache = SharedCache(budget_bytes=10**6, ttl_s=60)
    value = cache.get_or_compute(("f", "a"), lambda: {"x": np.ones(3), "y": [np.ones(2)]})
    with pytest.raises(ValueError, match="read-only"):
        value["x"][0] = 5
    with pytest.raises(ValueError, match="read-only"):
        value["y"][0][0] = 5


def test_sessions_asking_together_compute_once():
    cache = SharedCache(budget_bytes=10**6, ttl_s=60)
    calls = []

    def slow() -> np.ndarray:
        calls.append(1)
        time.sleep(0.2)
        return array(1)

    results = []
    threads = [
        threading.Thread(target=lambda: results.append(cache.get_or_compute(("f", "k"), slow)))
        for _ in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len(results) == 6 and all(r is results[0] for r in results)
    assert cache.computing == {}


def test_the_decorator_keys_by_arguments_but_not_underscored_ones(monkeypatch):
    monkeypatch.setattr(shared_cache, "CACHE", SharedCache(budget_bytes=10**6, ttl_s=60))
    calls = []

    @per_prompt
    def double(x: int, scale: int = 2, _note: str = "") -> np.ndarray:
        calls.append((x, scale, _note))
        return np.array([x * scale])

    assert double(3)[0] == 6
    assert double(3, _note="other")[0] == 6  # same key: _note is not part of it
    assert double(3, scale=2)[0] == 6  # a default given by name is the same call
    assert double(4)[0] == 8
    assert calls == [(3, 2, ""), (4, 2, "")]
    assert (
        shared_cache.CACHE.sizes()[
            "test_the_decorator_keys_by_arguments_but_not_underscored_ones.<locals>.double"
        ]
        > 0
    )
