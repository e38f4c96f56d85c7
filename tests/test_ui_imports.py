"""A class arriving at once: no session may see a half-imported module.

plotly (and altair) look optional libraries up in `sys.modules` without importing them
(`get_module(name, should_load=False)`). A module enters `sys.modules` before its body has run, so
while one session's thread imports pandas for the first time, another session building a figure
finds a half-built pandas and fails (`partially initialized module 'pandas' has no attribute
'Series'`). The app imports every such module once, in `ui.boot.configure_process()` (app.py's
first step in every session), before any page draws a figure.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from importlib.util import find_spec
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def peeked_modules() -> list[str]:
    """The installed modules plotly and altair look up in sys.modules without importing them."""
    found: set[str] = set()
    for package in ("plotly", "_plotly_utils"):
        folder = Path(find_spec(package).origin).parent
        for path in folder.rglob("*.py"):
            text = path.read_text(encoding="utf-8", errors="ignore")
            found.update(re.findall(r'get_module\(\s*"([\w.]+)",\s*should_load=False', text))
    found.add("pandas")  # altair's _get_optional_modules(pd="pandas", ...)

    def installed(name: str) -> bool:
        try:
            return find_spec(name) is not None
        except ModuleNotFoundError:  # a parent package is missing
            return False

    return sorted(name for name in found if installed(name))


def run_fresh(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_plotly_peeks_at_pandas_so_the_list_is_not_empty():
    assert "pandas" in peeked_modules()
    assert "numpy" in peeked_modules()


def test_configuring_the_process_finishes_every_module_plotly_peeks_at():
    result = run_fresh(
        f"""
        import sys
        from ui import boot
        boot.configure_process()
        missing = [n for n in {peeked_modules()!r} if n not in sys.modules]
        half = [n for n in {peeked_modules()!r}
                if n in sys.modules and getattr(sys.modules[n].__spec__, "_initializing", False)]
        print("missing", missing, "half", half)
        """
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "missing [] half []" in result.stdout


def test_many_sessions_building_charts_while_others_import_on_first_use():
    """A fresh interpreter, as on a fresh `streamlit run`: the process configured (the first
    session's first step in app.py), then 6 threads import what pages and Streamlit import on first use while 6 others
    build the app's charts over and over. Before the fix 10-30% of builds failed."""
    result = run_fresh(
        f"""
        import importlib, threading, traceback
        import numpy as np
        from ui import boot
        boot.configure_process()
        from ui.charts.architecture import architecture_figure, param_counts_figure
        from ui.charts.attention import pattern_grid, pattern_heatmap
        from ui.charts.layernorm import ln_histograms
        from ui.charts.next_token import distribution_bars
        from ui.charts.residual import resid_norm_heatmap
        from viz_model.model.config import GPTConfig

        cfg = GPTConfig(vocab_size=40, n_ctx=16, d_model=32, n_layer=2, n_head=4)
        labels = [f"{{i}}:x" for i in range(8)]
        p = np.tril(np.full((8, 8), 1 / 8))
        probs = np.full(5, 0.2)
        charts = [
            lambda: architecture_figure(cfg),
            lambda: param_counts_figure({{"embed": 100, "blocks": 300}}),
            lambda: pattern_heatmap(p, labels),
            lambda: pattern_grid(np.stack([np.stack([p, p])] * 2), labels),
            lambda: ln_histograms(np.arange(64.0), np.arange(64.0)),
            lambda: distribution_bars(list("abcde"), probs, probs, probs, np.ones(5, bool)),
            lambda: resid_norm_heatmap(np.ones((3, 8)), ["a", "b", "c"], labels),
        ]
        errors, built = [], []
        start = threading.Barrier(12)
        importing = threading.Event()

        def importer(names):
            start.wait()
            importing.set()
            try:
                for name in names:
                    importlib.import_module(name)
            except Exception:
                errors.append(traceback.format_exc())

        def builder():
            start.wait()
            for _ in range(40):
                for chart in charts:
                    try:
                        built.append(len(chart().data))
                    except Exception:
                        errors.append(traceback.format_exc())

        names = {peeked_modules()!r}
        threads = [threading.Thread(target=importer, args=(names,)) for _ in range(6)]
        threads += [threading.Thread(target=builder) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("errors", len(errors), "built", len(built), "empty", built.count(0))
        if errors:
            print(errors[0])
        """
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"errors 0 built {6 * 40 * 7} empty 0" in result.stdout, result.stdout[-3000:]
