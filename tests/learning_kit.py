"""Test helpers for the learning outputs: a clock a test moves, and a curator who decides drafts
through the real pipeline at the times the clock says."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from feedbackd.app.curation import agentpass
from tests.workspace_kit import Site, draft

AGENT = "writer"


class Clock:
    """The time a pass decides at (its `utcnow`) and the dates git gives its commits, moved
    together, so a history weeks long is made in seconds as the daemon would have made it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch
        self.now = datetime.now(UTC)
        monkeypatch.setattr(agentpass, "utcnow", lambda: self.now)

    def at(self, moment: datetime) -> None:
        self.now = moment
        stamp = moment.strftime("%Y-%m-%dT%H:%M:%S+0000")
        self.monkeypatch.setenv("GIT_AUTHOR_DATE", stamp)
        self.monkeypatch.setenv("GIT_COMMITTER_DATE", stamp)


def monday_weeks_ago(weeks: int) -> datetime:
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return today - timedelta(days=today.weekday(), weeks=weeks)


def doc(name: str, title: str | None = None, excerpt: str | None = None) -> dict[str, Any]:
    return draft({"title": title or f"Draft {name}", "excerpt": excerpt or f"About {name}."})


class Curator:
    """Decisions as a curator makes them in an editor, each recorded by one real pass."""

    def __init__(self, site: Site, clock: Clock) -> None:
        self.site, self.clock = site, clock

    def drafts(self, when: datetime, *names: str) -> None:
        self.clock.at(when)
        for name in names:
            self.site.write(AGENT, f"{name}.json", doc(name))
        self.site.reconcile()

    def approve(self, when: datetime, name: str, **edits: str) -> None:
        self.clock.at(when)
        self.site.write(AGENT, f"{name}.json", doc(name, **edits))
        self.site.move(AGENT, f"{name}.json", "approved")
        self.site.reconcile()

    def reject(self, when: datetime, name: str) -> None:
        self.clock.at(when)
        self.site.write(AGENT, f"{name}.json", {**doc(name), "rejectionFeedback": "Too dry."})
        self.site.move(AGENT, f"{name}.json", "rejected")
        self.site.reconcile()
