"""Stale git locks: whether a `.git/*.lock` still belongs to a live git, and clearing a stale index
lock before feedbackd's own git commands need the index.

A `kill -9` in the middle of `git add` leaves an empty `.git/index.lock`, and every later git
command fails until it is removed; a lock a running git holds (a commit waiting for its editor)
must never be taken away. The evidence is the lock's age and the git processes in /proc.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from feedbackd.core.errors import GitError
from feedbackd.edges.gitbatch import HELPER_COMMANDS

log = logging.getLogger("feedbackd")

# A lock this young may belong to a git we cannot see (another container sharing the folder):
# it always gets this long before it can be judged stale.
FRESH_LOCK_S = 2.0

Verdict = Literal["remove", "wait"]


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


def git_process_in(folders: Sequence[Path], proc: Path = Path("/proc")) -> bool | None:
    """True if a live git process (other than this one) has its working folder inside `folders`.

    None when that cannot be known: no readable /proc, or a git process whose folder is hidden.
    """
    try:
        entries = [entry for entry in proc.iterdir() if entry.name.isdigit()]
    except OSError:
        return None
    if not entries:
        return None
    roots = [folder.resolve() for folder in folders]
    unknown = False
    for entry in entries:
        argv = _git_argv(entry) if int(entry.name) != os.getpid() else None
        if argv is None or _our_helper(entry, argv):
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
        except PermissionError:
            unknown = True
            continue
        except OSError:
            continue  # it ended while we looked
        # Working here: its folder is inside, or it was pointed here (`--git-dir=...`, `-C ...`).
        if any(_inside(cwd, root) or any(str(root) in arg for arg in argv) for root in roots):
            return True
    return None if unknown else False


def _git_argv(entry: Path) -> list[str] | None:
    """The command line of a git process, or None when the process is not git (or is gone)."""
    try:
        argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        comm = (entry / "comm").read_text(errors="replace").strip()
    except OSError:
        return None
    name = os.path.basename(argv[0])
    return argv if name == "git" or name.startswith("git-") or comm == "git" else None


def _our_helper(entry: Path, argv: list[str]) -> bool:
    """One of this process's own long-lived git helpers, which never lock the index."""
    if tuple(arg for arg in argv[1:] if arg) not in HELPER_COMMANDS:
        return False
    try:
        # /proc/PID/stat: `pid (comm) state ppid ...`; comm may hold spaces, so split after it
        fields = (entry / "stat").read_text().rpartition(")")[2].split()
    except OSError:
        return False
    return int(fields[1]) == os.getpid()


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
