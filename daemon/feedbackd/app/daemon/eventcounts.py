"""What the workspace recorded since the daemon started, whoever recorded it: `status` counts.

The daemon's own passes are one writer among several: `approve` and `reject` on the command
line, the panel and the HTTP API record their decisions themselves, and a pull brings in what
other clones recorded. Every one of them ends in a commit with a `Feedback-Event` trailer, so
the counts come from the history: the commits that reached the branch since the daemon
started, read a stretch at a time (from the commit the last look reached to HEAD), so a long
life never reads the same commit twice. The last event is the newest of them by author time.
Without git (git.enabled: false) the daemon's own events are all there is to count.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from datetime import datetime

from feedbackd.app.commits.openrepo import open_repo
from feedbackd.app.commits.recording import Event
from feedbackd.app.daemon.statusfile import LastEvent
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.errors import FeedbackdError, GitError
from feedbackd.core.timeutil import parse_iso
from feedbackd.edges.git.repo import history_of

log = logging.getLogger("feedbackd")


class EventCounts:
    """The events recorded in the workspace since `start`, by type, and the last one."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.last: LastEvent | None = None
        self._from_history = False
        self._tip: str | None = None  # the commit the history was read up to

    def start(self, runtime: Runtime) -> None:
        """From now on: what HEAD holds already is not counted."""
        try:
            with open_repo(runtime) as repo:
                if repo is not None:
                    self._tip = repo.head()
                    self._from_history = True
        except (FeedbackdError, OSError) as error:  # the passes report what stands in the way
            log.error("status counts only this daemon's events: %s", error)

    @staticmethod
    def _head(runtime: Runtime) -> str | None:
        try:
            with open_repo(runtime) as repo:
                return repo.head() if repo is not None else None
        except (FeedbackdError, OSError):
            return None

    def add_own(self, events: Iterable[Event], now: datetime) -> None:
        """The daemon's own events: those it committed are counted from the history (with
        everybody else's); without a commit (no git) they are counted here."""
        for event in events:
            if event.commit is None or not self._from_history:
                self.counts[event.event] += 1
                self._note(LastEvent(now, event.event, event.agent, event.summary))

    def catch_up(self, runtime: Runtime) -> None:
        """Count the commits that reached HEAD since the last look."""
        if not self._from_history:
            return
        try:
            with open_repo(runtime) as repo:
                if repo is None:
                    return
                head, arrived = history_of(repo).events_to_head(self._tip)
        except GitError as error:  # the commit looked at last is gone (a gc after a reset)
            log.warning("status counts go on from HEAD: %s", error)
            self._tip = self._head(runtime)
            return
        except (FeedbackdError, OSError) as error:  # counted at the next look
            log.warning("cannot read the history for the status counts: %s", error)
            return
        self._tip = head
        for entry in arrived:
            self.counts[entry.event or ""] += 1
        if arrived:
            newest = arrived[0]
            summary = newest.subject.split(": ", 1)[-1]
            try:
                when = parse_iso(newest.date)
            except ValueError:
                return
            self._note(LastEvent(when, newest.event or "", newest.agent or "", summary))

    def _note(self, event: LastEvent) -> None:
        if self.last is None or event.time >= self.last.time:
            self.last = event
