"""The shape of the package: no two modules import each other, however indirectly; below the CLI
imports sit at the top; functions, classes and folders stay small; each module's name appears
once; the core stays pure.

The layers themselves (launch → cli | web → app → edges → core) are import-linter contracts in
pyproject.toml, checked by `make test`; this adds what a layers contract cannot see: a cycle between
modules of one layer, function-local imports included (grimp reads every import statement).
"""

from __future__ import annotations

import ast
from pathlib import Path

import grimp

from tests.repo_kit import PACKAGE


def _cycles(graph: grimp.ImportGraph) -> list[str]:
    """Every direct import a → b of the package where b leads back to a."""
    return sorted(
        f"{module} → {imported}"
        for module in graph.modules
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.startswith("feedbackd.") and graph.chain_exists(imported, module)
    )


def test_no_module_imports_one_that_imports_it() -> None:
    assert _cycles(grimp.build_graph("feedbackd", cache_dir=None)) == []


def test_the_cycle_finder_sees_a_cycle_through_three_modules() -> None:
    graph = grimp.ImportGraph()
    for importer, imported in [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")]:
        graph.add_import(importer=f"feedbackd.{importer}", imported=f"feedbackd.{imported}")
    assert _cycles(graph) == [
        "feedbackd.a → feedbackd.b",
        "feedbackd.b → feedbackd.c",
        "feedbackd.c → feedbackd.a",
    ]


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
    below = ("core", "edges", "app")
    # A room renamed would leave its modules unchecked, and this test passing.
    assert all((PACKAGE / room).is_dir() for room in below)
    deferred = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] in below
        for hit in _imports_inside_functions(path)
    ]
    assert deferred == []


MAX_FUNCTION_LINES = 50
MAX_CLASS_LINES = 350


def _oversized(path: Path, root: Path = PACKAGE) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            limit = MAX_FUNCTION_LINES
        elif isinstance(node, ast.ClassDef):
            limit = MAX_CLASS_LINES
        else:
            continue
        size = (node.end_lineno or node.lineno) - node.lineno + 1
        if size > limit:
            found.append(f"{path.relative_to(root)}:{node.lineno} {node.name}: {size} lines")
    return found


def test_functions_and_classes_stay_readable() -> None:
    """No function over 50 lines and no class over 350: a reader holds each in their head."""
    assert [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in _oversized(path)] == []


def test_the_size_check_sees_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{n} = {n}" for n in range(MAX_FUNCTION_LINES))
    (tmp_path / "sample.py").write_text(f"def long() -> None:\n{body}\n")
    assert _oversized(tmp_path / "sample.py", tmp_path) == ["sample.py:1 long: 51 lines"]


ROOM_LIMIT = 15


def crowded_folders(package: Path) -> dict[str, int]:
    """Folders of the package with more than ROOM_LIMIT modules (`__init__.py` not counted)."""
    counts = {
        str(folder.relative_to(package.parent)): sum(
            1 for module in folder.glob("*.py") if module.name != "__init__.py"
        )
        for folder in [package, *(p for p in package.rglob("*") if p.is_dir())]
    }
    return {folder: count for folder, count in counts.items() if count > ROOM_LIMIT}


def test_no_folder_of_the_package_is_a_crowded_room() -> None:
    """A newcomer finds a module by its room: no folder holds more than 15 modules."""
    assert crowded_folders(PACKAGE) == {}


def test_the_room_check_sees_a_crowded_folder(tmp_path: Path) -> None:
    package = tmp_path / "feedbackd"
    (package / "loop").mkdir(parents=True)
    for number in range(ROOM_LIMIT + 1):
        (package / "loop" / f"module_{number}.py").write_text("")
    (package / "loop" / "__init__.py").write_text("")
    assert crowded_folders(package) == {"feedbackd/loop": ROOM_LIMIT + 1}


def names_in_two_places(package: Path) -> dict[str, list[str]]:
    """Module names (`__init__` and `__main__` apart) found in more than one folder."""
    places: dict[str, list[str]] = {}
    for module in sorted(package.rglob("*.py")):
        if not module.stem.startswith("__"):
            places.setdefault(module.stem, []).append(str(module.relative_to(package)))
    return {name: found for name, found in places.items() if len(found) > 1}


def test_each_module_name_appears_once() -> None:
    """docs/architecture.md: "where is X" has one answer; a cli/ module is named for its command,
    the module that does the work for what it does."""
    assert names_in_two_places(PACKAGE) == {}


