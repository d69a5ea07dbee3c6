"""`run --once`: the passes that record everything pending, then one sync; without the
daemon's watcher and threads, which this command does not load."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator

from feedbackd.app.commits.locking import clean_leftovers, write_lock
from feedbackd.app.daemon.statusfile import LastEvent, add_run
from feedbackd.app.reconcile import reconcile_all
from feedbackd.app.remotesync import sync_once
from feedbackd.app.report import Report
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.errors import Aborted
from feedbackd.core.wording import Progress
from feedbackd.edges.clock import utcnow


def run_once(runtime: Runtime, *, progress: Progress | None = None) -> Report:
    """Process everything pending; wait for files still being written, up to daemon.settle_ms.

    progress, when given, hears (agents done, agents in all) of the first pass. SIGTERM ends
    the run after the decision in hand (Aborted): the next run records the rest."""
    stop = threading.Event()
    with _stopped_by_sigterm(stop):
        report = _passes(runtime, progress, lambda: not stop.is_set())
    if stop.is_set():
        raise Aborted(
            "stopped by SIGTERM after the decision in hand; what was recorded is committed",
            hint="run `feedbackd run --once` again (or start the daemon): it records the rest",
        )
    report = sync_once(runtime, report)  # one pull and push when git.remote is set
    _remember(runtime, report)
    return report


def _passes(
    runtime: Runtime,
    progress: Progress | None,
    keep_going: Callable[[], bool],
) -> Report:
    """The first pass, then passes again for files still settling, up to daemon.settle_ms."""
    with write_lock(runtime):
        clean_leftovers(runtime)
        report = reconcile_all(runtime, progress=progress, keep_going=keep_going, skip_quiet=True)
    deadline = time.time() + runtime.settings.daemon.settle_ms / 1000 + 1
    while (retry := report.next_retry()) is not None and retry <= deadline and keep_going():
        time.sleep(max(0.0, retry - time.time()) + 0.01)
        with write_lock(runtime):
            again = reconcile_all(runtime, keep_going=keep_going, skip_quiet=True)
        report = report.followed_by(again)
    return report


@contextlib.contextmanager
def _stopped_by_sigterm(stop: threading.Event) -> Iterator[None]:
    """SIGTERM sets `stop` instead of ending the process mid-commit (main thread only, where
    Python runs signal handlers); the handler before is put back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, lambda _number, _frame: stop.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _remember(runtime: Runtime, report: Report) -> None:
    """Leave what this run did for `feedbackd status` (counts, last event, what waits)."""
    now = utcnow()
    events = [LastEvent(now, e.event, e.agent, e.summary) for e in report.events]
    add_run(runtime.workspace.state_dir, events, pending=len(report.unsettled))
