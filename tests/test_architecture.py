"""The layers of docs/ARCHITECTURE.md hold: no import cycles, no upward imports, and the engine
loads neither Streamlit nor plotly (scripts/check_imports.py counts; these tests hold it to 0)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from scripts import check_imports

ROOT = Path(__file__).resolve().parent.parent


def test_the_project_has_no_import_cycles_and_no_upward_imports():
    report = check_imports.report()
    assert report["modules"] > 90  # every package was read (a wrong root would find none)
    assert report["cycle_members"] == []
    assert report["upward"] == []


def test_the_checker_finds_a_cycle_hidden_in_a_function():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert check_imports.cycles(graph) == [["a", "b", "c"]]
    assert check_imports.cycles({"a": {"b"}, "b": set()}) == []


def test_the_checker_calls_an_import_of_a_higher_layer_upward():
    graph = {
        "viz_model.model.gpt": {"viz_model.text.tokenization"},  # model sits below text
        "viz_model.analysis.attention": {"viz_model.model.gpt"},
        "serving.jobs": {"ui.frame"},
        "ui.frame": {"serving.jobs", "ui.charts.common"},
    }
    assert check_imports.upward_imports(graph) == [
        ("serving.jobs", "ui.frame"),
        ("viz_model.model.gpt", "viz_model.text.tokenization"),
    ]


def test_imports_under_type_checking_do_not_count_and_function_level_ones_do(tmp_path):
    source = tmp_path / "mod.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from viz_model.model.gpt import GPT\n"
        "def f():\n    from viz_model.text import data\n"
    )
    names = check_imports.imported_names(source, "viz_model.bundles.mod")
    assert "viz_model.model.gpt" not in names
    assert "viz_model.text.data" in names


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
