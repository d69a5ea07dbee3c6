"""Remote sync in a thread of its own, so a slow network never holds up decisions or the watchdog
(the sync takes the write lock only for its local steps).

The main loop asks for a finished sync's result, starts the next one when due, and the thread
wakes the loop when it is done.
"""

from __future__ import annotations

import logging
import threading
import time

from feedbackd.app.daemon.wakeup import Wakeup
from feedbackd.app.remotesync import Syncer, SyncResult

log = logging.getLogger("feedbackd")


class SyncThread:
    """At most one sync at a time, by `syncer`, in a thread."""

    def __init__(self, syncer: Syncer, wakeup: Wakeup) -> None:
        self.syncer = syncer
        self.wakeup = wakeup
        self.thread: threading.Thread | None = None
        self.result: SyncResult | None = None

    def collect(self) -> SyncResult | None:
        """The result of the sync that has ended since the last call, if there is one."""
        if self.thread is None or self.thread.is_alive():
            return None
        self.thread = None
        return self.result

    def start_if_due(self) -> None:
        if self.thread is None and self.syncer.due(time.time()):
            self.thread = threading.Thread(target=self._run, name="feedbackd-sync", daemon=True)
            self.thread.start()

    def seconds_until_due(self, now: float) -> float | None:
        """How long until the next sync is due (wall clock); None while one runs (it wakes the
        loop when done) or when sync is off."""
        if self.thread is not None:
            return None
        return self.syncer.seconds_until_due(now)

    def join(self, timeout: float) -> None:
        """Wait for a sync in flight; safe to abandon after timeout: it rebases in a worktree."""
        if self.thread is not None:
            self.thread.join(timeout)

    def _run(self) -> None:
        self.result = None
        try:
            self.result = self.syncer.sync()
        except Exception:
            log.exception("sync failed unexpectedly; trying again later")
        finally:
            self.wakeup.poke()
