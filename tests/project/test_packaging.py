"""feedbackd builds as a package without warnings: what pip prints during `make run` and
`make test` is what the build backend says about pyproject.toml."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.repo_kit import ROOT

BUILD_METADATA = (
    "import sys, setuptools.build_meta as backend;"
    " print(backend.prepare_metadata_for_build_wheel(sys.argv[1]))"
)


def project_copy(target: Path) -> Path:
    """What the build backend reads of the project, copied, so that the build's own files
    (egg-info) are not written into the repository."""
    target.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, target / name)
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "daemon", target / "daemon", ignore=skip)
    return target


def test_the_metadata_builds_without_a_warning_and_names_the_license(tmp_path: Path) -> None:
    project = project_copy(tmp_path / "project")
    built = subprocess.run(
        [sys.executable, "-W", "always", "-c", BUILD_METADATA, str(tmp_path)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0, built.stderr
    assert "deprecated" not in built.stderr.lower(), built.stderr
    metadata = (tmp_path / built.stdout.split()[-1] / "METADATA").read_text()
    assert "License-Expression: MIT" in metadata.splitlines()
    assert "License-File: LICENSE" in metadata.splitlines()
    assert "MIT License" in (ROOT / "LICENSE").read_text()


def test_the_build_asks_for_a_setuptools_that_reads_the_license_expression() -> None:
    """setuptools reads `license = "MIT"` and `license-files` from 77.0 on; pip builds in a
    fresh environment with what build-system asks for, and the dev tools get the same."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["build-system"]["requires"] == ["setuptools>=77"]
    assert "setuptools>=77" in project["project"]["optional-dependencies"]["dev"]
    assert project["project"]["license"] == "MIT"
