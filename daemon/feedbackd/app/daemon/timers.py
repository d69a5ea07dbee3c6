"""The daemon's own clocks, apart from retries (app/daemon/agentstates.py), the watcher's
restart and the next sync: the hourly full pass, the systemd watchdog ping, and the start-up pass's
reports. All on time.monotonic().
"""

from __future__ import annotations

import time
from collections.abc import Callable

from feedbackd.core.wording import noun
from feedbackd.edges.notify import Notifier

# A full pass this often, whatever the watcher says: a safety net for events the kernel dropped.
# A pass that finds nothing to do writes nothing, so this costs a few git reads per agent.
FULL_PASS_S = 3600.0


class FullPassClock:
    """When the next full pass is due: FULL_PASS_S after the last one began."""

    def __init__(self) -> None:
        self.due_at = time.monotonic() + FULL_PASS_S

    def started(self) -> None:
        self.due_at = time.monotonic() + FULL_PASS_S

    def due(self) -> bool:
        return time.monotonic() >= self.due_at

    def seconds_until_due(self, now: float) -> float:
        return self.due_at - now


class Heartbeat:
    """Pings systemd's watchdog when due (every half of WATCHDOG_USEC); the loop calls `beat`
    after every wait and between decisions, so a long pass that makes progress is never taken
    for a hang."""

    def __init__(self, notifier: Notifier) -> None:
        self.notifier = notifier
        self.next_ping = 0.0

    def beat(self) -> None:
        interval = self.notifier.watchdog_interval()
        now = time.monotonic()
        if interval and now >= self.next_ping:
            self.notifier.watchdog()
            self.next_ping = now + interval

    def seconds_until_due(self, now: float) -> float | None:
        """None when no watchdog is set."""
        return self.next_ping - now if self.notifier.watchdog_interval() else None


class CatchUp:
    """Reports of a long start-up pass to systemd. Its start timeout (90 s by default) would
    otherwise fail a big site's first start, restart it and hit the start limit: every
    REPORT_S of the pass asks for EXTEND_S more and says how far it got in a STATUS= line."""

    REPORT_S = 2.0
    EXTEND_S = 30.0

    def __init__(self, notifier: Notifier, clock: Callable[[], float] = time.monotonic) -> None:
        self.notifier = notifier
        self.clock = clock
        self.next_report = clock() + self.REPORT_S

    def progress(self, done: int, total: int) -> None:
        """`done` of `total` agents are through the pass."""
        now = self.clock()
        if now < self.next_report:
            return
        self.next_report = now + self.REPORT_S
        self.notifier.extend_timeout(self.EXTEND_S)
        self.notifier.status(f"catching up: {done:,} of {total:,} {noun(total, 'agent')}")
