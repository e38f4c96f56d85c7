"""The layers of docs/ARCHITECTURE.md hold: import-linter checks the contracts written in
pyproject.toml ([tool.importlinter]: the layers, no cycles, no Streamlit or plotly where none
belongs), nothing imports the pages or app.py, and the engine loads neither Streamlit nor plotly."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
    "importlinter"
]["contracts"]


def _lint_imports(cwd: Path) -> dict[str, str]:
    """Each contract's id -> KEPT or BROKEN, as `lint-imports` run in `cwd` reports it."""
    out = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
         "lint_imports_command()", "--no-cache", "--no-logo"],
        cwd=cwd, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(cwd), "COLUMNS": "500"},
    )  # fmt: skip
    status = dict(re.findall(r"^(.+) (KEPT|BROKEN)\b", out.stdout, re.M))
    assert out.returncode == (1 if "BROKEN" in status.values() else 0), out.stdout + out.stderr
    assert set(status) == {c["name"] for c in CONTRACTS}, out.stdout + out.stderr
    return {c["id"]: status[c["name"]] for c in CONTRACTS}


def test_the_project_keeps_every_import_contract():
    assert _lint_imports(ROOT) == {c["id"]: "KEPT" for c in CONTRACTS}


# A tree with the project's packages and subpackages and imports the contracts allow; each case
# below adds or replaces files and names the contract they break ("kept": none).
SKELETON = {
    "viz_model/model/gpt.py": "",
    "viz_model/text/data.py": "from viz_model.model import gpt\n",
    "viz_model/bundles/load.py": "",
    "viz_model/training/loop.py": "",
    "viz_model/analysis/attention.py": "from viz_model.model.gpt import GPT\n",
    "viz_model/analysis/labs/quant.py": "from viz_model.analysis import attention\n",
    "viz_model/lessons/steps.py": "from viz_model.analysis.labs import quant\n",
    "serving/jobs.py": "import viz_model.training.loop\n",
    "serving/streamlit_protocol.py": "def parse():\n    import streamlit\n",  # the allowed one
    "ui/charts/common.py": "import plotly.graph_objects as go\n",
    "ui/frame.py": "import streamlit as st\nimport serving.jobs\nfrom ui.charts import common\n",
}
UPWARD = {
    "kept": {},
    "kept: under TYPE_CHECKING": {
        "viz_model/model/gpt.py": "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from viz_model.text.data import Corpus\n"
    },
    "engine-layers: inside a function": {
        "viz_model/model/gpt.py": "def load():\n    from viz_model.text import data\n"
    },
    "engine-layers: a subpackage in no layer": {"viz_model/extra/__init__.py": ""},
    "labs": {"viz_model/analysis/claims.py": "from viz_model.analysis.labs.quant import Q\n"},
    "layers": {"serving/jobs.py": "import ui.frame\n"},
    "charts": {"ui/charts/common.py": "from ui import frame\n"},
    "acyclic": {"ui/nav.py": "import ui.state\n", "ui/state.py": "def f():\n    import ui.nav\n"},
    "no-streamlit": {"viz_model/bundles/load.py": "import streamlit\n"},
    "no-plotly": {"serving/jobs.py": "from plotly import graph_objects\n"},
}


@pytest.mark.parametrize("case", UPWARD)
def test_an_upward_import_breaks_its_contract(tmp_path, case):
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    files = {**SKELETON, **UPWARD[case]}
    for name in files:
        for parent in Path(name).parents[:-1]:  # every package gets an __init__.py
            (tmp_path / parent / "__init__.py").parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / parent / "__init__.py").touch()
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    status, contract = _lint_imports(tmp_path), case.partition(":")[0]
    if contract == "kept":
        assert set(status.values()) == {"KEPT"}
    else:  # the contract named breaks on its own (an upward import often makes a cycle as well)
        assert status[contract] == "BROKEN"


def _importers_of_the_scripts() -> set[str]:
    """Files that import app.py or a page: the scripts Streamlit runs sit above every package, and
    import-linter cannot read them (pages/ is no package), so nothing may import them."""
    files = [ROOT / "app.py", *(p for d in ("viz_model", "serving", "ui", "pages", "scripts")
                                for p in (ROOT / d).rglob("*.py"))]  # fmt: skip
    found = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names] if isinstance(node, ast.Import)
                else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )  # fmt: skip
            if any(n.split(".")[0] in ("app", "pages") for n in names):
                found.add(str(path.relative_to(ROOT)))
    return found


def test_nothing_imports_the_pages_or_app():
    assert _importers_of_the_scripts() == set()


