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
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from feedbackd.edges.process import StartedProcess

log = logging.getLogger("feedbackd")

REPACK_AT = 24  # packs in the repository before a repack: well under git's 50
# A repository whose packs git leaves many (kept ones, a long progression) is repacked again
# only once this many more have come: never a repack per commit.
REPACK_EVERY = 16
REPACK = ("repack", "-d", "-q", "--geometric=2")
_STOP_WAIT_S = 10.0  # at close, a repack left running this long is stopped (nothing is lost)


class PackUpkeep:
    """When to repack, and the repack running now, for one repository."""

    def __init__(
        self, work_tree: Path, git_dir: Path, executable: str, env: Mapping[str, str]
    ) -> None:
        self._work_tree = work_tree
        self._pack_dir = git_dir / "objects" / "pack"
        self._executable = executable
        self._env = dict(env)
        self._start_at = REPACK_AT
        self._running: StartedProcess | None = None

    def after_commit(self) -> bool:
        """Start a repack once the repository holds enough packs (unless one still runs);
        whether a repack finished since the last call, so that processes that keep packs open
        (libgit2, the helpers) may start afresh."""
        finished = self._collect()
        if self._running is None and self._packs() >= self._start_at:
            self._running = StartedProcess(
                [self._executable, *REPACK], cwd=self._work_tree, env=self._env
            )
        return finished

    def _packs(self) -> int:
        try:
            return sum(1 for entry in os.scandir(self._pack_dir) if entry.name.endswith(".pack"))
        except OSError:
            return 0

    def _collect(self, timeout: float | None = 0) -> bool:
        """Whether the running repack has ended (waited for up to `timeout`, None: no wait)."""
        running = self._running
        if running is None or (timeout == 0 and running.running):
            return False
        self._running = None
        done = running.finish(timeout or None)
        self._start_at = max(REPACK_AT, self._packs() + REPACK_EVERY)
        if done.reason:
            err = done.stderr.decode("utf-8", errors="replace").strip()
            log.warning("git repack failed (%s); the packs stay as they are", err or done.reason)
        return True

    def close(self) -> None:
        """Wait a little for a running repack, then stop it: an interrupted repack leaves its
        temporary files, which git's next repack or gc removes, and deletes nothing."""
        self._collect(_STOP_WAIT_S)
