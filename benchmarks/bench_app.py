"""App speed: time from `streamlit run` to the Home page drawn in a real browser, and the server
time of a page rerun after a widget change on the bundled model.

    python -m benchmarks.bench_app [--starts 3] [--changes 5]

Targets (docs/ARCHITECTURE.md, Budgets, issue 4): Home drawn within 5 s of `streamlit run`; a widget change
answered in under 300 ms of server time. Rerun times are AppTest's `at.run()` after a change (the
script's own time on the server, without the browser's drawing); for every available page the
first main-area widget is changed, preferring a one-step button ("Next token", "Step") and then
a control labelled "head".
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import emit
from serving.models import DEFAULT_MODEL
from tests.test_browser import (
    CHARTS,
    DONE,
    ROOT,
    chromium_path,
    free_port,
    start_server,
    stop_server,
    wait_healthy,
)
from ui import nav

STARTUP_TARGET_S = 5.0
RERUN_TARGET_MS = 300


def bench_startup(starts: int) -> dict:
    """Fresh server each time: seconds to /_stcore/health 'ok' and to Home fully drawn."""
    from playwright.sync_api import sync_playwright

    exe = chromium_path()
    if exe is None:
        return {"startup_error": "no Chromium found"}
    health, drawn = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=exe, args=["--disable-gpu", "--disable-dev-shm-usage", "--no-sandbox"]
        )
        for _ in range(starts):
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            log = Path(tempfile.mkstemp(suffix=".log")[1])
            t0 = time.perf_counter()
            proc = start_server(port, dict(os.environ), log)
            try:
                wait_healthy(base, proc)
                health.append(time.perf_counter() - t0)
                page.goto(base + "/")
                page.wait_for_selector(
                    "[data-testid='stSidebar'] [data-testid='stPageLink-NavLink']"
                )
                page.wait_for_selector(DONE, timeout=120_000)
                page.wait_for_function(
                    f'() => document.querySelectorAll("{CHARTS}").length >= 2', timeout=120_000
                )
                drawn.append(time.perf_counter() - t0)
            finally:
                stop_server(proc)
                page.close()
                log.unlink(missing_ok=True)
        browser.close()
    return {
        "startup_runs": starts,
        "health_s": [round(s, 2) for s in health],
        "home_drawn_s": [round(s, 2) for s in drawn],
        "home_drawn_median_s": round(statistics.median(drawn), 2),
        "home_drawn_target_s": STARTUP_TARGET_S,
    }


def _bundled_models() -> tuple[Path, str]:
    """The folder and name of the bundled model (else the dev bundle in runs/, else a new one)."""
    assets = ROOT / "assets" / "models"
    if (assets / DEFAULT_MODEL / "config.json").is_file():
        return assets, DEFAULT_MODEL
    if (ROOT / "runs" / "dev-char" / "config.json").is_file():
        return ROOT / "runs", "dev-char"
    from tests.bundles import build_test_bundle

    out = Path(tempfile.mkdtemp())
    build_test_bundle(out / "test-char")
    return out, "test-char"


def _change(at, widget) -> None:
    """Give a widget a different value (the next option / the other end of a slider)."""
    kind = type(widget).__name__
    if kind == "Button":
        widget.click()
    elif kind in ("Selectbox", "Radio"):
        options = list(widget.options)
        current = options.index(str(widget.value)) if str(widget.value) in options else 0
        widget.select_index((current + 1) % len(options))
    elif kind == "Slider":
        lo, hi = widget.min, widget.max
        widget.set_value(hi if widget.value == lo else lo)
    elif kind == "NumberInput":
        widget.increment()
    elif kind in ("Toggle", "Checkbox"):
        widget.set_value(not widget.value)


def _pick_widget(at):
    """A main-area widget to change: a 'step' button, a 'head' control, else the first one."""
    main = at.main
    labels = [(b, b.label.lower()) for b in main.button]
    single = [b for b, t in labels if "next token" in t or ("step" in t and "run" not in t)]
    if single:  # one generation step, not "run N steps"
        return single[0]
    controls = [*main.slider, *main.selectbox, *main.number_input, *main.radio, *main.toggle]
    controls = [w for w in controls if not getattr(w, "disabled", False)]
    heads = [w for w in controls if "head" in w.label.lower()]
    return (heads or controls or [None])[0]


def bench_reruns(changes: int) -> dict:
    from tests.apptest_util import app_test

    models_dir, name = _bundled_models()
    out: dict[str, dict] = {}
    targets = [("Home", None)] + [(p.label, p.file) for p in nav.lesson_pages()]
    for label, file in targets:
        at = app_test(models_dir, file, query={"model": name})
        if at.exception:
            out[label] = {"error": str(at.exception[0].value)[:200]}
            continue
        times = []
        widget_label = "prompt"
        for i in range(changes + 1):  # the first change warms caches up
            if file is None:
                at.sidebar.text_area(key="_w_prompt").input(f"ROMEO:\nBut soft {i}")
            else:
                widget = _pick_widget(at)
                if widget is None:
                    widget_label = None
                    break
                widget_label = widget.label
                _change(at, widget)
            t0 = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - t0)
        if widget_label is None:
            out[label] = {"widget": None}
            continue
        same = []
        for _ in range(3):
            t0 = time.perf_counter()
            at.run()
            same.append(time.perf_counter() - t0)
        out[label] = {
            "widget": widget_label,
            "change_median_ms": round(statistics.median(times[1:]) * 1e3, 1),
            "change_max_ms": round(max(times[1:]) * 1e3, 1),
            "first_change_ms": round(times[0] * 1e3, 1),
            "rerun_unchanged_ms": round(statistics.median(same) * 1e3, 1),
            "exception": bool(at.exception),
        }
    return {"rerun_model": name, "reruns": out, "rerun_target_ms": RERUN_TARGET_MS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--changes", type=int, default=5)
    args = parser.parse_args()
    load = {"load_average_1min": round(os.getloadavg()[0], 2)}  # 2 cores: > 2 means contention
    emit("app", {**load, **bench_startup(args.starts), **bench_reruns(args.changes)})


if __name__ == "__main__":
    sys.exit(main())