def _json_of_a_fresh_python(code: str) -> dict:
    """What `code`, run in a new interpreter (nothing imported yet), prints as JSON."""
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_importing_the_whole_engine_loads_neither_streamlit_nor_plotly():
    code = (
        "import importlib, json, pkgutil, sys\n"
        "import viz_model\n"
        "names = [m.name for m in pkgutil.walk_packages(viz_model.__path__, 'viz_model.')\n"
        "         if not m.name.endswith('__main__')]\n"
        "for name in names: importlib.import_module(name)\n"
        "print(json.dumps({'modules': len(names), 'loaded': sorted(\n"
        "    m for m in ('streamlit', 'plotly', 'altair') if m in sys.modules)}))\n"
    )
    result = _json_of_a_fresh_python(code)
    assert result["modules"] > 30
    assert result["loaded"] == []


def test_chart_builders_and_the_server_side_load_no_streamlit_and_change_nothing():
    """ui/charts/ (arrays in, a figure out) and serving/ (jobs, the class server, class state)
    are documented as Streamlit-free: importing every module of both loads no Streamlit, and
    importing `ui` changes nothing in the process (torch's threads stay as they were: the page
    server's settings are made by app.py through ui/boot.py, issue 40)."""
    code = (
        "import importlib, json, pkgutil, sys\n"
        "import torch\n"
        "torch.set_num_threads(3)\n"
        "import ui, ui.charts, serving\n"
        "names = [m.name for p, pre in ((ui.charts, 'ui.charts.'), (serving, 'serving.'))\n"
        "         for m in pkgutil.walk_packages(p.__path__, pre) if not m.name.endswith('__main__')]\n"
        "for name in names: importlib.import_module(name)\n"
        "print(json.dumps({'modules': len(names), 'threads': torch.get_num_threads(),\n"
        "    'streamlit': 'streamlit' in sys.modules, 'frame': 'ui.frame' in sys.modules}))\n"
    )
    result = _json_of_a_fresh_python(code)
    assert result["modules"] > 30
    assert result == {**result, "threads": 3, "streamlit": False, "frame": False}


def test_ui_context_is_the_frames_and_the_process_is_set_up_once():
    """Pages keep `ctx = ui.context()` (looked up in ui/frame.py on first use)."""
    import ui
    from ui import boot, frame

    assert ui.context is frame.context and ui.PageContext is frame.PageContext
    with pytest.raises(AttributeError):
        ui.no_such_name  # noqa: B018
    assert boot.torch_threads("2") == 2 and boot.torch_threads("-1") == 1


# Streamlit names these for removal after 2026-06-01 (st.html and st.iframe replace them); the
# server logs the warning at every call, and the next upgrade would break the page that calls them.
REMOVED_STREAMLIT = ("streamlit.components.v1",)


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return found


def test_no_code_imports_a_streamlit_api_past_its_removal_date():
    users = {
        str(path.relative_to(ROOT))
        for path in ROOT.rglob("*.py")
        if not any(part.startswith(".") for part in path.relative_to(ROOT).parts)
        and _imported_modules(path) & set(REMOVED_STREAMLIT)
    }
    assert users == set()


def test_the_removal_check_sees_every_way_of_importing_it(tmp_path):
    for line in (
        "import streamlit.components.v1 as components",
        "from streamlit.components import v1",
        "from streamlit.components.v1 import html",
    ):
        (tmp_path / "x.py").write_text(line + "\n")
        assert _imported_modules(tmp_path / "x.py") & set(REMOVED_STREAMLIT), line


def _fragments(path: Path) -> list[int]:
    """The lines where `path` makes a fragment with Streamlit's own st.fragment."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "fragment"
        and isinstance(node.value, ast.Name) and node.value.id == "st"
    ]  # fmt: skip


def test_a_pages_fragments_publish_a_teachers_change_to_the_class():
    """A page's fragment reruns alone, without app.py around it, so a teacher's change of view
    made there (a position, a neuron) reaches the class only through ui/classroom.view_fragment
    (issue 37)."""
    assert {
        str(p.relative_to(ROOT)): lines
        for p in sorted((ROOT / "pages").glob("*.py"))
        if (lines := _fragments(p))
    } == {}


def test_the_fragment_check_sees_a_decorator_and_a_call(tmp_path):
    (tmp_path / "x.py").write_text("@st.fragment\ndef f(): ...\ng = st.fragment(f, run_every=1)\n")
    assert _fragments(tmp_path / "x.py") == [1, 3]
