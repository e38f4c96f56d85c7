"""AppTest for pages inside the frame: `app_test(models_dir, "pages/03_attention.py", prompt="abc")`.

`AppTest.from_file("pages/X.py")` would run the page script alone, without app.py's router and
frame (no navigation, sidebar or `ui.context()`); this starts at app.py (Home), then switches to
the page, as a student following a link would.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import numpy as np
import streamlit as st
from streamlit.testing.v1 import AppTest

from serving.models import ENV_VAR
from ui import nav
from ui.parts import NUMBERS_KEY, numbers_key
from ui.streamlit_internals import open_at_page

ROOT = Path(__file__).resolve().parent.parent


def first_bundle(models_dir: str | os.PathLike) -> str | None:
    """The name of the first bundle (a folder with config.json) in models_dir, by name."""
    names = sorted(p.name for p in Path(models_dir).iterdir() if (p / "config.json").is_file())
    return names[0] if names else None


def app_test(
    models_dir: str | os.PathLike,
    page: str | None = None,
    prompt: str | None = None,
    query: dict | None = None,
    timeout: float = 60,
) -> AppTest:
    """An AppTest that has run Home, then `page` (e.g. "pages/03_attention.py") when given.

    Bundles in models_dir are found through VIZ_MODEL_DIRS (set for the rest of this process: the
    app reads it on every rerun). Unless `query` names a model, the first bundle of models_dir is
    chosen (not a bundled model), so tests run on the small test model. `prompt` goes in the URL,
    as in a shared link; `query` adds other URL parameters (e.g. {"layer": "1"}). Exceptions keep
    their full message and stack (`at.exception[0].value`, `.stack_trace`), unlike in class.
    """
    at = _app(models_dir, timeout)
    params = dict(query or {})
    if "model" not in params and (name := first_bundle(models_dir)):
        params["model"] = name
    if prompt is not None:
        params["prompt"] = prompt
    for key, value in params.items():
        at.query_params[key] = str(value)
    at.run()
    if page is not None:
        at.switch_page(page).run()
    return at


def open_link(
    models_dir: str | os.PathLike, page: str | None, query: dict[str, str], timeout: float = 60
) -> AppTest:
    """`page` (a file, None for Home) opened straight from a link carrying `query`: its first run
    is the page's, so a bad value in the link is met there, not on Home as with `app_test`.

    A link names the page by its url_path, and Streamlit knows a page by the hash of it. Before a
    first run AppTest.switch_page can only hash the file's name, which is not the url_path here.
    """
    at = _app(models_dir, timeout)
    for key, value in query.items():
        at.query_params[key] = value
    if page is not None:
        open_at_page(at, next(p for p in nav.all_pages() if p.file == page).url_path)
    return at.run()


def _app(models_dir: str | os.PathLike, timeout: float) -> AppTest:
    """app.py in AppTest, finding bundles in models_dir through VIZ_MODEL_DIRS (set for the rest
    of this process: the app reads it on every rerun)."""
    os.environ[ENV_VAR] = str(models_dir)
    # The classroom config hides error details from students; tests need the message and stack.
    st.set_option("client.showErrorDetails", "full")
    return AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)


def plotly_figures(at: AppTest) -> list[dict]:
    """Every plotly chart on the page, as the figure JSON the browser receives."""
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def plotly_array(value) -> np.ndarray:
    """A plotly JSON array: a plain list, or {"dtype", "bdata" (base64), "shape"}."""
    if isinstance(value, dict):
        data = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        shape = [int(n) for n in str(value.get("shape", len(data))).split(",")]
        return data.reshape(shape)
    return np.array(value, dtype=float)


def open_numbers(at: AppTest, key: str = NUMBERS_KEY) -> AppTest:
    """Open a page's "numbers behind it" section and rerun: its tables are built only while it is
    open (ui/parts.numbers_behind_it). AppTest does not carry an expander's open state across
    runs, so a test opens it again before each run that should draw them."""
    at.session_state[numbers_key(key)] = True
    return at.run()
