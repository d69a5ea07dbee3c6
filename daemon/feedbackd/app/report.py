"""What passes found and did: the events recorded, the files that wait, the warnings."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from feedbackd.app.commits.recording import Event
from feedbackd.app.workspace.problems import Problem


@dataclass
class Report:
    """The outcome of one or more reconciles."""

    events: list[Event] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Those of `warnings` about a decision recorded (see AgentPlan.decision_warnings).
    decision_warnings: list[str] = field(default_factory=list)

    def extend(self, other: Report) -> None:
        self.events.extend(other.events)
        self.problems.extend(other.problems)
        self.warnings.extend(other.warnings)
        self.decision_warnings.extend(other.decision_warnings)

    def followed_by(self, later: Report) -> Report:
        """This report and a later pass's: events and warnings add up, while the problems are
        the later pass's alone, because it looked at the files again."""
        return Report(
            self.events + later.events,
            later.problems,
            self.warnings + later.warnings,
            self.decision_warnings + later.decision_warnings,
        )

    @property
    def unsettled(self) -> list[Problem]:
        return [problem for problem in self.problems if not problem.settled]

    def next_retry(self, now: float | None = None) -> float | None:
        """When to look again: a file still settling, or a reported problem that says when
        (a full disk); None when nothing waits for a time."""
        now = time.time() if now is None else now
        waiting = [p.retry_at for p in self.problems if not p.settled or p.retry_at > now]
        return min(waiting) if waiting else None
