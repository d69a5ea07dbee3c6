"""The suite's own shape. A test file sits where a reader looks for it: beside the room of the
package it tests (the test of daemon/feedbackd/core/curation/agentplan.py is
tests/core/curation/test_agentplan.py), in tests/system/ when its tests start the daemon, a
server or many processes (the slow ring), or in tests/project/ when it checks the repository as
a whole. And no test passes without checking anything: one of its asserts runs whatever the
data, not only inside a loop over something that may be empty.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.repo_kit import PACKAGE, TESTS

# Rooms of the suite's own, beside those that mirror the package's.
SLOW_RING = "system"
OWN_ROOMS = frozenset({SLOW_RING, "project"})
# Not tests: the benchmarks, run by `make bench`.
NOT_TESTS = frozenset({"bench"})


def package_rooms(package: Path) -> set[str]:
    """The package's folders below its top, as paths relative to it: `core/curation`, `web`."""
    return {
        folder.relative_to(package).as_posix()
        for folder in package.rglob("*")
        if folder.is_dir() and (folder / "__init__.py").is_file()
    }


def misplaced_tests(tests: Path, package: Path) -> list[str]:
    """Each test file outside the rooms, or in the wrong one, with the reason: `path: why`."""
    rooms = package_rooms(package) | OWN_ROOMS
    found = []
    for path in sorted(tests.rglob("test_*.py")):
        rel = path.relative_to(tests)
        room = rel.parent.as_posix()
        if rel.parts[0] in NOT_TESTS:
            continue
        if room not in rooms:
            found.append(f"{rel}: not in a room of the package, nor in {sorted(OWN_ROOMS)}")
        elif _whole_module_slow(path) and room != SLOW_RING:
            found.append(f"{rel}: every test is marked slow: it belongs in tests/{SLOW_RING}/")
        elif room == SLOW_RING and "mark.slow" not in path.read_text(encoding="utf-8"):
            found.append(f"{rel}: no test is marked slow: it belongs in its package room")
        found += _missing_packages(tests, path)
    return sorted(set(found))


def _whole_module_slow(path: Path) -> bool:
    """`pytestmark = pytest.mark.slow` (or a list holding it) at the top of the module."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytestmark" for target in node.targets
        ):
            return "mark.slow" in ast.unparse(node.value)
    return False


def _missing_packages(tests: Path, path: Path) -> list[str]:
    """Folders between tests/ and `path` without an __init__.py: each folder is a package, so
    two rooms may hold test files of one name, and `from tests.x_kit import ...` works."""
    return [
        f"{folder.relative_to(tests.parent)}/: no __init__.py"
        for folder in [path.parent, *path.parent.parents]
        if folder.is_relative_to(tests) and not (folder / "__init__.py").is_file()
    ]


def test_every_test_file_sits_in_its_room() -> None:
    assert misplaced_tests(TESTS, PACKAGE) == []


def test_the_layout_check_sees_a_file_out_of_its_room(tmp_path: Path) -> None:
    package, tests = tmp_path / "feedbackd", tmp_path / "tests"
    for folder in [package / "core" / "ratings", tests / "core", tests / "system"]:
        folder.mkdir(parents=True)
    for folder in [package / "core", package / "core" / "ratings", tests, *tests.iterdir()]:
        (folder / "__init__.py").write_text("")
    slow = "import pytest\n\npytestmark = pytest.mark.slow\n"
    files = {
        "test_flat.py": "",  # a flat file, as the suite once was
        "core/test_fine.py": "",
        "core/test_all_slow.py": slow,
        "system/test_daemon.py": slow,
        "system/test_nothing_slow.py": "def test_x() -> None: ...\n",
        "loop/test_gone_room.py": "",  # a room the package no longer has
        "core/ratings/test_no_init.py": "",
        "bench/test_a_benchmark_s_own.py": "",
    }
    for name, text in files.items():
        (tests / name).parent.mkdir(parents=True, exist_ok=True)
        (tests / name).write_text(text)
    assert misplaced_tests(tests, package) == [
        "core/test_all_slow.py: every test is marked slow: it belongs in tests/system/",
        "loop/test_gone_room.py: not in a room of the package, nor in ['project', 'system']",
        "system/test_nothing_slow.py: no test is marked slow: it belongs in its package room",
        "test_flat.py: not in a room of the package, nor in ['project', 'system']",
        "tests/core/ratings/: no __init__.py",
        "tests/loop/: no __init__.py",
    ]


def checks_that_may_never_run(path: Path) -> list[str]:
    """Each test of `path` with checks whose every one sits in a loop over something that may
    be empty: `line name`. A loop surely runs over a collection written out in the test or the
    module (a tuple, list, set or dict, or a range of constants); over anything else, assert
    first that it holds something."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module_literals = _literal_names(tree.body)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            literals = module_literals | _literal_names(node.body)
            loops_of_checks = [loops for loops in _checks(node, ()) if loops is not None]
            if loops_of_checks and not any(
                all(_surely_runs(loop, literals) for loop in loops) for loops in loops_of_checks
            ):
                found.append(f"{node.lineno} {node.name}")
    return found


