"""Settings of the server process that serves pages, made once by app.py before anything else
runs: torch's threads, the libraries a first figure needs, the garbage collector. Here, not in
`ui/__init__.py`, so that importing a chart builder (ui/charts/, meant to run without Streamlit)
changes nothing in the process that imports it.

    from ui import boot
    boot.configure_process()   # app.py, first; later calls do nothing
"""

from __future__ import annotations

import gc
import importlib
import os
import threading

import torch

# plotly looks optional libraries up in sys.modules without importing them
# (`get_module(name, should_load=False)` in its validators and JSON encoder). A module enters
# sys.modules before its body has run, so while one session's thread imports pandas for the first
# time (a page's `import pandas`, or st.dataframe's lazy import), another session building a figure
# finds a half-built pandas and fails: a class opening the app within a second broke 7-24 of 30
# first views. Import them here, once, before any page draws: Python's import lock makes a second
# session wait until the first import has finished.
FIRST_USE_MODULES = ("numpy", "pandas", "pyarrow", "PIL.Image")
THREADS_ENV = "VIZ_TORCH_THREADS"

_done = threading.Event()
_lock = threading.Lock()


def configure_process() -> None:
    """Make the settings once per process; every session's first run calls it (app.py)."""
    if _done.is_set():
        return
    with _lock:
        if _done.is_set():
            return
        torch.set_num_threads(torch_threads(os.environ.get(THREADS_ENV)))
        for name in FIRST_USE_MODULES:
            importlib.import_module(name)
        # Streamlit runs a full garbage collection after every script run
        # (runner.postScriptGC). With torch, plotly and pandas imported that walks ~280k
        # long-lived objects: ~180 ms of server time on every slider move of every session.
        # Freezing what exists once everything is imported takes those objects out of the walk;
        # objects made later are still collected as usual.
        gc.freeze()
        _done.set()


def torch_threads(raw: str | None) -> int:
    """Torch's intra-op threads for a page server: VIZ_TORCH_THREADS when it is a positive whole
    number, else 1. Every browser session runs its script in its own thread; with torch's default
    of one thread per core a class of sessions oversubscribes the CPU and each forward pass slows
    down several-fold, so one thread per session keeps them independent (a single user on a
    many-core laptop may ask for more).

    >>> torch_threads(None), torch_threads("4"), torch_threads("0"), torch_threads("x")
    (1, 4, 1, 1)
    """
    return int(raw) if raw and raw.isdigit() and int(raw) > 0 else 1
