"""Count import cycles and upward imports among the project's own modules.

    python scripts/check_imports.py          # prints JSON; exits 1 if any cycle or upward import

Every `import` and `from ... import` of a project module counts, at module level or inside a
function (a function-level import hides a cycle, it does not remove it); only imports under
`if TYPE_CHECKING:` are left out, because they never run. The layers, lowest first, are the ones
docs/ARCHITECTURE.md draws: a module may import from its own layer or a lower one, never a
higher one. Within a layer any import is allowed as long as it makes no cycle.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("viz_model", "serving", "ui", "pages")
SCRIPTS = ("app.py",)
# Lowest first. A module belongs to the first prefix it starts with, read from the most specific.
LAYERS = (
    "viz_model.model",
    "viz_model.text",
    "viz_model.bundles",
    "viz_model.training",
    "viz_model.analysis",
    "viz_model.analysis.labs",
    "viz_model.lessons",
    "viz_model",
    "serving",
    "ui.charts",
    "ui",
    "pages",
    "app",
)


def module_name(path: Path) -> str:
    """viz_model/model/gpt.py -> viz_model.model.gpt; a package's __init__ is the package."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    """Every project module by name (pages by file stem: pages.3_Attention)."""
    files = [ROOT / s for s in SCRIPTS]
    for package in PACKAGES:
        files += sorted((ROOT / package).rglob("*.py"))
    return {module_name(f): f for f in files if f.is_file()}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_names(path: Path, module: str) -> set[str]:
    """Dotted names a file imports: `from a.b import c` gives a.b and a.b.c (c may be a module)."""
    names: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    class Visitor(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            if _is_type_checking(node.test):
                for child in node.orelse:
                    self.visit(child)
                return
            self.generic_visit(node)

        def visit_Import(self, node: ast.Import) -> None:
            names.update(alias.name for alias in node.names)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            names.add(source)
            names.update(f"{source}.{alias.name}" for alias in node.names)

    Visitor().visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return names


def import_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports (the most specific module each name denotes)."""
    modules = project_modules()
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets = set()
        for name in imported_names(path, module):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    # `from viz_model.text.data import X` names viz_model.text.data and X; drop the packages a
    # more specific import of the same statement already stands for.
    for module, targets in graph.items():
        graph[module] = {t for t in targets if not any(o.startswith(t + ".") for o in targets)}
    return graph


def layer(module: str) -> int:
    """The index in LAYERS of the most specific prefix of `module`."""
    best, depth = len(LAYERS), -1
    for i, prefix in enumerate(LAYERS):
        if (module == prefix or module.startswith(prefix + ".")) and prefix.count(".") > depth:
            best, depth = i, prefix.count(".")
    return best


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) pairs where the imported module sits in a higher layer."""
    return sorted((a, b) for a, targets in graph.items() for b in targets if layer(b) > layer(a))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def report() -> dict:
    graph = import_graph()
    up = upward_imports(graph)
    loops = cycles(graph)
    return {
        "modules": len(graph),
        "imports": sum(len(t) for t in graph.values()),
        "cycles": len(loops),
        "upward_imports": len(up),
        "cycle_members": loops,
        "upward": [f"{a} -> {b}" for a, b in up],
    }


def main() -> int:
    result = report()
    print(json.dumps(result, indent=1))
    return 1 if result["cycles"] or result["upward_imports"] else 0


if __name__ == "__main__":
    sys.exit(main())