def _checks(node: ast.AST, loops: tuple[ast.AST, ...]) -> Iterator[tuple[ast.AST, ...]]:
    """The loops around each check of a test (an assert, an assert_… helper, pytest.raises)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(child, ast.Assert) or (isinstance(child, ast.Call) and _is_check(child)):
            yield loops
        inner = (*loops, child) if isinstance(child, ast.For | ast.While) else loops
        yield from _checks(child, inner)


def _is_check(call: ast.Call) -> bool:
    name = ast.unparse(call.func).rsplit(".", 1)[-1].lstrip("_")
    return name.startswith("assert") or name in ("raises", "fail")


def _literal_names(body: list[ast.stmt]) -> set[str]:
    """Names a block binds, at its top, to a collection written out with something in it."""
    return {
        target.id
        for node in body
        if isinstance(node, ast.Assign) and _written_out(node.value, set())
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _surely_runs(loop: ast.AST, literals: set[str]) -> bool:
    if isinstance(loop, ast.While):
        return isinstance(loop.test, ast.Constant) and bool(loop.test.value)
    assert isinstance(loop, ast.For)
    return _written_out(loop.iter, literals)


def _written_out(node: ast.expr, literals: set[str]) -> bool:
    """A collection that holds something, by its own text: `(a, b)`, `range(3)`, `NAMES`,
    `sorted(NAMES)`, `CASES.items()`."""
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return bool(node.elts)
    if isinstance(node, ast.Dict):
        return bool(node.keys)
    if isinstance(node, ast.Name):
        return node.id in literals
    if not isinstance(node, ast.Call):
        return False
    name = ast.unparse(node.func)
    if name == "range" and all(isinstance(arg, ast.Constant) for arg in node.args):
        return len(range(*(arg.value for arg in node.args))) > 0
    if name in ("enumerate", "zip", "sorted", "reversed", "list", "tuple"):
        return bool(node.args) and all(_written_out(arg, literals) for arg in node.args)
    if isinstance(node.func, ast.Attribute) and node.func.attr in ("items", "keys", "values"):
        return _written_out(node.func.value, literals)
    return False


def test_no_test_passes_without_checking_anything() -> None:
    found = [
        f"{path.relative_to(TESTS)}:{hit}"
        for path in sorted(TESTS.rglob("test_*.py"))
        for hit in checks_that_may_never_run(path)
    ]
    assert found == []


def test_the_check_sees_asserts_that_only_a_loop_over_data_runs(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(
        "NAMES = ('a', 'b')\n"
        "def test_over_data(events):\n"
        "    for event in events:\n"
        "        if event:\n"
        "            assert event\n"
        "def test_over_data_asserted_first(events):\n"
        "    assert events\n"
        "    for event in events:\n"
        "        assert event\n"
        "def test_over_names_written_out():\n"
        "    cases = {'x': 1}\n"
        "    for name in NAMES:\n"
        "        for key, value in sorted(cases.items()):\n"
        "            assert name and key and value\n"
        "def test_over_an_empty_range():\n"
        "    for number in range(0):\n"
        "        assert_fine(number)\n"
        "def test_helper_checks_inside_a_loop_over_data(rows):\n"
        "    for row in rows:\n"
        "        with pytest.raises(ValueError):\n"
        "            parse(row)\n"
        "def test_nothing_checked_here():\n"
        "    run()\n"
    )
    assert checks_that_may_never_run(tmp_path / "test_sample.py") == [
        "2 test_over_data",
        "15 test_over_an_empty_range",
        "18 test_helper_checks_inside_a_loop_over_data",
    ]
