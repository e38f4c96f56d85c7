"""One memory budget, in bytes, for what the pages compute per prompt, shared by every session.

`st.cache_data` bounds each cache by its number of entries, which does not bound memory: one
entry is tens of kB for a short prompt on a 4-layer model and hundreds of MB for 128 tokens through
GPT-2 small; after 1,000 reruns with new prompts a server held 256 MB in its data caches and
would have gone on growing to each cache's cap, and nothing was released when the class went home.
Here every result decorated with `@per_prompt`, and every figure of `ui.cache.figure`, lives in
one `cachetools.TTLCache` sized in bytes (VIZ_CACHE_MB, default 256 per server process): the
least recently used results go first when a new one needs room, and a result unused for
VIZ_CACHE_TTL_S (default an hour) is dropped by a sweep once a minute, so an idle server gives its
memory back. Pages do not import this module: they use ui.cache (`per_prompt`, `per_model`,
`figure`), which says which cache a result belongs in.

Results are shared, not copied (st.cache_data unpickles a copy on every hit): numpy arrays are made
read-only, so a page that tried to change one would fail loudly instead of changing it for
everyone. The key is the function's file, qualified name and every argument in a frozen form
(`key_of`: numbers with their type, tuples, numpy arrays by dtype, shape and a hash of their
bytes); an argument nothing can freeze is refused with a TypeError rather than keyed by identity.
For `@per_prompt`, arguments whose names start with "_" are left out of the key, as with
Streamlit's caches (a figure's arguments never are). When several sessions ask for the same
missing result at once (a class arriving), one computes it and the others wait for it. The
cache's size per function is reported in Streamlit's /_stcore/metrics (cache_type="viz_shared"),
where the class benchmarks read it.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import functools
import hashlib
import inspect
import os
import sys
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import cachetools
import numpy as np
import plotly.graph_objects as go
import torch

from ui import streamlit_internals as internals

F = TypeVar("F", bound=Callable[..., Any])
BUDGET_ENV, TTL_ENV = "VIZ_CACHE_MB", "VIZ_CACHE_TTL_S"
DEFAULT_MB, DEFAULT_TTL_S, SWEEP_S = 256, 3600.0, 60.0
CATEGORY = "viz_shared"


# plotly.graph_objects resolves each name through a lazy module __getattr__ (an import_module
# call every time): looked up once here, not once per value nbytes walks.
_FIGURE = go.Figure
_PLAIN = frozenset({str, int, float, bool, type(None)})


def nbytes(value: Any) -> int:
    """About how many bytes `value` holds: arrays and tensors by their data, containers summed."""
    if isinstance(value, np.ndarray):
        return value.nbytes + 112
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size() + 80
    if isinstance(value, dict):
        return sys.getsizeof(value) + sum(nbytes(k) + nbytes(v) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        if all(type(v) in _PLAIN for v in value):  # labels, ids: sized without a call each
            return sys.getsizeof(value) + sum(map(sys.getsizeof, value))
        return sys.getsizeof(value) + sum(nbytes(v) for v in value)
    if isinstance(value, _FIGURE):  # a FrozenFigure's dict shares its arrays: cheap to make
        return nbytes(value.to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return sys.getsizeof(value) + sum(nbytes(getattr(value, f.name)) for f in fields)
    return sys.getsizeof(value)  # anything else: its own size only (no walk into object graphs)


def freeze(value: Any) -> Any:
    """Make the numpy arrays inside `value` read-only (it is shared by every session)."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif isinstance(value, dict):
        for v in value.values():
            freeze(v)
    elif isinstance(value, list | tuple):
        for v in value:
            freeze(v)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            freeze(getattr(value, f.name))
    return value


_SCALARS = (str, int, bytes, type(None))  # exact types whose values key themselves


