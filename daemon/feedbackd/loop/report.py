"""What passes found and did: the events recorded, the files that wait, the warnings."""

from __future__ import annotations

from dataclasses import dataclass, field

from feedbackd.loop.problems import Problem
from feedbackd.loop.recording import Event


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

    def next_retry(self) -> float | None:
        waiting = [problem.retry_at for problem in self.unsettled]
        return min(waiting) if waiting else None
