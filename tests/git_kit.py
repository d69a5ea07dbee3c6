"""Helpers for the tests of the git edge (tests/edges/git/): files, messages, counts."""

from __future__ import annotations

import shutil
from pathlib import Path

from feedbackd.core.commitmsg import build_message
from feedbackd.core.people import Person
from tests.conftest import git

ADA = Person("Ada Curator", "ada@example.org")


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def message(event: str = "draft", agent: str = "writer", summary: str = "qi-1") -> str:
    return build_message(event, agent, summary, trailers=[("Feedback-Item", "qi-1")])


def commit_count(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "HEAD"))


def committed_names(root: Path, rev: str = "HEAD") -> list[str]:
    return git(root, "show", "--name-only", "--format=", rev).split()


def counting_git(folder: Path, *, history_s: float = 0) -> tuple[Path, Path]:
    """A git that appends its arguments to a log, one line per process, then runs git; point
    $GIT_PYTHON_GIT_EXECUTABLE (which feedbackd honours) at it to count git processes.
    `history_s`: each `git log` first waits that long, as a walk of a big site's long history
    does."""
    folder.mkdir()
    log = folder / "git-calls.log"
    wrapper = folder / "git"
    real = shutil.which("git")
    assert real is not None
    slow = f'case "$*" in log\\ *) sleep {history_s:g};; esac\n' if history_s else ""
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\n{slow}exec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, log
