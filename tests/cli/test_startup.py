"""Every command pays for what the process imports before it runs: `--version` loads none of the
command line, and a command loads its own machinery, not the other commands' (what each costs
in time: tests/bench/bench_cli_startup.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from feedbackd.cli import main
from feedbackd.launch import mcp_options
from tests.workspace_kit import Site, draft

# What only some commands need: libgit2, the web server, ranking, the export formats' libraries, the
# daemon, and the modules of the command line's other commands.
HEAVY_ELSEWHERE = (
    "pygit2",  # libgit2, for a commit alone
    "starlette",
    "uvicorn",
    "numpy",
    "bm25s",
    "datasets",
    "watchfiles",
    "feedbackd.app.daemon",
    "feedbackd.app.remotesync",
    "feedbackd.web",
    "feedbackd.cli.stats",
    "feedbackd.cli.export",
    "feedbackd.cli.optimize",
    "feedbackd.cli.sync",
    "feedbackd.cli.views",
    "feedbackd.cli.why",
    "feedbackd.cli.doctor",
)


def imported_by(
    *args: str, cwd: Path | None = None
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """`python -X importtime -m feedbackd ARGS` in a process of its own, and every module it
    imported (Python writes one `import time:` line per module on stderr)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "feedbackd", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )
    modules = {
        line.rpartition("|")[2].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return done, modules


def loaded(modules: set[str], *names: str) -> list[str]:
    """Those of `names` (packages: with any module under them) that `modules` holds."""
    return sorted(
        found
        for found in modules
        for name in names
        if found == name or found.startswith(name + ".")
    )


def test_version_loads_neither_the_command_line_nor_its_libraries(tmp_path: Path) -> None:
    done, modules = imported_by("--version", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == "feedbackd 0.1.0\n"
    assert "feedbackd.launch" in modules  # the probe sees the imports
    assert loaded(modules, "typer", "click", "pydantic", "rich", "feedbackd.app") == []
    assert loaded(modules, "feedbackd.cli.main", "feedbackd.edges", "feedbackd.core.config") == []


def test_a_rating_submit_loads_only_what_it_runs(tmp_path: Path) -> None:
    site = Site(tmp_path / "site")
    rating = {
        "transaction_id": str(uuid.UUID(int=1)), "provider_agent": "prov", "skill_id": "code-run",
        "rating": 5, "result_quality": "good", "would_reuse": True, "cost_value_ratio": "fair",
    }  # fmt: skip
    args = ("-w", str(site.root), "feedback", "submit", "--as", "buyer", "--json")
    done, modules = imported_by(*args, json.dumps(rating))
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["status"] == "recorded"
    assert "feedbackd.app.ratings.rentals" in modules  # the probe sees the command's imports
    assert loaded(modules, "pygit2.repository")  # it commits the rating: libgit2 writes it
    assert loaded(modules, *(name for name in HEAVY_ELSEWHERE if name != "pygit2")) == []
    # nor the curation machinery that the other writing commands share
    assert loaded(modules, "feedbackd.app.commands.actions", "feedbackd.app.curation") == []
    assert loaded(modules, "feedbackd.app.reconcile") == []
    assert loaded(modules, "rich") == []  # JSON out and no terminal: no table, no bar


@pytest.mark.parametrize(
    ("command", "its_own"),
    [
        (("status",), ("feedbackd.cli.views", "feedbackd.app.daemon", "feedbackd.app.remotesync")),
        (("approve", "w", "qi-1"), ("pygit2",)),
    ],
    ids=["status", "approve"],
)
def test_other_commands_leave_out_the_heavy_machinery_they_do_not_use(
    tmp_path: Path, command: tuple[str, ...], its_own: tuple[str, ...]
) -> None:
    site = Site(tmp_path / "site")
    site.write("w", "qi-1.json", draft({"title": "Old"}))
    site.reconcile()
    done, modules = imported_by("-w", str(site.root), *command)
    assert done.returncode == 0, done.stderr[-2000:]
    assert loaded(modules, *(name for name in HEAVY_ELSEWHERE if name not in its_own)) == []


def test_every_command_a_module_registers_is_named_where_it_is_looked_up() -> None:
    """A command added to a module's register() but not to main.ELSEWHERE would be unreachable
    ("No such command"): the names the command line knows before loading a module are exactly
    those its modules register."""
    registered = {
        name: module
        for module in set(main.ELSEWHERE.values())
        for name in main._commands_of(module)
    }
    assert registered == main.ELSEWHERE


def test_mcp_as_a_host_starts_it_loads_no_command_line(tmp_path: Path) -> None:
    """A host waits for the server's first answer: `feedbackd -w ROOT mcp` goes straight to
    the MCP face, without typer or the commands (tests/bench/bench_mcp.py times it; the SDK
    itself brings click, through uvicorn, and rich, for a log handler)."""
    site = Site(tmp_path / "site")
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "feedbackd", "-w", str(site.root), "mcp"],
        input="",  # the host closes standard input at once: the server stops
        capture_output=True,
        text=True,
        timeout=120,
    )
    modules = {line.rpartition("|")[2].strip() for line in done.stderr.splitlines()}
    assert done.returncode == 0, done.stderr
    assert "feedbackd.mcp.stdio" in modules  # the probe sees the imports
    assert loaded(modules, "typer", "feedbackd.cli.main", "feedbackd.cli.common") == []


@pytest.mark.parametrize(
    ("args", "options"),
    [
        (["mcp"], {}),
        (["-w", "ws", "mcp"], {"workspace": "ws"}),
        (["--workspace=w", "--config=c", "mcp"], {"workspace": "w", "config": "c"}),
        (["-q", "mcp"], {"quiet": True}),
        (["-w", "a", "-v", "mcp", "-w", "b"], {"workspace": "b", "verbose": True}),
        (["mcp", "--workspace", "b"], {"workspace": "b"}),
        (["--json", "mcp"], None),  # errors as JSON: the command line's
        (["mcp", "--help"], None),
        (["-w", "mcp"], None),
        (["-w", "ws", "mcp", "-q"], None),  # an option of the group after the command: a usage
        (["recent", "mcp"], None),
        (["--config", "-q", "mcp"], None),
    ],
)  # fmt: skip
def test_only_mcp_and_its_options_go_straight_to_the_mcp_face(
    args: list[str], options: dict[str, object] | None
) -> None:
    assert mcp_options(args) == options


def test_mcp_where_no_workspace_is_says_so_as_every_command_does(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    argv = [sys.executable, "-m", "feedbackd", "-w", str(missing), "mcp"]
    done = subprocess.run(argv, input="", capture_output=True, text=True, timeout=120)
    told = subprocess.run(
        [sys.executable, "-m", "feedbackd", "-w", str(missing), "recent", "someone"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == told.returncode == 1
    assert done.stderr.startswith("error: ") and done.stderr == told.stderr
