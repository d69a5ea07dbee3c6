"""Stale git locks: a lock a killed git left is removed, one a live git holds is waited for.

Real git processes stand in for the user's: one waiting on its input, like a commit waiting for
its editor.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from feedbackd.core.errors import GitError
from feedbackd.edges.git import locks
from feedbackd.edges.git.batch import HELPER_COMMANDS
from feedbackd.edges.git.locks import LOCK_FREE_COMMANDS, git_process_in, lock_verdict
from feedbackd.edges.git.repo import GitRepo, HeadMoved
from tests.conftest import git
from tests.daemon_kit import wait_for
from tests.git_kit import ADA, commit_count, message, write


@pytest.fixture
def repo(git_repo: Path) -> Iterator[GitRepo]:
    with GitRepo(git_repo, lock_wait_s=2) as opened:
        yield opened


def test_a_stale_empty_index_lock_is_removed_with_a_warning(
    repo: GitRepo, git_repo: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lock = git_repo / ".git/index.lock"
    leave_stale_lock(lock)
    write(git_repo, "f.json", "[]\n")
    with caplog.at_level(logging.WARNING, logger="feedbackd"):
        sha = repo.commit_paths(["f.json"], message(), ADA)
    assert sha is not None
    assert not lock.exists()
    assert "stale" in caplog.text
    assert git(git_repo, "status", "--porcelain") == ""


def leave_stale_lock(lock: Path) -> None:
    """What a `kill -9` during `git add` leaves behind: an empty lock, here a minute old."""
    lock.touch()
    old = time.time() - 60
    os.utime(lock, (old, old))


@pytest.fixture
def live_git(git_repo: Path) -> Iterator[subprocess.Popen[bytes]]:
    with users_git(git_repo) as process:
        yield process


@contextlib.contextmanager
def users_git(git_repo: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A real git process working in the repository that holds its index lock while it waits on
    its input, like a commit waiting for its editor."""
    process = subprocess.Popen(
        ["git", "update-index", "--stdin"],
        cwd=git_repo,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    with process:  # closes its pipes (ending it) and waits for it
        wait_for(
            lambda: Path(f"/proc/{process.pid}/comm").read_text().strip() == "git",
            what="git to start",
        )
        # Started is not yet locked: git takes the lock a moment after it starts.
        wait_for((git_repo / ".git" / "index.lock").exists, what="git to take the index lock")
        yield process


def test_a_live_git_process_is_found_by_its_working_folder(
    live_git: subprocess.Popen[bytes], git_repo: Path, tmp_path: Path
) -> None:
    assert git_process_in([git_repo]) is True
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert git_process_in([elsewhere]) is False


def test_a_git_pointed_at_the_repository_from_elsewhere_is_found(
    git_repo: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    command = ["git", f"--git-dir={git_repo / '.git'}", "update-index", "--stdin"]
    with subprocess.Popen(command, cwd=elsewhere, stdin=subprocess.PIPE) as process:
        wait_for(
            lambda: Path(f"/proc/{process.pid}/comm").read_text().strip() == "git",
            what="git to start",
        )
        assert git_process_in([git_repo, git_repo / ".git"]) is True


@pytest.mark.parametrize(
    "command",
    [
        ["cat-file", "--batch"],  # another feedbackd's helpers (the web server's)
        ["hash-object", "-w", "--stdin-paths"],
        ["mktree", "--batch", "-z"],
        ["log", "--stdin"],  # read-only commands of a user or a tool
        ["rev-list", "--stdin"],
    ],
)
def test_a_git_that_never_takes_a_lock_is_no_holder(git_repo: Path, command: list[str]) -> None:
    # Started by a shell, as by another process (the web server beside the daemon): not one
    # of this process's own helpers.
    shell = ["sh", "-c", f"git {' '.join(command)}; :"]
    with subprocess.Popen(shell, cwd=git_repo, stdin=subprocess.PIPE) as process:
        wait_for(lambda: git_children(process.pid) != [], what="the hook's git to start")
        assert git_process_in([git_repo, git_repo / ".git"]) is False
        assert process.stdin is not None
        process.stdin.close()


def git_children(pid: int) -> list[int]:
    """The git processes `pid` started."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            name = (entry / "comm").read_text().strip()
        except (OSError, ValueError, IndexError):
            continue
        if parent == pid and name == "git":
            found.append(int(entry.name))
    return found


def fake_proc(tmp_path: Path, repo: Path, argv: list[str], environ: list[str]) -> Path:
    """A /proc with one git process working in `repo` (not started by this process)."""
    entry = tmp_path / "proc" / "4242"
    entry.mkdir(parents=True)
    (entry / "comm").write_text("git\n")
    (entry / "cmdline").write_bytes(b"\0".join(arg.encode() for arg in argv) + b"\0")
    (entry / "stat").write_text("4242 (git) S 1 4242 4242 0 -1\n")
    (entry / "environ").write_bytes(b"\0".join(item.encode() for item in environ) + b"\0")
    (entry / "cwd").symlink_to(repo)
    return tmp_path / "proc"


@pytest.mark.parametrize(
    ("argv", "environ", "holder"),
    [
        (["git", "status", "--porcelain"], ["HOME=/home/ada"], True),  # refreshes the index
        (["git", "status", "--porcelain"], ["GIT_OPTIONAL_LOCKS=0"], False),  # feedbackd's
        (["git", "--no-optional-locks", "status"], [], False),
        (["git", "diff"], [], True),
        (["git", "-C", "x", "log", "--oneline"], [], False),
        (["git", "commit"], [], True),
        (["git", "frobnicate"], [], True),  # unknown: counted, to stay safe
        (["git"], [], True),
    ],
)
def test_which_git_commands_may_hold_a_lock(
    git_repo: Path, tmp_path: Path, argv: list[str], environ: list[str], holder: bool
) -> None:
    proc = fake_proc(tmp_path, git_repo, argv, environ)
    assert git_process_in([git_repo], proc=proc) is holder


def test_feedbackds_own_git_helpers_are_lock_free_commands() -> None:
    assert {command[0] for command in HELPER_COMMANDS} <= LOCK_FREE_COMMANDS


def test_a_young_lock_is_given_a_moment_even_with_no_git_in_sight(git_repo: Path) -> None:
    lock = git_repo / ".git/index.lock"
    lock.touch()
    write(git_repo, "f.json", "[]\n")
    with GitRepo(git_repo, lock_wait_s=0.1) as repo, pytest.raises(GitError, match="held"):
        repo.commit_paths(["f.json"], message(), ADA)
    assert lock.exists()


def test_a_lock_held_by_a_live_git_is_waited_for_then_refused(
    live_git: subprocess.Popen[bytes], git_repo: Path
) -> None:
    lock = git_repo / ".git/index.lock"
    leave_stale_lock(lock)  # old, but a git still works here: not stale
    write(git_repo, "f.json", "[]\n")
    started = time.monotonic()
    with GitRepo(git_repo, lock_wait_s=0.3) as repo, pytest.raises(GitError) as caught:
        repo.commit_paths(["f.json"], message(), ADA)
    assert time.monotonic() - started >= 0.3
    assert "held by a running git command" in caught.value.message
    assert "editor" in caught.value.hint
    assert lock.exists()
    assert commit_count(git_repo) == 1


def test_a_commit_goes_through_once_the_live_lock_is_released(
    live_git: subprocess.Popen[bytes], git_repo: Path
) -> None:
    lock = git_repo / ".git/index.lock"
    lock.touch()
    write(git_repo, "f.json", "[]\n")
    assert live_git.stdin is not None
    live_git.stdin.close()
    live_git.wait(timeout=10)
    lock.unlink(missing_ok=True)  # what the user's git does when it ends
    with GitRepo(git_repo, lock_wait_s=5) as repo:
        assert repo.commit_paths(["f.json"], message(), ADA) is not None


def test_a_lock_that_appears_after_the_commit_is_cleared_and_the_index_updated(
    repo: GitRepo, git_repo: Path
) -> None:
    # The last step, updating the user's index, meets a lock left by a git killed meanwhile.
    write(git_repo, "f.json", "[]\n")
    sha = repo.commit_paths(["f.json"], message(), ADA)
    assert sha is not None
    git(git_repo, "rm", "-q", "--cached", "f.json")
    leave_stale_lock(git_repo / ".git/index.lock")
    repo._commits.update_user_index(sha, ["f.json"])
    assert git(git_repo, "status", "--porcelain") == ""


def test_an_index_that_stays_locked_after_the_commit_keeps_the_commit_and_warns(
    git_repo: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(git_repo, "f.json", "[]\n")
    with GitRepo(git_repo, lock_wait_s=0.1) as repo:
        sha = repo.commit_paths(["f.json"], message(), ADA)
        assert sha is not None
        with users_git(git_repo), caplog.at_level(logging.WARNING, logger="feedbackd"):
            repo._commits.update_user_index(sha, ["f.json"])
    assert "git reset -q HEAD -- f.json" in caplog.text
    assert repo_head(git_repo) == sha


def repo_head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize(
    ("live", "age_s", "verdict"),
    [
        (False, 5.0, "remove"),  # no git works here: stale
        (False, 1.0, "wait"),  # so young it may be a git we cannot see: give it a moment
        (True, 3600.0, "wait"),  # a live git (an editor open for an hour) is always waited for
        (None, 31.0, "remove"),  # processes unknown: only the age can tell
        (None, 30.0, "wait"),
        (None, 1.0, "wait"),
    ],
)
def test_lock_verdict_falls_back_to_the_locks_age(
    live: bool | None, age_s: float, verdict: str
) -> None:
    assert lock_verdict(live, age_s, stale_after_s=30) == verdict


def test_processes_cannot_be_inspected_without_proc(tmp_path: Path) -> None:
    assert git_process_in([tmp_path], proc=tmp_path / "no-proc") is None
    (tmp_path / "empty-proc").mkdir()
    assert git_process_in([tmp_path], proc=tmp_path / "empty-proc") is None


def fake_process(proc: Path, pid: int, argv: list[str], cwd: Path, *, kernel: bool) -> None:
    """/proc/PID as the kernel shows a process: its name, command line, flags, folder."""
    entry = proc / str(pid)
    entry.mkdir(parents=True, exist_ok=True)
    (entry / "comm").write_text(Path(argv[0]).name[:15] + "\n")
    (entry / "cmdline").write_bytes(b"\0".join(arg.encode() for arg in argv) + b"\0")
    flags = 0x00200000 if kernel else 0x00400100  # PF_KTHREAD, or a user process's
    (entry / "stat").write_text(f"{pid} ({Path(argv[0]).name[:15]}) S 1 {pid} {pid} 0 -1 {flags} 0")
    (entry / "cwd").unlink(missing_ok=True)
    (entry / "cwd").symlink_to(cwd)


def test_kernel_threads_are_skipped_for_a_second_then_looked_at_again(
    tmp_path: Path, git_repo: Path
) -> None:
    # A kernel thread never runs git: a look skips it (most of a small machine's processes are
    # kernel threads). Made to look like git here, it shows the skip; once its pid is reused
    # by a user's git, a look sees that git within about a second.
    proc = tmp_path / "proc"
    fake_process(proc, 7, ["git", "commit"], git_repo, kernel=True)
    assert git_process_in([git_repo], proc=proc, changing_only=True) is False
    fake_process(proc, 7, ["git", "commit"], git_repo, kernel=False)
    wait_for(
        lambda: git_process_in([git_repo], proc=proc, changing_only=True) is True,
        what="the user's git under the reused pid to be seen",
    )
    # A user's git is seen at once, however recently kernel threads were found.
    fake_process(proc, 9, ["git", "stash"], git_repo, kernel=False)
    (proc / "7").rename(tmp_path / "gone")
    assert git_process_in([git_repo], proc=proc, changing_only=True) is True


@contextlib.contextmanager
def users_changing_git(git_repo: Path) -> Iterator[None]:
    """A user's `git checkout-index --stdin`, seen running: it changes the work tree and waits on
    its input without holding the index lock, as `git stash` does between its steps. Started by
    a shell, as a user's is (feedbackd does not wait for git commands it started itself)."""
    user = subprocess.Popen(
        ["sh", "-c", f"git -C '{git_repo}' checkout-index --stdin; :"], stdin=subprocess.PIPE
    )
    try:
        wait_for(
            lambda: git_process_in([git_repo], changing_only=True) is True,
            what="the user's git to be seen",
        )
        yield
    finally:
        assert user.stdin is not None
        user.stdin.close()
        user.wait(10)


def test_a_change_waits_for_a_users_git_command_that_changes_the_work_tree(
    repo: GitRepo, git_repo: Path
) -> None:
    with users_changing_git(git_repo):
        assert git_process_in([git_repo], changing_only=False) is True
        write(git_repo, "f.json", "[]\n")
        with pytest.raises(GitError, match="keeps changing the workspace"):
            repo.commit_paths(["f.json"], message(), ADA)
        assert not (git_repo / ".git/index.lock").exists()  # not left behind, nor held
    assert repo.commit_paths(["f.json"], message(), ADA) is not None


def test_the_look_after_a_commit_answers_whether_a_run_goes_on_until_the_next_commit(
    repo: GitRepo, git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A decision looks for a `git clean` after its commit; the run then asks whether to let go
    # of the index lock. With nothing written in between, that look answers, however long the
    # decision's bookkeeping took (here: the user's git starting, many milliseconds; on a busy
    # machine more than the look's usual lifetime, which is therefore stretched here).
    monkeypatch.setattr(locks, "_SETTLED_FOR_S", 60.0)
    users = repo.users_git
    write(git_repo, "f.json", "[]\n")
    assert repo.commit_paths(["f.json"], message(), ADA) is not None
    users.settle(look_afresh=True)
    with users_changing_git(git_repo):
        assert users.changing_now() is False
    # A commit since the look: the question looks again, and sees the user's git.
    write(git_repo, "f.json", "[1]\n")
    assert repo.commit_paths(["f.json"], message(), ADA) is not None
    with users_changing_git(git_repo):
        assert users.changing_now() is True


def test_a_users_reset_during_a_held_change_stops_at_once_and_changes_nothing(
    repo: GitRepo, git_repo: Path
) -> None:
    write(git_repo, "f.json", "[]\n")
    first = repo.commit_paths(["f.json"], message(), ADA)
    with repo.holding(first):
        write(git_repo, "f.json", "[1]\n")
        reset = subprocess.run(
            ["git", "reset", "-q", "--hard"], cwd=git_repo, capture_output=True, text=True
        )
        assert reset.returncode != 0 and "index.lock" in reset.stderr
        assert (git_repo / "f.json").read_text() == "[1]\n"
        second = repo.commit_paths(["f.json"], message(), ADA)
    assert git(git_repo, "rev-parse", "HEAD").strip() == second
    assert git(git_repo, "status", "--porcelain") == ""


def test_a_change_planned_on_a_head_that_moved_writes_nothing(
    repo: GitRepo, git_repo: Path
) -> None:
    write(git_repo, "f.json", "[]\n")
    first = repo.commit_paths(["f.json"], message(), ADA)
    write(git_repo, "g.json", "[]\n")
    repo.commit_paths(["g.json"], message(), ADA)
    with pytest.raises(HeadMoved), repo.holding(first):
        raise AssertionError("a change planned on an old HEAD must not start")
    assert not (git_repo / ".git/index.lock").exists()
