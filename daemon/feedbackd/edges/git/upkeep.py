"""git's own repack of the small packs that decisions leave, run beside the daemon's work.

Each decision's objects go to disk as a pack of their own (packwrite.py). Left alone they would
pile up: past `gc.autoPackLimit` (50) the user's next ordinary `git commit` starts a full
`git gc --auto` in the background. So once the repository holds REPACK_AT packs, a commit of
feedbackd's (the daemon's or a command's) starts `git repack -d --geometric=2`, git's
incremental repack: it rolls the small packs (and loose
objects) into one, leaving the big ones, so packs stay in a geometric progression (a few dozen
at most on any site) and each repack costs what the recent decisions weigh, not the site. It
copies every object of the packs it rolls up, reachable or not, so it loses nothing, and it
leaves alone the packs whose `.keep` says a commit is still being made. It runs in the
background, one at a time; a decision never waits for it.

A user's own `git gc` or `git maintenance run` repacks too: none of ours starts while one runs
(the two would race for the same packs, and one would fail), and one of ours that failed anyway
is tried again a moment later, not only once many more packs have come.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from feedbackd.edges.files import read_file_text
from feedbackd.edges.git.packwrite import pack_count
from feedbackd.edges.process import StartedProcess, pid_alive

log = logging.getLogger("feedbackd")

REPACK_AT = 24  # packs in the repository before a repack: well under git's 50
# A repository whose packs git leaves many (kept ones, a long progression) is repacked again
# only once this many more have come: never a repack per commit.
REPACK_EVERY = 16
# (no bitmap: git refuses one with an incremental repack, whatever the settings ask)
REPACK = ("repack", "-d", "-q", "--geometric=2", "--no-write-bitmap-index")
_STOP_WAIT_S = 10.0  # at close, how long a running repack is waited for
_REPACK_MAX_S = 600.0  # a repack still running then is stopped: nothing is lost
# After a failed repack (most often one that met a user's gc), the next waits this long,
# doubled with each failure in a row up to the most: a lasting cause costs a git process a
# minute, not one per decision.
_RETRY_FIRST_S = 0.25
_RETRY_MOST_S = 60.0
# git's own lock for `git maintenance run`; one older than this was left by a killed run.
_MAINTENANCE_LOCK_STALE_S = 3600.0


class PackUpkeep:
    """When to repack, and the repack running now, for one repository. A thread of its own
    waits for each repack, so that one that ends while the daemon is idle is collected then,
    not left a zombie until the next commit."""

    def __init__(
        self, work_tree: Path, git_dir: Path, executable: str, env: Mapping[str, str]
    ) -> None:
        self._work_tree = work_tree
        self._pack_dir = git_dir / "objects" / "pack"
        self._executable = executable
        self._env = dict(env)
        self._git_dir = git_dir
        self._start_at = REPACK_AT
        self._not_before = 0.0  # monotonic time before which no repack starts (after failures)
        self._failures = 0  # failed repacks in a row
        self._running: threading.Thread | None = None

    def after_commit(self) -> bool:
        """Start a repack once the repository holds enough packs (unless one still runs);
        whether a repack finished since the last call, so that processes that keep packs open
        (libgit2, the helpers) may start afresh."""
        finished = self._collect()
        if self._running is None and self._due() and not self._git_repacks_now():
            started = StartedProcess(
                [self._executable, *REPACK], cwd=self._work_tree, env=self._env
            )
            self._running = threading.Thread(
                target=self._wait_for, args=(started,), name="git repack", daemon=True
            )
            self._running.start()
        return finished

    def _due(self) -> bool:
        return pack_count(self._pack_dir) >= self._start_at and time.monotonic() >= self._not_before

    def _wait_for(self, started: StartedProcess) -> None:
        done = started.finish(_REPACK_MAX_S)
        if not done.reason:
            self._failures = 0
            self._start_at = max(REPACK_AT, pack_count(self._pack_dir) + REPACK_EVERY)
            return
        self._failures += 1
        pause = min(_RETRY_MOST_S, _RETRY_FIRST_S * 2 ** (self._failures - 1))
        self._not_before = time.monotonic() + pause
        self._start_at = REPACK_AT
        err = done.stderr.decode("utf-8", errors="replace").strip()
        log.warning(
            "git repack failed (%s); the packs stay as they are, tried again in %.0f s",
            err or done.reason,
            pause,
        )

    def _git_repacks_now(self) -> bool:
        """Whether a user's `git gc` (its `gc.pid`, naming a live process of this machine) or
        `git maintenance run` (its lock) is running in this repository."""
        try:
            words = read_file_text(self._git_dir / "gc.pid", "replace").split()
        except OSError:
            words = []
        here = len(words) == 2 and words[0].isdigit() and words[1] == socket.gethostname()
        if here and pid_alive(int(words[0])):
            return True
        try:
            age = time.time() - (self._git_dir / "objects" / "maintenance.lock").stat().st_mtime
        except OSError:
            return False
        return age < _MAINTENANCE_LOCK_STALE_S

    def _collect(self, timeout: float = 0) -> bool:
        """Whether the repack started last has ended (waited for up to `timeout`)."""
        running = self._running
        if running is None:
            return False
        running.join(timeout)
        if running.is_alive():
            return False
        self._running = None
        return True

    def close(self) -> None:
        """Wait a little for a running repack; one that goes on ends by itself (an interrupted
        repack leaves temporary files that git's next repack or gc removes, and deletes
        nothing that the pack it was writing does not hold)."""
        if not self._collect(_STOP_WAIT_S) and self._running is not None:
            log.info("git repack still runs; it ends by itself")
