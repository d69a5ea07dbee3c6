"""The daemon's state of each agent (and of the rating inbox): what its last pass left for
`status`, how often it failed in a row, and when to look at it again.

A pass that failed is tried again with exponential backoff (1 s, 2 s, 4 s ... at most a minute),
but every few seconds when the disk is full (the work goes on soon after space is freed); a pass
that found a file still being written is tried again the moment that file has settled.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from feedbackd.app.report import Report
from feedbackd.app.workspace.problems import DISK_FULL_RETRY_S, Problem

log = logging.getLogger("feedbackd")

RETRY_MIN_S, RETRY_MAX_S = 1.0, 60.0
# Past a file's settle time, look again this much later, so it is judged settled at once.
SETTLE_MARGIN_S = 0.05
# Keys of retries and states that are not agents (no agent id can start with these).
EVERY_AGENT = "*"
RATINGS = ":ratings"
GIT_INDEX = ":git-index"  # the heal of an index left behind the commits (a full disk)
_NOT_AGENTS = frozenset({RATINGS, GIT_INDEX})


@dataclass
class AgentState:
    """What the last pass over one agent left behind, for `status`."""

    problems: list[Problem] = field(default_factory=list)
    # What the last pass warned of; what its decisions warned of is kept apart, for whoever
    # decided (app/workspace/decisionwarnings.py).
    warnings: list[str] = field(default_factory=list)
    failure: str | None = None
    failures: int = 0


class AgentStates:
    """Per key (an agent id, RATINGS, or EVERY_AGENT for a retry of the whole listing): its state
    and the wall-clock time (time.time) at which to look again."""

    def __init__(self) -> None:
        self.states: dict[str, AgentState] = {}
        self.retry_at: dict[str, float] = {}

    # --- after a pass -------------------------------------------------------------------------
    def state(self, key: str) -> AgentState:
        return self.states.setdefault(key, AgentState())

    def failed(
        self, key: str, message: str, *, disk_full: bool = False, fault: bool = True
    ) -> None:
        """A pass that did not finish; `fault` False when nothing is wrong but the timing (the
        workspace kept changing under it): logged as a warning, not an error."""
        state = self.state(key)
        state.failures += 1
        state.failure = message
        delay = DISK_FULL_RETRY_S if disk_full else backoff(state.failures)
        log.log(
            logging.ERROR if fault else logging.WARNING,
            "%s: pass failed (%s); trying again in %.0f s",
            name_of(key),
            message,
            delay,
        )
        self.retry_at[key] = time.time() + delay

    def passed(self, key: str, report: Report) -> None:
        state = self.state(key)
        state.failure, state.failures = None, 0
        state.problems = report.problems
        state.warnings = [w for w in report.warnings if w not in report.decision_warnings]
        waiting = report.next_retry()
        if waiting is not None:
            self.retry_at[key] = waiting + SETTLE_MARGIN_S  # a file is still being written
        else:
            self.retry_at.pop(key, None)

    def look_again_in(self, key: str, seconds: float) -> None:
        self.retry_at[key] = time.time() + seconds

    def forget(self, key: str) -> None:
        """An agent moved away or removed: nothing left to report or retry."""
        self.states.pop(key, None)
        self.retry_at.pop(key, None)

    def keep_only(self, agents: Iterable[str]) -> None:
        """Forget the agents not in `agents` (renamed or removed: their problems went with them)."""
        for gone in set(self.states) - set(agents) - _NOT_AGENTS:
            self.forget(gone)

    def known_agents(self) -> list[str]:
        """The agents (not the rating inbox) that a pass has looked at, sorted."""
        return sorted(set(self.states) - _NOT_AGENTS)

    # --- when -----------------------------------------------------------------------------------
    def take_due(self, now: float) -> list[str]:
        """The keys whose time to look again has come (they are not looked at again after)."""
        due = [key for key, at in self.retry_at.items() if at <= now]
        for key in due:
            del self.retry_at[key]
        return due

    def seconds_until_due(self, now: float) -> float | None:
        return min((at - now for at in self.retry_at.values()), default=None)

    # --- for status -----------------------------------------------------------------------------
    def pending(self) -> int:
        """Problems not settled yet: files that may still be being written."""
        return sum(len([p for p in s.problems if not p.settled]) for s in self.states.values())

    def problem_lines(self) -> list[str]:
        lines: list[str] = []
        for key, state in sorted(self.states.items()):
            lines += [problem.line() for problem in state.problems if problem.settled]
            lines += state.warnings
            if state.failure is not None:
                lines.append(f"{name_of(key)}: last pass failed: {state.failure}")
        return lines


def name_of(key: str) -> str:
    """How a key is named in messages."""
    return {RATINGS: "ratings", GIT_INDEX: "git index"}.get(key, key)


def backoff(failures: int) -> float:
    """Seconds to wait after this many failures in a row: 1, 2, 4 ... at most RETRY_MAX_S."""
    return float(min(RETRY_MAX_S, RETRY_MIN_S * 2 ** max(0, failures - 1)))
