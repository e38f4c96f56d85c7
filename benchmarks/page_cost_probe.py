"""Where a script run's CPU goes, by category, for benchmarks/bench_page_cost.py.

Wraps, in this process only, the functions of each category so that every call adds its CPU time
(time.thread_time of the calling thread, so the rest of the machine does not count) to its
category, exclusively: a chart builder called from inside st.plotly_chart counts once, as a figure.
The script thread's whole time comes from wrapping every script run (Streamlit's script runner, an
internal: ui/streamlit_internals.wrap_script_runs).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import sys
import threading
import time
from collections.abc import Callable

CATEGORIES = ("compute", "figures", "serialise")
ST_SERIALISERS = ("plotly_chart", "altair_chart", "vega_lite_chart", "dataframe", "table")


def _functions(package: str) -> list[tuple[object, str, Callable]]:
    """(module, name, function) for the functions each module of `package` defines itself."""
    pkg = importlib.import_module(package)
    names = [package] + [
        f"{package}.{m.name}" for m in pkgutil.iter_modules(getattr(pkg, "__path__", []))
    ]
    out = []
    for name in names:
        module = importlib.import_module(name)
        for attr, fn in vars(module).items():
            if (
                callable(fn)
                and getattr(fn, "__module__", None) == name
                and not attr.startswith("_")
            ):
                if isinstance(fn, type):
                    continue
                out.append((module, attr, fn))
    return out


class Probe:
    def __init__(self) -> None:
        self.totals = dict.fromkeys(("total", *CATEGORIES), 0.0)
        self._local = threading.local()

    def _wrap(self, category: str, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            stack = self._local.__dict__.setdefault("stack", [])
            frame = [time.thread_time(), 0.0]
            stack.append(frame)
            try:
                return fn(*args, **kwargs)
            finally:
                stack.pop()
                elapsed = time.thread_time() - frame[0]
                if category != "total":
                    self.totals[category] += elapsed - frame[1]
                    if stack:
                        stack[-1][1] += elapsed
                else:
                    self.totals["total"] += elapsed

        timed.__wrapped_by_probe__ = True
        return timed

    def install(self) -> None:
        """Wrap every category's functions, and rebind names other modules already imported."""
        import streamlit as st

        from ui import streamlit_internals as internals
        from viz_model.model.gpt import GPT

        swaps: dict[int, Callable] = {}
        for package, category in [
            ("viz_model.analysis", "compute"),
            ("viz_model.analysis.labs", "compute"),
            ("viz_model.model.sampling", "compute"),
            ("viz_model.text.ngram", "compute"),
            ("ui.charts", "figures"),
        ]:
            for module, attr, fn in _functions(package):
                swaps[id(fn)] = self._wrap(category, fn)
                setattr(module, attr, swaps[id(fn)])
        for method in ("forward", "run_with_cache"):
            setattr(GPT, method, self._wrap("compute", getattr(GPT, method)))
        elements = internals.delta_generator_class()  # what st.container() etc. return
        for name in ST_SERIALISERS:
            setattr(elements, name, self._wrap("serialise", getattr(elements, name)))
            setattr(st, name, self._wrap("serialise", getattr(st, name)))
        internals.wrap_script_runs(lambda run: self._wrap("total", run))
        for mod_name, module in list(sys.modules.items()):  # `from x import f` done before now
            if mod_name.split(".")[0] in ("ui", "viz_model", "pages"):
                for attr, value in list(vars(module).items()):
                    if id(value) in swaps:
                        setattr(module, attr, swaps[id(value)])

    def measure(self, run: Callable[[], object]) -> dict[str, float]:
        """Seconds by category for one call of `run` (e.g. an AppTest's at.run)."""
        for key in self.totals:
            self.totals[key] = 0.0
        run()
        parts = {k: self.totals[k] for k in CATEGORIES}
        return {
            "total": self.totals["total"],
            **parts,
            "script": self.totals["total"] - sum(parts.values()),
        }
