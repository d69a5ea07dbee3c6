"""The Makefile's two entry points, as `make -n` plans them on a machine without a virtualenv."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def planned(target: str, venv: Path) -> list[str]:
    """The commands `make TARGET` would run with its virtualenv at `venv` (not there yet)."""
    done = subprocess.run(
        ["make", "-n", target, f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True
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
