"""Every page of the registry (ui/nav.py) has its parts, as docs/ADD_A_PAGE.md lays them out (issue 40):

- its script is short (at most MAX_LINES non-blank lines, the docstring included), defines no
  function or class, and starts with `ctx = ui.context()` after its imports: the page's sections
  are functions in `ui/`;
- no function of a page's sections modules reads a module-level variable assigned below it;
- the chart builders those modules call (`ui/charts/`) are called through `cache.figure`, or
  inside a cached function (`@cache.per_prompt`, `@cache.per_model`) that returns the figure;
- it has a page test file, `tests/test_page_<name>.py` after the script's name or the one in
  TEST_FILES, which opens it.

A page not yet brought to the template is listed in NOT_YET with why; a page that meets the
template must leave the list. These tests read source only; nothing runs a page.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import re
import symtable
from pathlib import Path

import pytest

from ui import nav

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 40

# The pages whose script is not yet the template's short table of contents, each with why. Keep
# it honest: a page brought to the template leaves it (test_every_exception_is_still_needed).
NOT_YET: dict[str, str] = {}  # every page is on the template (issue 40)

# Page test files not named after the script (tests/test_page_<name>.py).
TEST_FILES = {
    "pages/00_home.py": "tests/test_app_home.py",  # Home is where app_test starts
    "pages/04_residual_stream.py": "tests/test_page_residual.py",
    "pages/06_mlp_neurons.py": "tests/test_page_neurons.py",
    "pages/14_inside_a_block.py": "tests/test_page_inside_block.py",
}

# ui modules every page may import that are not a page's own sections: the frame and the shared
# parts (their figures are the frame's, checked where they are tested).
SHARED = {
    "ui",
    "ui.cache",
    "ui.classroom",
    "ui.corpus",
    "ui.frame",
    "ui.lesson",
    "ui.nav",
    "ui.parts",
    "ui.present",
    "ui.state",
}

# Sections modules whose figures are drawn without the cache, each with why.
UNCACHED_FIGURES = {
    "ui/class_page.py": "the live class's answers, redrawn every few seconds from the class "
    "database as they come in: each figure is seen once, by the teacher",
}

PAGES = nav.all_pages()
TEMPLATE = [p for p in PAGES if p.file not in NOT_YET]


def _ids(page: nav.Page) -> str:
    return page.url_path or "Home"


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


# ---- the page script --------------------------------------------------------------------------


def script_problems(path: Path) -> list[str]:
    """What keeps the script at `path` from the template's shape; empty when it has it."""
    text = path.read_text(encoding="utf-8")
    problems = []
    lines = sum(1 for line in text.splitlines() if line.strip())
    if lines > MAX_LINES:
        problems.append(f"{lines} non-blank lines (at most {MAX_LINES})")
    body = _tree(path).body
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            problems.append(f"defines {node.name} (line {node.lineno}): a section goes in ui/")
    rest = [
        n
        for n in body
        if not isinstance(n, ast.Import | ast.ImportFrom)
        and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))  # docstring
    ]
    if not rest or not _is_context(rest[0]):
        problems.append("does not start with `ctx = ui.context()` after its imports")
    return problems


def _is_context(node: ast.stmt) -> bool:
    """`ctx = ui.context()`."""
    return (
        isinstance(node, ast.Assign)
        and [ast.unparse(t) for t in node.targets] == ["ctx"]
        and ast.unparse(node.value) == "ui.context()"
    )


@pytest.mark.parametrize("page", TEMPLATE, ids=_ids)
def test_a_page_script_is_its_table_of_contents(page):
    assert script_problems(ROOT / page.file) == []


@pytest.mark.parametrize("page", PAGES, ids=_ids)
def test_every_page_reads_the_page_context(page):
    """Home included: every page works from `ctx = ui.context()`, the frame's model and prompt."""
    assert any(_is_context(node) for node in _tree(ROOT / page.file).body), page.file


def test_every_exception_is_still_needed():
    files = {p.file for p in PAGES}
    assert set(NOT_YET) <= files, sorted(set(NOT_YET) - files)
    meets = [f for f in NOT_YET if not script_problems(ROOT / f)]
    assert meets == [], f"{meets} meet the template now: take them off NOT_YET"
    assert all(why.startswith("not yet: issue 40 (") for why in NOT_YET.values())


def test_the_script_check_sees_length_definitions_and_a_missing_context(tmp_path):
    short = tmp_path / "short.py"
    short.write_text(
        '"""A page."""\n\nimport ui\nfrom ui import x\n\nctx = ui.context()\nx.draw(ctx)\n'
    )
    assert script_problems(short) == []
    long = tmp_path / "long.py"
    long.write_text("import ui\nctx = ui.context()\n" + "x = 1\n" * MAX_LINES)
    assert script_problems(long) == [f"{MAX_LINES + 2} non-blank lines (at most {MAX_LINES})"]
    defs = tmp_path / "defs.py"
    defs.write_text("import ui\nN = 3\nctx = ui.context()\ndef f():\n    pass\n")
    assert [p.split(" (")[0] for p in script_problems(defs)] == [
        "defines f",
        "does not start with `ctx = ui.context()` after its imports",
    ]


# ---- the page's sections modules ----------------------------------------------------------------


def section_modules(page: nav.Page) -> list[Path]:
    """The files of the ui modules the page's sections live in (not the SHARED ones, nor the chart
    builders): those the page imports, and the ui modules those import in turn (Training's
    sections call ui/training/live.py, Architecture contrasts' ui/contrast_sweeps.py); for a module
    of a package (ui/attention/head.py), every module of it."""
    files: set[Path] = set()
    todo = [ROOT / page.file]
    while todo:
        for found in _ui_module_files(todo.pop()) - files:
            files.add(found)
            todo.append(found)
    return sorted(files)


