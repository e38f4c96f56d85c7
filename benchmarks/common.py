"""Small helpers shared by the benchmarks: timing and JSON output."""

from __future__ import annotations

import json
import platform
import sys
import time
from collections.abc import Callable

import torch


def timed(fn: Callable[[], object], repeats: int) -> float:
    """Mean seconds per call of fn over `repeats` calls."""
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


def alternate(fns: dict[str, Callable[[], object]], rounds: int, repeats: int) -> dict[str, float]:
    """Best-of-rounds mean seconds per call for each fn, timing them in alternation so that
    machine noise falls on all of them alike."""
    for fn in fns.values():  # warm up
        timed(fn, 2)
    best = {name: float("inf") for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            best[name] = min(best[name], timed(fn, repeats))
    return best


def emit(name: str, results: dict) -> None:
    """Print one JSON document: the benchmark's name, the machine, and its results."""
    doc = {
        "benchmark": name,
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "machine": platform.machine(),
        **results,
    }
    print(json.dumps(doc, indent=1))
