"""Safety, checked on the source itself: nothing in the repository can unpickle.

Every Python file of the project (app, pages, ui, viz_model, serving, scripts, benchmarks, tests)
is parsed, and each import or call that can run a pickle is refused unless it is made safe:
pickle and its relatives are never imported, `torch.load` only with `weights_only=True`,
`numpy.load` never with `allow_pickle=True`. Weights travel as safetensors, settings as JSON.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SKIP = {".git", ".venv", "__pycache__", "artifacts", "runs", ".pytest_cache", ".benchmarks"}
PICKLERS = {"pickle", "_pickle", "cPickle", "dill", "cloudpickle", "joblib", "shelve", "marshal"}
# (object, function) pairs that unpickle, and the keyword (with its value) that makes them safe
UNPICKLING_CALLS = {
    ("torch", "load"): ("weights_only", True),
    ("numpy", "load"): ("allow_pickle", False),
    ("np", "load"): ("allow_pickle", False),
}
ALWAYS_UNSAFE = {"read_pickle", "from_pickle"}  # pandas and friends: no safe form


def _dotted(node: ast.AST) -> str:
    """'torch.jit' for the Attribute chain torch.jit, '' when it is not a plain chain."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def _keyword(call: ast.Call, name: str):
    for kw in call.keywords:
        if kw.arg == name and isinstance(kw.value, ast.Constant):
            return kw.value.value
    return None


def unpickling(source: str) -> list[str]:
    """Each place in `source` that imports a pickler or may unpickle, as 'line N: what'."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            modules += [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            found += [
                f"line {node.lineno}: imports {m}" for m in modules if m.split(".")[0] in PICKLERS
            ]
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner, attr = _dotted(node.func.value), node.func.attr
        if attr in ALWAYS_UNSAFE or (owner.startswith("torch.jit") and attr == "load"):
            found.append(f"line {node.lineno}: {owner}.{attr}")
        safe = UNPICKLING_CALLS.get((owner, attr))
        if safe is not None and _keyword(node, safe[0]) is not safe[1]:
            found.append(f"line {node.lineno}: {owner}.{attr} without {safe[0]}={safe[1]}")
    return found


def project_files() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if not SKIP & set(p.relative_to(ROOT).parts[:-1]))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import pickle\npickle.loads(b'')", ["line 1: imports pickle"]),
        ("from joblib import load", ["line 1: imports joblib"]),
        ("import torch\ntorch.load('m.pt')", ["line 2: torch.load without weights_only=True"]),
        ("torch.load(f, weights_only=False)", ["line 1: torch.load without weights_only=True"]),
        ("torch.load(f, weights_only=True)", []),
        ("np.load(f, allow_pickle=True)", ["line 1: np.load without allow_pickle=False"]),
        ("np.load(f, allow_pickle=False)", []),
        ("pd.read_pickle(f)", ["line 1: pd.read_pickle"]),
        ("torch.jit.load(f)", ["line 1: torch.jit.load"]),
        ("safetensors.torch.load_file(f)", []),
    ],
)
def test_the_checker_finds_each_way_to_unpickle(source, expected):
    assert unpickling(source) == expected


def test_nothing_in_the_repository_can_unpickle():
    files = project_files()
    names = {p.relative_to(ROOT).as_posix() for p in files}
    assert {
        "viz_model/bundles/checkpoint.py",
        "ui/cache.py",
        "app.py",
    } <= names  # the walk saw the code
    found = {
        p.relative_to(ROOT).as_posix(): hits
        for p in files
        if (hits := unpickling(p.read_text(encoding="utf-8")))
    }
    assert found == {}