def _ui_module_files(path: Path) -> set[Path]:
    """The files of the non-shared, non-chart ui modules `path` imports."""
    names = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "ui":
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                names.add(full if _is_module(full) else node.module)
    files = set()
    for name in names - SHARED:
        if name == "ui" or name.startswith("ui.charts"):  # the package, chart builders
            continue
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        origin = Path(spec.origin)
        if name.count(".") >= 2 or origin.name == "__init__.py":  # a package's module, or it
            files |= set(origin.parent.glob("*.py"))
        else:
            files.add(origin)
    return files


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def globals_read_before_assignment(path: Path) -> list[str]:
    """ "name (line): function" for each module-level variable a function of `path` reads that is
    first assigned below the function (functions, classes and imports may come in any order)."""
    tree = _tree(path)
    assigned: dict[str, int] = {}
    for node in tree.body:
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    assigned.setdefault(name.id, node.lineno)
    lines = {
        node.name: node.lineno
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    found = []

    def visit(table: symtable.SymbolTable, top: str) -> None:
        if table.get_type() == "function":
            for sym in table.get_symbols():
                name = sym.get_name()
                late = name in assigned and assigned[name] > lines[top]
                if late and sym.is_global() and sym.is_referenced():
                    found.append(f"{name} ({assigned[name]}): {top}")
        for child in table.get_children():
            visit(child, top)

    for child in symtable.symtable(
        path.read_text(encoding="utf-8"), str(path), "exec"
    ).get_children():
        if child.get_name() in lines:
            visit(child, child.get_name())
    return found


def builder_calls_outside_the_cache(path: Path) -> list[str]:
    """ "builder (line)" for each call of a chart builder (a function of ui/charts/ that returns a
    figure) that is neither cache.figure's first argument nor inside a cached function."""
    tree = _tree(path)
    modules: dict[str, object] = {}  # a local name -> the ui.charts module it stands for
    functions: dict[str, object] = {}  # a local name -> a function imported from ui.charts
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                local = alias.asname or alias.name
                if node.module == "ui.charts":
                    modules[local] = importlib.import_module(f"ui.charts.{alias.name}")
                elif node.module.startswith("ui.charts."):
                    functions[local] = getattr(importlib.import_module(node.module), alias.name)

    def builder(call: ast.Call) -> str | None:
        f = call.func
        fn = None
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in modules:
            fn = getattr(modules[f.value.id], f.attr, None)
        elif isinstance(f, ast.Name) and f.id in functions:
            fn = functions[f.id]
        if fn is None or not callable(fn):
            return None
        returns = inspect.signature(fn).return_annotation
        return ast.unparse(f) if "Figure" in str(returns) else None

    found = []

    def visit(node: ast.AST, cached: bool) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            decorators = [ast.unparse(d).split("(")[0] for d in node.decorator_list]
            cached = cached or any(d in ("cache.per_prompt", "cache.per_model") for d in decorators)
        if isinstance(node, ast.Call) and not cached and (name := builder(node)):
            found.append(f"{name} ({node.lineno})")
        for child in ast.iter_child_nodes(node):
            visit(child, cached)

    visit(tree, False)
    return found


@pytest.mark.parametrize("page", TEMPLATE, ids=_ids)
def test_a_pages_sections_read_no_variable_defined_below_and_cache_their_figures(page):
    files = section_modules(page)
    assert files, f"{page.file} imports no sections module from ui/"
    problems = {
        name: globals_read_before_assignment(f)
        + ([] if name in UNCACHED_FIGURES else builder_calls_outside_the_cache(f))
        for f in files
        if (name := str(f.relative_to(ROOT)))
    }
    assert {f: p for f, p in problems.items() if p} == {}


def test_the_section_checks_see_a_late_variable_and_an_uncached_figure(tmp_path):
    late = tmp_path / "late.py"
    late.write_text("def f():\n    return N + g()\n\ndef g():\n    return 1\n\nN = 3\n")
    assert globals_read_before_assignment(late) == ["N (7): f"]
    figures = tmp_path / "figures.py"
    figures.write_text(
        "from ui import cache\n"
        "from ui.charts import ngrams as charts\n"
        "from ui.charts.attention import pattern_heatmap, lines_window\n"
        "def a():\n    return charts.sparsity_chart([1.0], 'x')\n"
        "def b():\n    return cache.figure(charts.sparsity_chart, [1.0], 'x')\n"
        "@cache.per_prompt\ndef c(i):\n    return pattern_heatmap(i, [])\n"
        "def d():\n    return pattern_heatmap(1, []), lines_window(3, 1)\n"
    )
    assert builder_calls_outside_the_cache(figures) == [
        "charts.sparsity_chart (5)",
        "pattern_heatmap (12)",
    ]


# ---- the page's tests ---------------------------------------------------------------------------


def page_test_file(page: nav.Page) -> Path:
    name = re.sub(r"^\d+_", "", Path(page.file).stem)
    return ROOT / TEST_FILES.get(page.file, f"tests/test_page_{name}.py")


@pytest.mark.parametrize("page", PAGES, ids=_ids)
def test_every_page_has_a_page_test_that_opens_it(page):
    path = page_test_file(page)
    assert path.is_file(), f"{page.file} has no page test ({path.relative_to(ROOT)})"
    text = path.read_text(encoding="utf-8")
    opens = page.file in text if page.url_path else "app_test(" in text  # Home: where it starts
    assert opens, f"{path.relative_to(ROOT)} does not open {page.file}"
