"""Whether the repository is whole enough to record on.

A commit made on top of a damaged history (HEAD naming a commit whose objects are gone, a
ledger whose blob is lost) carries the damage on, and a ledger the pass could not read looks
like one never committed: the daemon would record a decision twice. So once a pass meets
damage (RepositoryDamaged), the daemon records nothing, says so in `status`, and asks
`git fsck` every CHECK_EVERY_S (and at once on SIGHUP, `systemctl reload feedbackd`) whether
the repository is whole again (restored from a clone, say); then every agent gets a full pass.
"""

from __future__ import annotations

import logging
import time

from feedbackd.core.errors import DAMAGE_HINT, FeedbackdError
from feedbackd.edges.git.repo import damage_in
from feedbackd.loop.workspace.runtime import Runtime

log = logging.getLogger("feedbackd")

CHECK_EVERY_S = 60.0  # a connectivity check of a big site takes seconds: not more often


class RepositoryHealth:
    """The damage a pass met (None: none), and when to look again."""

    def __init__(self) -> None:
        self.damage: str | None = None
        self._check_at = 0.0

    def damaged(self, what: str) -> None:
        if self.damage is None:
            log.error("recording stopped: %s (%s)", what, DAMAGE_HINT)
        self.damage = what
        self._check_at = time.monotonic() + CHECK_EVERY_S

    def look_now(self) -> None:
        """Check at the next wake-up, not CHECK_EVERY_S after the last check."""
        self._check_at = 0.0

    def problem_line(self) -> str | None:
        if self.damage is None:
            return None
        return f"recording stopped: the git repository is damaged: {self.damage} ({DAMAGE_HINT})"

    def seconds_until_check(self, now: float) -> float | None:
        return max(0.0, self._check_at - now) if self.damage is not None else None

    def whole_again(self, runtime: Runtime) -> bool:
        """Whether a repository found damaged is whole now (asked of git when a check is due;
        False until then)."""
        if self.damage is None:
            return True
        if time.monotonic() < self._check_at:
            return False
        try:
            still = damage_in(runtime.workspace.root) if runtime.git_enabled else None
        except FeedbackdError as error:
            still = str(error)
        if still is not None:
            self.damaged(still)
            return False
        log.info("git fsck finds the repository whole again: recording resumes")
        self.damage = None
        return True
