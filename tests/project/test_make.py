"""The Makefile's entry points, as `make -n` plans them on a machine without a virtualenv."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import coverage
import pytest

from tests.conftest import COVERAGE_CHILDREN, MEASURED_PROCESSES
from tests.repo_kit import ROOT
from tests.system import test_daemon, test_mcp_processes, test_webhooks

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def planned(target: str, venv: Path) -> list[str]:
    """The commands `make TARGET` would run with its virtualenv at `venv` (not there yet)."""
    done = subprocess.run(
        # (under `make check` itself, make would add "Entering directory" lines)
        ["make", "-n", "--no-print-directory", target, f"VENV={venv}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def installs(commands: list[str]) -> list[str]:
    return [command for command in commands if "pip install" in command and "-e" in command]


def test_make_run_installs_feedbackd_alone_not_the_dev_tools(tmp_path: Path) -> None:
    """Starting the demo needs feedbackd's own dependencies, not pytest, mypy or ruff."""
    (install,) = installs(planned("run", tmp_path / "venv"))
    assert "[dev]" not in install
    assert any("feedbackd.cli.demo" in command for command in planned("run", tmp_path / "venv"))


def test_make_test_installs_the_dev_tools(tmp_path: Path) -> None:
    assert any("[dev]" in command for command in installs(planned("test", tmp_path / "venv")))


def program(command: str) -> str:
    """The name of the program a planned command runs, after the variables it sets for it."""
    words = command.split()
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
        words.pop(0)
    return Path(words[0]).name if words else ""


def pytest_runs(commands: list[str]) -> list[str]:
    """The commands that run tests with pytest, itself or under coverage (not a collection)."""
    return [
        command
        for command in commands
        if (program(command) == "pytest" or " -m pytest " in command)
        and "--collect-only" not in command
    ]


def test_make_test_runs_every_test_on_workers_measuring_coverage(tmp_path: Path) -> None:
    commands = planned("test", tmp_path / "venv")
    (run,) = pytest_runs(commands)
    assert "coverage run -m pytest" in run and "-n " in run and "slow" not in run
    # a module whole to one worker, which makes the fixtures its tests share once (conftest.py)
    assert "--dist loadscope" in run
    combine = next(at for at, command in enumerate(commands) if "coverage combine" in command)
    report = next(at for at, command in enumerate(commands) if "coverage report" in command)
    assert commands.index(run) < combine < report
    # the test modules' rewritten bytecode cached once, before the workers start
    collection = next(at for at, command in enumerate(commands) if "--collect-only" in command)
    assert collection < commands.index(run)
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["coverage"]
    assert settings["report"]["fail_under"] == 90
    assert "subprocess" in settings["run"]["patch"] and settings["run"]["parallel"]
    for step in ("ruff check", "ruff format --check", "lint-imports", "mypy", "chromium"):
        assert any(step in command for command in commands), step


def test_coverage_follows_the_processes_where_their_own_code_runs() -> None:
    """`make test` measures the daemon, `serve` and `mcp` as processes in the modules marked
    `measured_processes`, where code runs that runs in no test's own process; elsewhere a test
    has its own process measured, not its children (nor a module fixture's)."""
    for module in (test_daemon, test_webhooks, test_mcp_processes):
        marks = module.pytestmark if isinstance(module.pytestmark, list) else [module.pytestmark]
        assert MEASURED_PROCESSES in {mark.name for mark in marks}, module.__name__
    if coverage.Coverage.current() is not None:  # this run measures coverage
        assert COVERAGE_CHILDREN not in os.environ


def test_make_check_leaves_out_the_slow_ring_and_coverage(tmp_path: Path) -> None:
    commands = planned("check", tmp_path / "venv")
    (run,) = pytest_runs(commands)
    assert '-m "not slow"' in run and "-n " in run and "--dist loadscope" in run
    assert not any(program(command) == "coverage" for command in commands)
    for step in ("ruff check", "ruff format --check", "lint-imports", "mypy"):
        assert any(step in command for command in commands), step


def memory_to_spare() -> bool:
    """Whether this machine has a /dev/shm the tests may write a GiB to."""
    return os.access("/dev/shm", os.W_OK) and shutil.disk_usage("/dev/shm").free > 1 << 30


@pytest.mark.skipif(not memory_to_spare(), reason="no /dev/shm here with a GiB free")
def test_the_tests_folders_are_in_memory(tmp_path: Path) -> None:
    """Both ways of running the tests give them their temporary folders in /dev/shm: on a disk,
    every fsync feedbackd makes for durability would wait for it."""
    for target in ("test", "check"):
        (run,) = pytest_runs(planned(target, tmp_path / "venv"))
        assert run.startswith("TMPDIR=/dev/shm "), run


def test_the_workers_the_docs_name_are_the_makefiles() -> None:
    """`WORKERS ?= N` is the one number; the Makefile's header, the README and the
    architecture notes say it in words."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    (count,) = re.findall(r"(?m)^WORKERS \?= (\d+)$", makefile)
    word = {"2": "two", "3": "three", "4": "four"}[count]
    header = makefile.split("\nPYTHON ?=")[0]
    for name, text in [
        ("Makefile", header),
        ("README.md", (ROOT / "README.md").read_text(encoding="utf-8")),
        ("docs/architecture.md", (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")),
    ]:
        said = set(re.findall(r"on (\w+)\s+workers", text))
        assert said == {word}, f"{name} says the tests run on {said}, WORKERS is {count}"
