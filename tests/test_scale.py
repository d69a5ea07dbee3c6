"""A big site: the start-up pass of a fresh clone must not start git once (or four times) per
draft. Every git process feedbackd starts is counted through a wrapper program
($GIT_PYTHON_GIT_EXECUTABLE, which feedbackd honours) that logs it and runs the real git.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git
from tests.git_kit import counting_git
from tests.workspace_kit import Site, draft

pytestmark = pytest.mark.slow


def fresh_clone_start_up(tmp_path: Path, drafts: int) -> list[str]:
    """`run --once` on a fresh clone of a workspace whose `drafts` drafts are committed; the
    git command lines it ran."""
    origin = Site(tmp_path / f"origin-{drafts}")
    for number in range(drafts):
        origin.write("w", f"qi-{number:04d}.json", draft({"title": f"Draft {number}"}))
    origin.reconcile()
    clone = tmp_path / f"clone-{drafts}"
    git(tmp_path, "clone", "-q", str(origin.root), str(clone))
    wrapper, log = counting_git(tmp_path / f"bin-{drafts}")
    env = {**os.environ, "GIT_PYTHON_GIT_EXECUTABLE": str(wrapper)}
    done = subprocess.run(
        [sys.executable, "-m", "feedbackd", "-w", str(clone), "run", "--once", "--json"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["events"] == []  # nothing new: the drafts are on record
    return log.read_text().splitlines()


def test_a_fresh_clone_starts_with_git_calls_independent_of_the_drafts(tmp_path: Path) -> None:
    few = fresh_clone_start_up(tmp_path, 3)
    many = fresh_clone_start_up(tmp_path, 60)
    assert len(many) == len(few), "\n".join(many)


def test_a_fresh_clone_remembers_each_draft_as_first_committed(tmp_path: Path) -> None:
    """The snapshots taken from git on a fresh clone hold the drafts as the agent wrote them,
    not a curator's later edit: approving an edited draft records the edit."""
    origin = Site(tmp_path / "origin")
    for number in range(4):
        origin.write("w", f"qi-{number}.json", draft({"title": f"Draft {number}"}))
    origin.reconcile()
    origin.write("w", "qi-2.json", draft({"title": "Edited in the queue"}))
    origin.git("commit", "-qam", "a curator's edit, committed by hand")
    clone = Site.__new__(Site)
    clone.root = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin.root), str(clone.root))
    moved = clone.move("w", "qi-2.json", "approved")
    os.utime(moved, (moved.stat().st_mtime - 60,) * 2)  # checked out a minute before the move
    clone.reconcile()
    [entry] = clone.feedback("w")
    assert (entry["original"], entry["corrected"]) == ("Draft 2", "Edited in the queue")