def test_the_name_check_sees_a_name_in_two_rooms(tmp_path: Path) -> None:
    for room in ("cli", "app"):
        (tmp_path / room).mkdir()
        (tmp_path / room / "__init__.py").write_text("")
        (tmp_path / room / "sync.py").write_text("")
    assert names_in_two_places(tmp_path) == {"sync": ["app/sync.py", "cli/sync.py"]}


# The core holds values only (docs/architecture.md): nothing in it looks at the disk, reads the
# clock, draws at random or asks the process's surroundings. import-linter keeps the modules
# that do (os, time, random, secrets, …) out of it; these are the ways left: a path's own
# methods, the clock's methods on datetime and date, uuid's clock and random ids, the builtins
# that open a file or talk to the terminal. They are refused by name, on whatever object: a pure
# helper of the core takes another name.
IMPURE_ATTRIBUTES = frozenset(
    {
        # the disk, through a Path (or os.path, os, shutil: modules the core may not import)
        *("open", "read_text", "read_bytes", "write_text", "write_bytes", "touch", "mkdir"),
        *("exists", "lexists", "is_file", "is_dir", "is_symlink", "is_mount", "samefile"),
        *("iterdir", "glob", "rglob", "walk", "listdir", "scandir", "stat", "lstat"),
        *("resolve", "readlink", "absolute", "expanduser", "home", "cwd"),
        *("unlink", "rmdir", "rename", "symlink_to", "hardlink_to", "chmod", "lchmod"),
        # the clock
        *("now", "utcnow", "today", "time_ns", "monotonic", "perf_counter", "sleep"),
        # randomness (uuid1 reads the clock and the network card too)
        *("uuid1", "uuid4", "getnode", "urandom", "getrandom"),
        # the process's surroundings
        *("environ", "getenv", "argv", "stdin", "stdout", "stderr"),
    }
)
IMPURE_BUILTINS = frozenset({"open", "input", "print", "breakpoint"})
# The modules import-linter keeps out of the core as well, named here with the importing line.
IMPURE_MODULES = frozenset({"os", "time", "random", "secrets", "shutil", "tempfile", "glob"})


def _impure(path: Path, root: Path = PACKAGE) -> list[str]:
    """Each place in a core module that reaches past its values: `file:line what`."""
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in IMPURE_ATTRIBUTES:
            what = f".{node.attr}"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            what = f"{node.func.id}()" if node.func.id in IMPURE_BUILTINS else ""
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
            what = ", ".join(f"import {name}" for name in names if _impure_module(name))
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            module, names = node.module or "", [alias.name for alias in node.names]
            taken = names if _impure_module(module) else set(names) & IMPURE_ATTRIBUTES
            what = ", ".join(f"from {module} import {name}" for name in sorted(taken))
        else:
            continue
        if what:
            found.append((node.lineno, node.col_offset, what))
    return [f"{path.relative_to(root)}:{line} {what}" for line, _, what in sorted(found)]


def _impure_module(name: str) -> bool:
    return any(name == bad or name.startswith(f"{bad}.") for bad in IMPURE_MODULES)


def test_the_core_reads_no_disk_clock_or_randomness() -> None:
    """The clock (edges/clock.py), randomness (edges/randomness.py) and what the disk holds
    (edges/files.py) come in as arguments: `now`, a `Draw`, the text or the listing."""
    core = PACKAGE / "core"
    assert [hit for path in sorted(core.rglob("*.py")) for hit in _impure(path)] == []


def test_the_purity_check_sees_the_disk_the_clock_and_randomness(tmp_path: Path) -> None:
    (tmp_path / "sample.py").write_text(
        "import os.path, re\n"
        "import secrets, time\n"
        "from datetime import datetime\n"
        "from uuid import UUID, uuid4\n"
        "def f(path, now, text):\n"
        "    moment = datetime.now(), time.monotonic(), secrets.choice('ab')\n"
        "    body = path.read_text(encoding='utf-8') if path.exists() else open(path).read()\n"
        "    return re.sub('x', 'y', text), path.relative_to(path.parent), now.timestamp(),"
        " UUID(text), uuid4(), moment, body\n"
    )
    assert _impure(tmp_path / "sample.py", tmp_path) == [
        "sample.py:1 import os.path",
        "sample.py:2 import secrets, import time",
        "sample.py:4 from uuid import uuid4",
        "sample.py:6 .now",
        "sample.py:6 .monotonic",
        "sample.py:7 .read_text",
        "sample.py:7 .exists",
        "sample.py:7 open()",
    ]


def test_no_code_of_the_package_is_kept_from_the_formatter() -> None:
    """`# fmt: skip` (or `off`) would let a function or a table be squeezed under the limits
    above; the formatter lays out all of it."""
    kept = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if "# fmt: skip" in line or "# fmt: off" in line
    ]
    assert kept == []
