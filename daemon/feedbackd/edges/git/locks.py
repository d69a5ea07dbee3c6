"""Git locks: whether a `.git/*.lock` still belongs to a live git, clearing a stale index lock
before feedbackd's own git commands need the index, and holding the index lock for one change.

A `kill -9` in the middle of `git add` leaves an empty `.git/index.lock`, and every later git
command fails until it is removed; a lock a running git holds (a commit waiting for its editor)
must never be taken away. The evidence is the lock's age and the git processes in /proc.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Literal

from feedbackd.core.errors import GitError

log = logging.getLogger("feedbackd")

# A lock this young may belong to a git we cannot see (another container sharing the folder):
# it always gets this long before it can be judged stale.
FRESH_LOCK_S = 2.0

Verdict = Literal["remove", "wait"]


def _commands(names: str) -> frozenset[str]:
    """Git's command names, given as words."""
    return frozenset(names.split())


# Git commands that write the index, the work tree or HEAD (`git stash` runs several of them in
# a row, holding the index lock only now and then): feedbackd starts no change while one runs.
CHANGING_COMMANDS = _commands(
    "add am apply checkout checkout-index cherry-pick clean commit merge mv pull"
    " read-tree rebase reset restore revert rm stash switch update-index update-ref"
)
# Git commands that never take a lock in `.git` (index.lock, HEAD.lock, a ref's lock): they only
# read, or store objects. A running one holds none of the locks judged here, whoever started it:
# the web server's long-lived `cat-file --batch` beside the daemon must not keep a lock a killed
# git left from being cleared. Not among them: OPTIONAL_LOCK_COMMANDS, and every command not
# named here (it counts, to stay safe).
LOCK_FREE_COMMANDS = _commands(
    "annotate blame cat-file check-attr check-ignore check-ref-format cherry commit-tree"
    " config count-objects diff-tree for-each-ref grep hash-object interpret-trailers log"
    " ls-files ls-remote ls-tree merge-base mktree name-rev rev-list rev-parse shortlog"
    " show show-ref var verify-commit verify-tag version whatchanged"
)
# Commands that refresh the index, taking its lock, when they can; not when asked to take no
# optional lock (`git --no-optional-locks`, GIT_OPTIONAL_LOCKS=0), as feedbackd's own are.
OPTIONAL_LOCK_COMMANDS = frozenset({"status", "diff", "describe"})
# Options of git itself that take the next argument as their value.
_VALUED_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env"})
# A look at the running git commands this recent stands for a new one: a pass over 200 agents
# with nothing to do would otherwise spend most of its time reading /proc. A command that starts
# just after a look is no more seen than one that starts within this moment; either way the
# change that follows holds the index lock and checks HEAD (edges/git/commit.py, `holding`).
_SETTLED_FOR_S = 0.05


def lock_verdict(live_git: bool | None, age_s: float, stale_after_s: float) -> Verdict:
    """What to do about an existing `.git/index.lock`.

    live_git: True when a git process works in this repository, False when none does, None when
    processes cannot be inspected; then only a lock older than `stale_after_s` counts as stale.
    """
    if age_s < FRESH_LOCK_S:
        return "wait"
    if live_git is None:
        return "remove" if age_s > stale_after_s else "wait"
    return "wait" if live_git else "remove"


def git_process_in(
    folders: Sequence[Path], proc: Path = Path("/proc"), *, changing_only: bool = False
) -> bool | None:
    """True if a live git process (other than this one) that may hold a lock in `.git` has its
    working folder inside `folders` (one of LOCK_FREE_COMMANDS never does); with
    `changing_only`, only a command that changes the index, work tree or HEAD counts, and none
    that this process started (its own commands, a sync's rebase in a worktree of its own).

    None when that cannot be known: no readable /proc, or a git process whose folder is hidden.
    Every step of a change looks, so the look reads one small file per process and only a git's
    command line and folder: a machine's hundreds of other processes cost a read each.
    """
    try:
        # Newest first: a command that just started is seen before it can get far.
        pids = sorted((int(name) for name in os.listdir(proc) if name.isdigit()), reverse=True)
    except OSError:
        return None
    if not pids:
        return None
    roots = [folder.resolve() for folder in folders]
    me, unknown = os.getpid(), False
    kernel = _kernel_threads.of(proc, pids)
    for pid in pids:
        entry = f"{proc}/{pid}"
        found = _git_process(entry) if pid != me and pid not in kernel else None
        if found is None:
            continue
        argv, ours = found
        if not _may_hold_a_lock(argv, ours, changing_only) or _no_optional_locks(pid, argv, proc):
            continue
        try:
            cwd = Path(os.readlink(f"{proc}/{pid}/cwd"))
        except PermissionError:
            unknown = True
            continue
        except OSError:
            continue  # it ended while we looked
        # Working here: its folder is inside, or it was pointed here (`--git-dir=...`, `-C ...`).
        if any(_inside(cwd, root) or any(str(root) in arg for arg in argv) for root in roots):
            return True
    return None if unknown else False


