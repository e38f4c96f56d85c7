"""The app's Streamlit layer: the page frame, cached loading, URL-carried state, navigation.

The only non-page code that imports streamlit. app.py routes (ui.nav) and draws the frame
(`ui.frame`); every page starts with `ctx = ui.context()`.
"""

import gc
import importlib
import os

import torch

from ui.frame import PageContext, context, frame

# Every browser session runs its script in its own thread. With torch's default of one intra-op
# thread per core, a class of sessions oversubscribes the CPU and each forward pass slows down
# several-fold; one thread per session keeps them independent. VIZ_TORCH_THREADS overrides it
# (e.g. a single user on a many-core laptop).
_threads = os.environ.get("VIZ_TORCH_THREADS", "1")
torch.set_num_threads(int(_threads) if _threads.isdigit() and int(_threads) > 0 else 1)

# plotly looks optional libraries up in sys.modules without importing them
# (`get_module(name, should_load=False)` in its validators and JSON encoder). A module enters
# sys.modules before its body has run, so while one session's thread imports pandas for the first
# time (a page's `import pandas`, or st.dataframe's lazy import), another session building a figure
# finds a half-built pandas and fails: a class opening the app within a second broke 7-24 of 30
# first views. Import them here, once: every page imports `ui` before it draws a figure, and
# Python's import lock makes a second session wait until this import has finished.
FIRST_USE_MODULES = ("pandas", "pyarrow", "PIL.Image")
for _name in FIRST_USE_MODULES:
    importlib.import_module(_name)

# Streamlit runs a full garbage collection after every script run (runner.postScriptGC). With
# torch, plotly and pandas imported that walks ~280k long-lived objects: ~180 ms of server time on
# every slider move of every session. Freezing what exists once everything is imported (this
# module is imported on the first run) takes those objects out of the walk; objects made later
# are still collected as usual.
gc.freeze()

__all__ = ["PageContext", "context", "frame"]
