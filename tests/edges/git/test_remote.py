"""The remote edge on its own: a fetch that hangs is stopped at its deadline, ssh included.

The syncing itself (pull, rebase, push, conflicts) is tested through the application in
tests/app/test_remotesync.py.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from feedbackd.edges.git.remote import RemoteUnreachable
from feedbackd.edges.git.repo import GitRepo
from tests.daemon_kit import wait_for

# A unique duration, so that the "ssh" of this test is told apart from every other process.
HANG_S = "61.25"


def hanging_ssh_processes() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if argv[:2] == [b"sleep", HANG_S.encode()] and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def test_a_fetch_that_hangs_is_stopped_at_its_deadline_with_its_ssh(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # git runs this "ssh" through a shell: git, sh and sleep are all stopped at the deadline.
    monkeypatch.setenv("GIT_SSH_COMMAND", f"sleep {HANG_S}; :")
    started = time.monotonic()
    with GitRepo(git_repo) as repo, pytest.raises(RemoteUnreachable) as caught:
        repo.remote.fetch_branch("ssh://example.invalid/x.git", "main", timeout=1)
    assert time.monotonic() - started < 10
    assert caught.value.message == (
        "could not fetch main from ssh://example.invalid/x.git: timed out after 1s"
    )
    assert "tries again" in caught.value.hint
    wait_for(lambda: hanging_ssh_processes() == [], what="the hanging ssh to be stopped")
