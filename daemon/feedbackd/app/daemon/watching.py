"""The watcher thread, and the keeper that makes sure one is always running.

The thread only hands over batches of hints (Changes) and wakes the main loop; all the work is
done there. A watcher that fails is restarted with backoff, and its first batch is everything, so
nothing that happened while no one watched is missed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path

from feedbackd.app.daemon.agentstates import RETRY_MAX_S, backoff
from feedbackd.app.daemon.wakeup import Wakeup
from feedbackd.edges.watcher import Changes, watch_agents

log = logging.getLogger("feedbackd")

MIN_DEBOUNCE_MS = 50


class Watcher:
    """One watcher thread: batches of file events go into `batches`, then the loop is woken."""

    def __init__(
        self,
        data_dir: Path,
        debounce_ms: int,
        wakeup: Wakeup,
        batches: deque[Changes],
        shared_file: Path | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.shared_file = shared_file  # a file every agent reads: its change means all
        self.debounce_ms = debounce_ms
        self.wakeup = wakeup
        self.batches = batches  # append and popleft are thread-safe
        self.stop = threading.Event()
        self.started = time.monotonic()
        self.thread = threading.Thread(target=self._run, name="feedbackd-watch", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for changes in watch_agents(
                self.data_dir,
                self.stop,
                debounce_ms=self.debounce_ms,
                shared_file=self.shared_file,
            ):
                self.batches.append(changes)
                self.wakeup.poke()
        except Exception:
            log.exception("the file watcher failed; it is restarted shortly")
        finally:
            self.wakeup.poke()  # let the loop notice that this thread has ended

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()

    def close(self, timeout: float = 5.0) -> None:
        self.stop.set()
        self.thread.join(timeout)


class WatcherKeeper:
    """Starts the watcher, restarts it with backoff after it ended, and hands over its batches
    (those of a watcher that ended too)."""

    def __init__(self, wakeup: Wakeup) -> None:
        self.wakeup = wakeup
        self.batches: deque[Changes] = deque()
        self.watcher: Watcher | None = None
        self.restarts = 0
        self.restart_at = 0.0  # time.monotonic()

    def look_after(self, data_dir: Path, debounce_ms: int, shared_file: Path | None = None) -> None:
        """Start a watcher on data_dir when none runs and a restart is due."""
        if self.watcher is not None and self.watcher.alive:
            return
        now = time.monotonic()
        if self.watcher is not None:
            lived = now - self.watcher.started
            self.watcher = None
            self.restarts = 1 if lived > RETRY_MAX_S else self.restarts + 1
            self.restart_at = now + backoff(self.restarts)
        if now < self.restart_at:
            return
        self.watcher = Watcher(
            data_dir, max(debounce_ms, MIN_DEBOUNCE_MS), self.wakeup, self.batches, shared_file
        )

    def has_batches(self) -> bool:
        return bool(self.batches)

    def drain(self) -> Iterator[Changes]:
        while self.batches:
            yield self.batches.popleft()

    def seconds_until_restart(self, now: float) -> float | None:
        """How long until a watcher is started again (monotonic), None while one runs."""
        return self.restart_at - now if self.watcher is None else None

    def close(self) -> None:
        """Stop the watcher; the next look_after starts one anew (on a new data folder, say)."""
        if self.watcher is not None:
            self.watcher.close()