def key_of(value: Any) -> Hashable:
    """`value` as a hashable key that equals another's only when the values are the same.

    >>> key_of((1, 2.0, True))
    ('tuple', (1, ('float', 2.0), ('bool', True)))
    """
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is float or kind is bool or isinstance(value, np.generic):
        return (kind.__name__, value.item() if isinstance(value, np.generic) else value)
    if isinstance(value, list | tuple):
        if all(type(v) is str for v in value) or all(type(v) is int for v in value):
            return (kind.__name__, tuple(value))  # labels and ids: fast, as one tuple
        return (kind.__name__, tuple(key_of(v) for v in value))
    if isinstance(value, np.ndarray | torch.Tensor):
        array = value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else value
        digest = hashlib.blake2b(np.ascontiguousarray(array).data, digest_size=16).digest()
        return ("ndarray", array.dtype.str, array.shape, digest)
    if isinstance(value, dict):
        return ("dict", tuple((key_of(k), key_of(v)) for k, v in value.items()))
    if isinstance(value, set | frozenset):
        return ("set", frozenset(key_of(v) for v in value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return (kind.__qualname__, tuple(key_of(getattr(value, f.name)) for f in fields))
    if kind.__hash__ not in (None, object.__hash__):  # enums and the like: hashed by value
        return (kind.__qualname__, value)
    raise TypeError(
        f"cannot key a cached result by a {kind.__qualname__}: pass plain values (tuples, "
        "numbers, strings, numpy arrays, dataclasses of them)"
    )


def call_key(fn: Callable, args: tuple, kwargs: dict, skip_private: bool = False) -> tuple:
    """(fn's file, fn's qualified name, (name, key_of(value)) for each argument, defaults
    filled in): the same call gives the same key however its arguments were passed."""
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    items = bound.arguments.items()
    inner = inspect.unwrap(fn)  # a wrapper made with functools.wraps is keyed as what it wraps
    where = (getattr(inner, "__code__", None) and inner.__code__.co_filename, inner.__qualname__)
    return (*where, *((k, key_of(v)) for k, v in items if not (skip_private and k[0] == "_")))


def _env_float(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


class SharedCache:
    """A byte-bounded, time-limited LRU of (value, size) under one lock, with a lock per key being
    computed so that a result is computed once however many sessions ask for it together."""

    def __init__(
        self, budget_bytes: int, ttl_s: float, timer: Callable[[], float] = time.monotonic
    ):
        self.entries = cachetools.TTLCache(
            maxsize=budget_bytes, ttl=ttl_s, timer=timer, getsizeof=lambda entry: entry[1]
        )
        self.lock = threading.Lock()
        self.computing: dict[tuple, threading.Lock] = {}
        self.hits = self.misses = 0

    def get_or_compute(self, key: tuple, compute: Callable[[], Any]) -> Any:
        with self.lock:
            if (entry := self.entries.get(key)) is not None:
                self.hits += 1
                return entry[0]
            key_lock = self.computing.setdefault(key, threading.Lock())
        with key_lock:  # a second asker waits here, then finds the first one's result
            with self.lock:
                if (entry := self.entries.get(key)) is not None:
                    self.hits += 1
                    return entry[0]
                self.misses += 1
            try:
                value = freeze(compute())
                self._store(key, value)
            finally:
                with self.lock:
                    self.computing.pop(key, None)
        return value

    def _store(self, key: tuple, value: Any) -> None:
        size = nbytes(value)
        with self.lock:
            if size <= self.entries.maxsize:  # a result bigger than the budget is not kept
                self.entries[key] = (value, size)

    def expire(self) -> int:
        """Drop the results unused for the time limit; the bytes they held."""
        with self.lock:  # expire() gives back the (key, (value, size)) pairs it dropped
            return sum(size for _, (_, size) in self.entries.expire())

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()

    def sizes(self) -> dict[str, int]:
        """Bytes held per function name (the key's second item)."""
        out: dict[str, int] = {}
        with self.lock:
            for key, (_, size) in self.entries.items():
                out[key[1]] = out.get(key[1], 0) + size
        return out

    @property
    def used(self) -> int:
        return int(self.entries.currsize)


CACHE = SharedCache(
    int(_env_float(BUDGET_ENV, DEFAULT_MB) * 1e6), _env_float(TTL_ENV, DEFAULT_TTL_S)
)


def per_prompt(fn: F | None = None, *, spinner: str = "") -> F | Callable[[F], F]:
    """Cache `fn`'s results in CACHE, shared read-only by every session, keyed by its file, name
    and arguments (those not named with a leading "_"; see `key_of` for what an argument may be).
    For anything that depends on what a student types or picks: the prompt, a token, a layer.
    `@per_prompt(spinner="Sampling…")` says so on screen while a missing result is computed."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            key = call_key(fn, args, kwargs, skip_private=True)
            return get_or_compute(key, lambda: _with_spinner(spinner, fn, args, kwargs))

        wrapper.clear = CACHE.clear  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return wrap(fn) if fn is not None else wrap


def _with_spinner(text: str, fn: Callable, args: tuple, kwargs: dict) -> Any:
    if not text:
        return fn(*args, **kwargs)
    import streamlit as st  # only a page asks for a spinner

    with st.spinner(text):
        return fn(*args, **kwargs)


def get_or_compute(key: tuple, compute: Callable[[], Any]) -> Any:
    """CACHE's value for `key` (a `call_key`), computed once by `compute` when missing."""
    _start_sweeper()
    return CACHE.get_or_compute(key, compute)


_sweeper_started = threading.Event()


def _start_sweeper() -> None:
    """Once per process: a daemon thread that drops expired results every SWEEP_S seconds, and
    the cache's sizes reported to Streamlit's /_stcore/metrics (where there is a server: an
    internal, ui/streamlit_internals.register_stats; if it moves, the metrics are missing and
    nothing else changes)."""
    if _sweeper_started.is_set():
        return
    _sweeper_started.set()
    internals.register_stats(CATEGORY, lambda: CACHE.sizes())

    def sweep() -> None:
        while True:
            time.sleep(SWEEP_S)
            if CACHE.expire():
                _give_back_memory()

    threading.Thread(target=sweep, name="shared-cache-sweeper", daemon=True).start()


def _give_back_memory() -> None:
    """Ask glibc to hand freed heap pages back to the system: without it the server's resident
    memory stays at its peak after the results are dropped. Elsewhere (no glibc) nothing."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
