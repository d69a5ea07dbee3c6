"""The long-running daemon: a start-up pass, then file events that mark agents dirty.

Events are only hints; every pass is the same reconcile as `run --once`. The main thread does
all the work, so a signal simply ends the loop after the decision in hand. A watcher thread feeds
batches into a queue; timers (settling files, retries after failures, the watchdog) are the
queue's timeout.
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from types import FrameType

from feedbackd.errors import FeedbackdError
from feedbackd.instance import InstanceLock
from feedbackd.locking import clean_leftovers, pipeline_lock
from feedbackd.notify import Notifier
from feedbackd.reconcile import Report, reconcile_all
from feedbackd.runtime import Runtime
from feedbackd.statusfile import LastEvent, write_status
from feedbackd.timeutil import utcnow
from feedbackd.watcher import Changes, watch_agents

log = logging.getLogger("feedbackd")

RETRY_MIN_S, RETRY_MAX_S = 1.0, 60.0
IDLE_WAKE_S = 30.0


@dataclass
class Dirty:
    """What the next pass must look at."""

    agents: set[str] = field(default_factory=set)
    everything: bool = False

    def add(self, changes: Changes) -> None:
        self.everything |= changes.everything or changes.inbox
        self.agents |= changes.agents

    def take(self) -> tuple[bool, set[str]]:
        taken = (self.everything, self.agents)
        self.everything, self.agents = False, set()
        return taken

    def __bool__(self) -> bool:
        return self.everything or bool(self.agents)


class Daemon:
    def __init__(self, runtime: Runtime, notifier: Notifier | None = None) -> None:
        self.runtime = runtime
        self.notifier = notifier or Notifier()
        self.stop = threading.Event()
        self.reload_requested = False
        self.batches: queue.Queue[Changes | None] = queue.Queue()
        self.dirty = Dirty(everything=True)
        self.started_at = utcnow()
        self.counts: Counter[str] = Counter()
        self.last_event: LastEvent | None = None
        self.retry_at: dict[str, float] = {}  # agent → when to look again (settling, failures)
        self.failures = 0
        self.last_report = Report()

    # --- life cycle ---------------------------------------------------------------------------
    def run(self) -> int:
        state_dir = self.runtime.workspace.state_dir
        state_dir.mkdir(parents=True, exist_ok=True)
        with InstanceLock(state_dir):
            previous = self._install_signals()
            try:
                return self._serve()
            finally:
                self._restore_signals(previous)

    def _serve(self) -> int:
        log.info("feedbackd %d watching %s", os.getpid(), self.runtime.workspace.data)
        with pipeline_lock(self.runtime):
            clean_leftovers(self.runtime)
        self._pass()
        watcher = threading.Thread(target=self._watch, name="feedbackd-watch", daemon=True)
        watcher.start()
        self.notifier.ready()
        self._announce()
        while not self.stop.is_set():
            self._wait_for_work()
            if self.reload_requested:
                self._reload()
            if self.dirty and not self.stop.is_set():
                self._pass()
        self.notifier.stopping()
        log.info("feedbackd stopping")
        watcher.join(timeout=5)
        self._write_status()
        return 0

    def _install_signals(self) -> dict[int, object]:
        previous: dict[int, object] = {}
        for number, handler in (
            (signal.SIGTERM, self._on_stop),
            (signal.SIGINT, self._on_stop),
            (signal.SIGHUP, self._on_reload),
        ):
            previous[number] = signal.signal(number, handler)
        return previous

    def _restore_signals(self, previous: dict[int, object]) -> None:
        for number, handler in previous.items():
            signal.signal(number, handler)  # type: ignore[arg-type]

    def _on_stop(self, signum: int, frame: FrameType | None) -> None:
        self.stop.set()
        self.batches.put(None)  # wake the main loop

    def _on_reload(self, signum: int, frame: FrameType | None) -> None:
        self.reload_requested = True
        self.batches.put(None)

    def _reload(self) -> None:
        self.reload_requested = False
        self.notifier.reloading()
        try:
            self.runtime = self.runtime.reload()
            log.info("configuration reloaded")
            self.dirty.everything = True
        except FeedbackdError as error:
            log.error("configuration not reloaded, keeping the old one: %s", error)
        self.notifier.ready()

    # --- waiting ------------------------------------------------------------------------------
    def _watch(self) -> None:
        settings = self.runtime.settings.daemon
        try:
            for changes in watch_agents(
                self.runtime.workspace.data, self.stop, debounce_ms=max(settings.debounce_ms, 50)
            ):
                self.batches.put(changes)
        except Exception:  # the loop below notices and restarts nothing; log loudly
            log.exception("file watcher failed; falling back to periodic passes")

    def _wait_for_work(self) -> None:
        timeout = self._next_timeout()
        try:
            item = self.batches.get(timeout=timeout)
        except queue.Empty:
            item = None
        while item is not None or not self.batches.empty():
            if item is not None:
                self.dirty.add(item)
            try:
                item = self.batches.get_nowait()
            except queue.Empty:
                break
        self._due_retries()
        self.notifier.watchdog()

    def _next_timeout(self) -> float:
        now = time.time()
        waits = [IDLE_WAKE_S] + [max(0.0, at - now) for at in self.retry_at.values()]
        interval = self.notifier.watchdog_interval()
        if interval:
            waits.append(interval)
        return max(0.01, min(waits))

    def _due_retries(self) -> None:
        now = time.time()
        for agent, at in list(self.retry_at.items()):
            if at <= now:
                del self.retry_at[agent]
                if agent == "*":
                    self.dirty.everything = True
                else:
                    self.dirty.agents.add(agent)

    # --- passes -------------------------------------------------------------------------------
    def _pass(self) -> None:
        everything, agents = self.dirty.take()
        chosen = None if everything else sorted(agents)
        try:
            with pipeline_lock(self.runtime):
                report = reconcile_all(self.runtime, chosen)
        except FeedbackdError as error:
            self._failed(error, chosen)
            return
        except Exception as error:
            log.exception("pass failed")
            self._failed(error, chosen)
            return
        self.failures = 0
        self._record(report)

    def _failed(self, error: Exception, chosen: list[str] | None) -> None:
        self.failures += 1
        delay = min(RETRY_MAX_S, RETRY_MIN_S * 2 ** (self.failures - 1))
        log.error("pass failed (%s); retrying in %.0f s", error, delay)
        for agent in chosen if chosen is not None else ["*"]:
            self.retry_at[agent] = time.time() + delay
        self.last_report.warnings.append(f"last pass failed: {error}")
        self._write_status()

    def _record(self, report: Report) -> None:
        for event in report.events:
            self.counts[event.event] += 1
            self.last_event = LastEvent(utcnow(), event.event, event.agent, event.summary)
        for problem in report.unsettled:
            agent = self._agent_of(problem.path)
            if agent is not None:
                self.retry_at[agent] = min(
                    self.retry_at.get(agent, problem.retry_at), problem.retry_at
                )
        self.last_report = report
        self._write_status()
        self._announce()

    def _agent_of(self, path: object) -> str | None:
        try:
            relative = os.path.relpath(str(path), self.runtime.workspace.agents_dir)
        except ValueError:
            return None
        first = relative.split(os.sep, 1)[0]
        return None if first.startswith("..") else first

    # --- reporting ----------------------------------------------------------------------------
    def _announce(self) -> None:
        last = self.last_event
        text = f"last: {last.event}({last.agent}) {last.summary}" if last else "idle"
        pending = len(self.last_report.unsettled)
        self.notifier.status(f"{sum(self.counts.values())} recorded; {pending} pending; {text}")

    def _write_status(self) -> None:
        report = self.last_report
        problems = [p.line() for p in report.problems if p.settled] + report.warnings
        write_status(
            self.runtime.workspace.state_dir,
            pid=os.getpid(),
            started_at=self.started_at,
            last_event=self.last_event,
            counts=dict(self.counts),
            pending=len(report.unsettled),
            problems=problems,
        )
