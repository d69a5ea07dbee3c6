"""The shape of the package: no two modules import each other, however indirectly.

The layers themselves (cli → loop → edges → core) are import-linter contracts in pyproject.toml,
checked by `make test`; this adds what a layers contract cannot see: a cycle between modules of
one layer, function-local imports included (grimp reads every import statement).
"""

from __future__ import annotations

import ast
from pathlib import Path

import grimp

PACKAGE = Path(__file__).resolve().parents[1] / "daemon" / "feedbackd"


def _import_graph() -> dict[str, set[str]]:
    graph = grimp.build_graph("feedbackd", cache_dir=None)
    return {
        module: {
            imported
            for imported in graph.find_modules_directly_imported_by(module)
            if imported.startswith("feedbackd.")
        }
        for module in graph.modules
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in graph.get(module, ()):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_module_imports_one_that_imports_it() -> None:
    assert _cycles(_import_graph()) == []


def test_the_cycle_finder_sees_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def _imports_inside_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and (inner.module or "").startswith(
                    "feedbackd"
                ):
                    found.append(f"{path.name}:{inner.lineno} {inner.module}")
    return found


def test_only_the_command_line_defers_its_imports() -> None:
    """Below the CLI every import sits at the top of its module, where a reader sees it. The
    command line (and the package's own lazy attribute) may import a command's machinery when
    that command runs, so `feedbackd --help` and the merge driver start quickly."""
    deferred = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.parent.name in ("core", "edges", "loop")
        for hit in _imports_inside_functions(path)
    ]
    assert deferred == []