def _may_hold_a_lock(argv: list[str], ours: bool, changing_only: bool) -> bool:
    """Whether a git running `argv` counts (an unknown command does, to stay safe)."""
    command = _subcommand(argv)
    if changing_only:
        return not ours and command in CHANGING_COMMANDS
    return command not in LOCK_FREE_COMMANDS


def _no_optional_locks(pid: int, argv: list[str], proc: Path) -> bool:
    """True for a `status` or `diff` told to take no optional lock (the web server's, the
    daemon's own): it never takes the index lock. Its environment is read only then."""
    command = _subcommand(argv)
    if command not in OPTIONAL_LOCK_COMMANDS:
        return False
    options = argv[1 : argv.index(command)] if command in argv else []  # git's, not status's
    if "--no-optional-locks" in options:
        return True
    try:
        environment = _read(f"{proc}/{pid}/environ").split(b"\0")
    except OSError:
        return False  # another user's process, or gone: it counts, to stay safe
    return b"GIT_OPTIONAL_LOCKS=0" in environment


class _KernelThreads:
    """The kernel threads among a /proc's processes (most of a small machine's), which never
    run git: found at most once a second, by a look that then skips them.

    A pid is reused only once the kernel has handed out every other free pid after it (it
    allocates them in turn): tens of thousands of new processes, which no machine starts
    within the second a finding is kept."""

    KEPT_S = 1.0
    _FLAG = 0x00200000  # PF_KTHREAD, among the flags of /proc/PID/stat

    def __init__(self) -> None:
        self._found: dict[str, tuple[float, frozenset[int]]] = {}

    def of(self, proc: Path, pids: Sequence[int]) -> frozenset[int]:
        found_at, kernel = self._found.get(str(proc), (-self.KEPT_S, frozenset()))
        now = time.monotonic()
        if now - found_at >= self.KEPT_S:
            kernel = frozenset(pid for pid in pids if self._is_one(f"{proc}/{pid}"))
            self._found[str(proc)] = (now, kernel)
        return kernel

    def _is_one(self, entry: str) -> bool:
        try:
            # `pid (name) state ppid pgrp session tty_nr tpgid flags ...`; the name may hold ")"
            fields = _read(f"{entry}/stat").rpartition(b")")[2].split()
            return bool(int(fields[6]) & self._FLAG)
        except (OSError, IndexError, ValueError):
            return False  # gone, or unreadable: looked at as any other


_kernel_threads = _KernelThreads()


