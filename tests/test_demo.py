"""`make run`'s demo workspace: its history reads as the README's tour tells it."""

from __future__ import annotations

import os
import time
from pathlib import Path

from feedbackd.cli import demo
from tests.cli_kit import run_cli
from tests.conftest import git
from tests.workspace_kit import SAVED_AGO_S


def test_the_demo_commits_the_empty_feedback_files_with_the_first_drafts(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    demo.build(root)

    assert run_cli(["-w", str(root), "run", "--once"]).returncode == 0
    agent = "_data/agents/content-writer"
    adding = git(root, "log", "--diff-filter=A", "--format=%H", "--", f"{agent}/feedback.json")
    drafted = git(root, "log", "--diff-filter=A", "--format=%H", "--", f"{agent}/queue/qi-101.json")
    assert adding.split() == drafted.split()  # one commit: the first drafts and the empty files
    assert git(root, "show", "-s", "--format=%s", adding.strip()).startswith(
        "draft(content-writer)"
    )

    moved = root / agent / "approved" / "qi-101.json"
    (root / agent / "queue" / "qi-101.json").rename(moved)
    os.utime(moved, (time.time() - SAVED_AGO_S,) * 2)  # saved long ago: settled
    assert run_cli(["-w", str(root), "run", "--once"]).returncode == 0
    subjects = git(root, "log", "--format=%s").splitlines()
    assert subjects[0].startswith("approve(content-writer): qi-101")
    assert not [subject for subject in subjects if subject.startswith("sync(")]
