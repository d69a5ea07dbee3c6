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
import threading
import time

from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.errors import DAMAGE_HINT, FeedbackdError
from feedbackd.edges.git.repo import damage_in

log = logging.getLogger("feedbackd")

CHECK_EVERY_S = 60.0  # a connectivity check of a big site takes seconds: not more often
LOOKING_STEP_S = 0.2  # while a check runs, how often the daemon asks whether it has ended


class RepositoryHealth:
    """The damage a pass met (None: none), and when to look again. The look (`git fsck`, seconds
    on a big site) runs in a thread of its own, so the daemon's loop, and the watchdog's ping,
    go on meanwhile."""

    def __init__(self) -> None:
        self.damage: str | None = None
        self._check_at = 0.0
        self._checking: threading.Thread | None = None
        self._found: list[str | None] = []  # what the last look found, once it has ended

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
        if self.damage is None:
            return None
        return LOOKING_STEP_S if self._checking is not None else max(0.0, self._check_at - now)

    def whole_again(self, runtime: Runtime) -> bool:
        """Whether a repository found damaged is whole now: a look at it is started when one
        is due, and its answer taken once it has ended; False until then."""
        if self.damage is None:
            return True
        if self._checking is None:
            if time.monotonic() >= self._check_at:
                self._checking = threading.Thread(
                    target=self._look, args=(runtime,), name="git fsck", daemon=True
                )
                self._checking.start()
            return False
        if self._checking.is_alive():
            return False
        self._checking = None
        still = self._found.pop()
        if still is not None:
            self.damaged(still)
            return False
        log.info("git fsck finds the repository whole again: recording resumes")
        self.damage = None
        return True

    def _look(self, runtime: Runtime) -> None:
        try:
            found = damage_in(runtime.workspace.root) if runtime.git_enabled else None
        except FeedbackdError as error:
            found = str(error)
        self._found.append(found)
