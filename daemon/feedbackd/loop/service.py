"""Running feedbackd: one pass (`run --once`) and the long-running daemon."""

from __future__ import annotations

import time
from collections.abc import Callable

from feedbackd.core.timeutil import utcnow
from feedbackd.loop.daemon import Daemon
from feedbackd.loop.locking import clean_leftovers, pipeline_lock
from feedbackd.loop.reconcile import Report, reconcile_all
from feedbackd.loop.runtime import Runtime
from feedbackd.loop.statusfile import LastEvent, add_run
from feedbackd.loop.sync import sync_once


def run_once(runtime: Runtime, *, progress: Callable[[int, int], None] | None = None) -> Report:
    """Process everything pending; wait for files still being written, up to daemon.settle_ms.

    progress, when given, hears (agents done, agents in all) of the first pass."""
    with pipeline_lock(runtime):
        clean_leftovers(runtime)
        report = reconcile_all(runtime, progress=progress)
    deadline = time.time() + runtime.settings.daemon.settle_ms / 1000 + 1
    while (retry := report.next_retry()) is not None and retry <= deadline:
        time.sleep(max(0.0, retry - time.time()) + 0.01)
        with pipeline_lock(runtime):
            again = reconcile_all(runtime)
        report = report.followed_by(again)
    report = sync_once(runtime, report)  # one pull and push when git.remote is set
    _remember(runtime, report)
    return report


def _remember(runtime: Runtime, report: Report) -> None:
    """Leave what this run did for `feedbackd status` (counts, last event, what waits)."""
    now = utcnow()
    events = [LastEvent(now, e.event, e.agent, e.summary) for e in report.events]
    add_run(runtime.workspace.state_dir, events, pending=len(report.unsettled))


def run_daemon(runtime: Runtime) -> int:
    exit_code: int = Daemon(runtime).run()
    return exit_code