def _git_process(entry: str) -> tuple[list[str], bool] | None:
    """A git process's command line, and whether this process started it; None when the
    process is not git (or is gone). The kernel's name for its program (`git`, `git-upload-pa`)
    says which it is, read with the bare system calls: most processes are something else, and
    cost a few microseconds each."""
    name = _program(entry)
    if name != b"git" and not name.startswith(b"git-"):
        return None
    try:
        argv = _read(f"{entry}/cmdline").decode(errors="replace").split("\0")
        # /proc/PID/stat: `pid (name) state ppid ...`; the name may hold spaces and ")"
        parent = int(_read(f"{entry}/stat").rpartition(b")")[2].split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return argv, parent == os.getpid()


def _program(entry: str) -> bytes:
    """/proc/PID/comm (at most 15 bytes) without its newline; empty when the process is gone."""
    try:
        descriptor = os.open(f"{entry}/comm", os.O_RDONLY)
    except OSError:
        return b""
    try:
        return os.read(descriptor, 32).rstrip(b"\n")
    except OSError:
        return b""
    finally:
        os.close(descriptor)


def _read(path: str) -> bytes:
    """A whole /proc file (a command line may be long)."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        parts = [os.read(descriptor, 65536)]
        while len(parts[-1]) == 65536:
            parts.append(os.read(descriptor, 65536))
        return b"".join(parts)
    finally:
        os.close(descriptor)


def _subcommand(argv: list[str]) -> str | None:
    """The git command a process runs: `stash` for `git -C ws stash -u` (and for `git-stash`)."""
    name = os.path.basename(argv[0])
    if name.startswith("git-"):
        return name.removeprefix("git-")
    skip_next = False
    for arg in argv[1:]:
        if skip_next:
            skip_next = False
        elif arg in _VALUED_OPTIONS:
            skip_next = True
        elif arg and not arg.startswith("-"):
            return arg
    return None


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def clear_index_lock(
    work_tree: Path, git_dir: Path, *, stale_after_s: float, wait_s: float
) -> None:
    """Remove a stale `.git/index.lock`; wait (with backoff) up to `wait_s` for a live one to go
    away, then raise GitError."""
    lock = git_dir / "index.lock"
    deadline = time.monotonic() + wait_s
    delay = 0.02
    while True:
        try:
            seen = lock.stat()
        except FileNotFoundError:
            return
        live = git_process_in([work_tree, git_dir])
        if lock_verdict(live, time.time() - seen.st_mtime, stale_after_s) == "remove":
            _remove_stale_lock(lock, seen, live, stale_after_s)
            continue
        if time.monotonic() >= deadline:
            raise GitError(
                f"{lock} is held by a running git command",
                hint="finish that command (a commit waiting for its editor?), or remove the"
                " lock file if no git program is running",
            )
        time.sleep(min(delay, max(deadline - time.monotonic(), 0.0)))
        delay = min(delay * 2, 1.0)


def _remove_stale_lock(
    lock: Path, seen: os.stat_result, live: bool | None, stale_after_s: float
) -> None:
    try:
        now = lock.stat()
        if (now.st_ino, now.st_mtime_ns) != (seen.st_ino, seen.st_mtime_ns):
            return  # a new lock replaced the one we judged; look again
        lock.unlink()
    except FileNotFoundError:
        return
    why = "no git process works here" if live is False else f"older than {stale_after_s}s"
    log.warning("removed a stale %s (%s)", lock, why)


@contextlib.contextmanager
def holding_index_lock(
    work_tree: Path, git_dir: Path, clear: Callable[[], None], *, wait_s: float
) -> Iterator[bool]:
    """Hold `.git/index.lock` while feedbackd writes one change and commits it; True when a
    git command of someone else's was waited for first (it may have changed the work tree).

    Every git command that changes the index or the work tree (`stash`, `reset --hard`, `pull`,
    `checkout`, `commit`) takes this lock, so none of them can run between feedbackd's writing
    its files and committing them: one that starts meanwhile stops at once, changing nothing
    ("index.lock: File exists"; `git stash` says nothing and exits 1), and the user runs it
    again. A command already running when the lock is wanted (a `git stash` between two of its
    steps, which then needs the lock again) is waited for instead. `clear` waits for (or
    removes, when stale) a lock someone else holds.
    """
    lock = git_dir / "index.lock"
    deadline = time.monotonic() + wait_s
    delay, waited = 0.01, False
    while True:
        # Looked for without the lock first: a `git stash` that found the lock taken between
        # its steps, even for the moment of a look, would stop half-way (saved, not cleaned).
        taken = None
        if not lock.exists() and not _changing_git_in(work_tree, git_dir):
            taken = _take(lock)
        # Looked for again: one that started just before the lock was taken, past its own use.
        if taken is not None and not _changing_git_in(work_tree, git_dir):
            break
        if taken is not None:
            _release(lock, taken)
        if time.monotonic() >= deadline:
            raise GitError(
                "a git command keeps changing the workspace; feedbackd records nothing meanwhile",
                hint="let it finish (a `git stash`, `pull` or `rebase` waiting for you?); what"
                " waited is recorded then",
            )
        waited = True
        clear()  # waits for a live holder of the lock, removes a stale one
        time.sleep(delay)
        delay = min(delay * 2, 0.2)
    try:
        yield waited
    finally:
        _release(lock, taken)


def wait_for_changing_git(work_tree: Path, git_dir: Path, *, wait_s: float) -> bool:
    """Wait (up to `wait_s`) until no git command of someone else's changes the workspace: a
    folder read meanwhile may be half-way through a `git stash` or `pull`. False when one
    still does at the deadline."""
    deadline = time.monotonic() + wait_s
    delay = 0.01
    while _changing_git_in(work_tree, git_dir):
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.2)
    return True


class UsersGit:
    """The git commands of someone else's that change one workspace, as seen by the looks of a
    repository's commits and passes."""

    def __init__(self, work_tree: Path, git_dir: Path, wait_s: float) -> None:
        self._folders = (work_tree, git_dir)
        self._wait_s = wait_s
        self._settled_at = -_SETTLED_FOR_S
        # When a look last found none, if feedbackd has changed nothing since (None otherwise)
        self._calm_at: float | None = None

    def settle(self, *, look_afresh: bool = False) -> None:
        """Wait (up to wait_s) until none changes the workspace; `look_afresh`: even right
        after a look."""
        if look_afresh or time.monotonic() - self._settled_at >= _SETTLED_FOR_S:
            calm = wait_for_changing_git(*self._folders, wait_s=self._wait_s)
            self._settled_at = time.monotonic()
            self._calm_at = self._settled_at if calm else None

    def changed(self) -> None:
        """feedbackd changed the workspace (a commit): a look made before answers for nothing
        after it."""
        self._calm_at = None

    def changing_now(self) -> bool:
        """Whether one changes the workspace now. A decision's last step looks (for a `git
        clean`) after its commit: when that look found none and feedbackd has changed nothing
        since, it answers, however long the decision's bookkeeping took in between."""
        if self._calm_at is not None and time.monotonic() - self._calm_at < _SETTLED_FOR_S:
            return False
        return _changing_git_in(*self._folders)


def _changing_git_in(work_tree: Path, git_dir: Path) -> bool:
    return git_process_in([work_tree, git_dir], changing_only=True) is True


def _take(lock: Path) -> os.stat_result | None:
    """Create the lock; None when someone else holds it."""
    try:
        os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return None
    return lock.stat()


def _release(lock: Path, mine: os.stat_result) -> None:
    """Remove the lock if it still is the one this process made."""
    with contextlib.suppress(FileNotFoundError):
        if lock.stat().st_ino == mine.st_ino:
            lock.unlink()
