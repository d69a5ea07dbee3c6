"""The long-running daemon: a start-up pass, then file events that mark agents dirty.

Events are only hints; every pass is the same reconcile as `run --once`, one agent at a time
under the workspace write lock, so a CLI command can slip in between agents and one broken agent
never holds up the others. The main thread does all the work; a watcher thread only hands over
batches, and a sync thread pulls and pushes (when `git.remote` is set) so a slow network never
holds up a decision. The watcher, the sync thread and the signal handlers wake the main thread
through a self-pipe (also the interpreter's signal wake-up fd), so no lock is ever taken inside a
signal handler and a signal delivered to another thread still wakes the loop at once. Timers
(files still settling, retries after failures, the watchdog, the next sync, a watcher restart)
are the wait's timeout.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from feedbackd.core.errors import FeedbackdError
from feedbackd.core.timeutil import utcnow
from feedbackd.edges.instance import InstanceLock
from feedbackd.edges.notify import Notifier
from feedbackd.edges.watcher import Changes, watch_agents
from feedbackd.loop.locking import clean_leftovers, clear_stale_git_locks, pipeline_lock
from feedbackd.loop.problems import Problem
from feedbackd.loop.reconcile import Report, reconcile_all, reconcile_ratings
from feedbackd.loop.recovery import CommittedLedgers
from feedbackd.loop.runtime import Runtime
from feedbackd.loop.statusfile import LastEvent, write_status
from feedbackd.loop.sync import Syncer, SyncResult, problem_line

log = logging.getLogger("feedbackd")

RETRY_MIN_S, RETRY_MAX_S = 1.0, 60.0
# Wake up now and then even when nothing happens, to look after the watcher thread.
IDLE_WAKE_S = 30.0
# A full pass this often, whatever the watcher says: a safety net for events the kernel dropped.
# A pass that finds nothing to do writes nothing, so this costs a few git reads per agent.
FULL_PASS_S = 3600.0
# Past a file's settle time, look again this much later, so it is judged settled at once.
SETTLE_MARGIN_S = 0.05
# Keys of retries and states that are not agents (no agent id can start with these).
EVERY_AGENT = "*"
RATINGS = ":ratings"
SYNC_GRACE_S = 10.0  # at shutdown, how long a sync in flight may take to finish


@dataclass
class Dirty:
    """What the next pass must look at."""

    agents: set[str] = field(default_factory=set)
    everything: bool = False
    inbox: bool = False  # the rating inbox (and interrupted rating commits)

    def add(self, changes: Changes) -> None:
        self.everything |= changes.everything
        self.inbox |= changes.inbox or changes.everything
        self.agents |= changes.agents

    def take(self) -> tuple[bool, bool, set[str]]:
        taken = (self.everything, self.inbox or self.everything, self.agents)
        self.everything, self.inbox, self.agents = False, False, set()
        return taken

    def __bool__(self) -> bool:
        return self.everything or self.inbox or bool(self.agents)


class Wakeup:
    """A non-blocking self-pipe: any thread, or a signal, pokes it; the main loop waits on it."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def poke(self) -> None:
        # A full pipe already holds a wake-up; nothing is lost by dropping this one.
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self.write_fd, b"\0")

    def wait(self, timeout: float) -> None:
        """Return when poked (or a signal arrived), or after timeout seconds."""
        readable, _, _ = select.select([self.read_fd], [], [], max(0.0, timeout))
        if readable:
            with contextlib.suppress(BlockingIOError):
                while os.read(self.read_fd, 4096):
                    pass

    def close(self) -> None:
        os.close(self.read_fd)
        os.close(self.write_fd)


@dataclass
class AgentState:
    """What the last pass over one agent left behind, for `status`."""

    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    failure: str | None = None
    failures: int = 0


class Watcher:
    """The watcher thread: batches of file events go into a deque, then the loop is woken."""

    def __init__(self, data_dir: Path, debounce_ms: int, wakeup: Wakeup) -> None:
        self.data_dir = data_dir
        self.debounce_ms = debounce_ms
        self.wakeup = wakeup
        self.batches: deque[Changes] = deque()  # append and popleft are thread-safe
        self.stop = threading.Event()
        self.started = time.monotonic()
        self.thread = threading.Thread(target=self._run, name="feedbackd-watch", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for changes in watch_agents(self.data_dir, self.stop, debounce_ms=self.debounce_ms):
                self.batches.append(changes)
                self.wakeup.poke()
        except Exception:
            log.exception("the file watcher failed; it is restarted shortly")
        finally:
            self.wakeup.poke()  # let the loop notice that this thread has ended

    def drain(self) -> Iterator[Changes]:
        while self.batches:
            yield self.batches.popleft()

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()

    def close(self, timeout: float = 5.0) -> None:
        self.stop.set()
        self.thread.join(timeout)


class Daemon:
    """`feedbackd run`: one daemon per workspace, reconciling whatever its watcher points at."""

    def __init__(self, runtime: Runtime, notifier: Notifier | None = None) -> None:
        self.runtime = runtime
        self.notifier = notifier or Notifier()
        self.stop = threading.Event()
        self.stop_signal = 0
        self.reload_requested = False
        self.config_problem: str | None = None  # a reload refused: the old settings stand
        self.wakeup = Wakeup()
        self.watcher: Watcher | None = None
        self.watcher_restarts = 0
        self.watcher_due = 0.0
        self.dirty = Dirty(everything=True)
        self.started_at = utcnow()
        self.counts: Counter[str] = Counter()
        self.last_event: LastEvent | None = None
        self.agents: dict[str, AgentState] = {}
        self.retry_at: dict[str, float] = {}  # agent (or EVERY_AGENT) → when to look again
        self.next_ping = 0.0
        self.next_full_pass = time.monotonic() + FULL_PASS_S
        self.syncer = Syncer(runtime)
        self.ledgers = CommittedLedgers()  # the decision ledgers this daemon committed
        self.exit_code = 0
        self.sync_thread: threading.Thread | None = None
        self.sync_result: SyncResult | None = None

    # --- life cycle ---------------------------------------------------------------------------
    def run(self) -> int:
        """Serve until SIGTERM or SIGINT; 0 on a clean stop. Raises Locked for a second daemon."""
        state_dir = self.runtime.workspace.state_dir
        state_dir.mkdir(parents=True, exist_ok=True)
        try:
            with InstanceLock(state_dir) as self.instance:
                previous = self._install_signals()
                try:
                    return self._serve()
                finally:
                    self._restore_signals(previous)
        finally:
            self.wakeup.close()

    def _serve(self) -> int:
        log.info("feedbackd %d started in %s", os.getpid(), self.runtime.workspace.root)
        self._clean_up_after_a_crash()
        self._pass()
        if not self.stop.is_set():
            self.notifier.ready()  # after the start-up pass: everything pending is recorded
            log.info("ready; watching %s", self.runtime.workspace.data)
        while not self.stop.is_set():
            self._look_after_watcher()
            self._look_after_sync()
            self._wait_for_work()
            if self.reload_requested:
                self._reload()
            if self.dirty and not self.stop.is_set():
                self._pass()
        self._shut_down()
        return self.exit_code

    def _clean_up_after_a_crash(self) -> None:
        """Temporary files, stale git locks, a lagging index: what a killed writer left."""
        try:
            with pipeline_lock(self.runtime):
                clean_leftovers(self.runtime)
        except (FeedbackdError, OSError) as error:  # the passes report what still stands
            log.error("could not clean up after an earlier crash: %s", error)

    def _shut_down(self) -> None:
        self.notifier.stopping()
        name = signal.Signals(self.stop_signal).name if self.stop_signal else "a request"
        log.info("feedbackd stopping on %s", name)
        if self.watcher is not None:
            self.watcher.close()
        if self.sync_thread is not None:
            self.sync_thread.join(SYNC_GRACE_S)  # safe to abandon: it rebases in a worktree
        self._write_status()

    def _install_signals(self) -> dict[int, object]:
        previous: dict[int, object] = {}
        for number, handler in (
            (signal.SIGTERM, self._on_stop),
            (signal.SIGINT, self._on_stop),
            (signal.SIGHUP, self._on_reload),
        ):
            previous[number] = signal.signal(number, handler)
        # The interpreter writes to this fd the moment a signal arrives, in whichever thread, so
        # the main loop's select() returns and the Python handler below runs without delay.
        previous[-1] = signal.set_wakeup_fd(self.wakeup.write_fd, warn_on_full_buffer=False)
        return previous

    def _restore_signals(self, previous: dict[int, object]) -> None:
        for number, handler in previous.items():
            if number == -1:
                signal.set_wakeup_fd(handler)  # type: ignore[arg-type]
            else:
                signal.signal(number, handler)  # type: ignore[arg-type]

    # Signal handlers run in the main thread between two statements of a pass: they only set
    # flags (Event.set takes a lock the main thread never holds), and the pass checks them.
    def _on_stop(self, signum: int, frame: FrameType | None) -> None:
        self.stop_signal = signum
        self.stop.set()

    def _on_reload(self, signum: int, frame: FrameType | None) -> None:
        self.reload_requested = True

    def _reload(self) -> None:
        self.reload_requested = False
        self.notifier.reloading()
        old_data = self.runtime.workspace.data
        try:
            self.runtime = self.runtime.reload()
        except FeedbackdError as error:
            log.error("configuration not reloaded, keeping the old one: %s", error)
            self.config_problem = f"configuration not reloaded, the old one stands: {error}"
            self._write_status()
        else:
            log.info("configuration reloaded")
            self.config_problem = None
            self.syncer.runtime = self.runtime  # read when the next sync starts
            self.dirty.everything = True  # settings change what a snippet says
            if self.runtime.workspace.data != old_data and self.watcher is not None:
                self.watcher.close()  # watch the new data folder instead
        self.notifier.ready()

    # --- waiting ------------------------------------------------------------------------------
    def _look_after_watcher(self) -> None:
        """Start the watcher, or restart it with backoff after it failed; its first batch is
        everything, so nothing that happened while no one watched is missed."""
        if self.watcher is not None and self.watcher.alive:
            return
        now = time.monotonic()
        if self.watcher is not None:
            self._take_batches()
            lived = now - self.watcher.started
            self.watcher = None
            self.watcher_restarts = 1 if lived > RETRY_MAX_S else self.watcher_restarts + 1
            self.watcher_due = now + _backoff(self.watcher_restarts)
        if now < self.watcher_due:
            return
        debounce = max(self.runtime.settings.daemon.debounce_ms, 50)
        self.watcher = Watcher(self.runtime.workspace.data, debounce, self.wakeup)

    def _wait_for_work(self) -> None:
        if not self._has_batches():
            self.wakeup.wait(self._next_timeout())
        self._take_batches()
        self._due_timers()
        self._heartbeat()
        self._keep_instance_lock()

    def _keep_instance_lock(self) -> None:
        try:
            self.instance.renew()
        except FeedbackdError as error:  # another daemon took the workspace over: let it
            log.error("stopping: the instance lock was lost: %s", error)
            self.exit_code = 1
            self.stop.set()

    def _has_batches(self) -> bool:
        return self.watcher is not None and bool(self.watcher.batches)

    def _take_batches(self) -> None:
        if self.watcher is None:
            return
        for changes in self.watcher.drain():
            self.dirty.add(changes)

    def _next_timeout(self) -> float:
        now_wall, now = time.time(), time.monotonic()
        waits = [IDLE_WAKE_S, self.next_full_pass - now]
        waits += [at - now_wall for at in self.retry_at.values()]
        if self.notifier.watchdog_interval():
            waits.append(self.next_ping - now)
        if self.watcher is None:
            waits.append(self.watcher_due - now)
        sync_wait = self._sync_wait()
        if sync_wait is not None:
            waits.append(sync_wait)
        return max(0.01, min(waits)) if not self.dirty and not self.reload_requested else 0.0

    def _due_timers(self) -> None:
        now = time.time()
        for agent, at in list(self.retry_at.items()):
            if at <= now:
                del self.retry_at[agent]
                if agent == EVERY_AGENT:
                    self.dirty.everything = True
                elif agent == RATINGS:
                    self.dirty.inbox = True
                else:
                    self.dirty.agents.add(agent)
        if time.monotonic() >= self.next_full_pass:
            self.dirty.everything = True

    def _heartbeat(self) -> None:
        """Ping systemd's watchdog when due; called between decisions too, so a long pass that
        makes progress is never taken for a hang."""
        interval = self.notifier.watchdog_interval()
        now = time.monotonic()
        if interval and now >= self.next_ping:
            self.notifier.watchdog()
            self.next_ping = now + interval

    def _keep_going(self) -> bool:
        self._heartbeat()
        return not self.stop.is_set()

    # --- passes -------------------------------------------------------------------------------
    def _pass(self) -> None:
        everything, inbox, agents = self.dirty.take()
        if everything:
            self.next_full_pass = time.monotonic() + FULL_PASS_S
            chosen = self._agents_on_disk()
        else:
            chosen = sorted(agents)
        if inbox and self._keep_going():
            self._reconcile(RATINGS, lambda: reconcile_ratings(self.runtime))
        for agent in chosen:
            if not self._keep_going():
                break
            self._pass_agent(agent)
        self._write_status()
        self._announce()

    def _agents_on_disk(self) -> list[str]:
        try:
            found = self.runtime.workspace.agent_ids()
        except OSError as error:
            log.error("cannot list %s: %s", self.runtime.workspace.agents_dir, error)
            self.retry_at[EVERY_AGENT] = time.time() + RETRY_MAX_S
            return sorted(self.agents)
        for gone in set(self.agents) - set(found) - {RATINGS}:
            del self.agents[gone]  # renamed or removed: its problems went with it
            self.retry_at.pop(gone, None)
        return found

    def _pass_agent(self, agent: str) -> None:
        if not self.runtime.workspace.agent(agent).root.is_dir():
            self.agents.pop(agent, None)  # moved away or removed: nothing left to report
            self.retry_at.pop(agent, None)
            return
        self._reconcile(
            agent,
            lambda: reconcile_all(
                self.runtime, [agent], keep_going=self._keep_going, ledgers=self.ledgers
            ),
        )

    def _reconcile(self, key: str, work: Callable[[], Report]) -> None:
        """One agent (or the ratings) under the write lock; a failure is retried with backoff."""
        state = self.agents.setdefault(key, AgentState())
        try:
            with pipeline_lock(self.runtime):
                if state.failures and self.runtime.git_enabled:
                    clear_stale_git_locks(self.runtime)  # left by a git that was killed?
                report = work()
        except FeedbackdError as error:
            self._failed(key, state, str(error))
            return
        except Exception as error:  # a bug must not take the daemon (and every agent) down
            log.exception("internal error while reconciling %s", _name(key))
            self._failed(key, state, f"internal error: {error!r}")
            return
        state.failure, state.failures = None, 0
        self._record(key, state, report)

    def _failed(self, agent: str, state: AgentState, message: str) -> None:
        state.failures += 1
        state.failure = message
        delay = _backoff(state.failures)
        log.error("%s: pass failed (%s); trying again in %.0f s", _name(agent), message, delay)
        self.retry_at[agent] = time.time() + delay

    def _record(self, agent: str, state: AgentState, report: Report) -> None:
        self._count(report)
        state.problems, state.warnings = report.problems, report.warnings
        waiting = report.next_retry()
        if waiting is not None:
            self.retry_at[agent] = waiting + SETTLE_MARGIN_S  # a file is still being written
        else:
            self.retry_at.pop(agent, None)

    def _count(self, report: Report) -> None:
        for event in report.events:
            self.counts[event.event] += 1
            self.last_event = LastEvent(utcnow(), event.event, event.agent, event.summary)
            if event.commit is not None:
                self.syncer.after_commit()  # push soon (when git.remote is set)

    # --- remote sync --------------------------------------------------------------------------
    def _look_after_sync(self) -> None:
        """Collect a finished sync; start one when due. Syncs run in a thread of their own: a
        slow network never holds up decisions or the watchdog (the sync takes the write lock
        only for its local steps)."""
        if self.sync_thread is not None and not self.sync_thread.is_alive():
            self.sync_thread = None
            if self.sync_result is not None:
                self._count(self.sync_result.report)
                self._write_status()
        if self.sync_thread is None and not self.stop.is_set() and self.syncer.due(time.time()):
            self.sync_thread = threading.Thread(
                target=self._sync, name="feedbackd-sync", daemon=True
            )
            self.sync_thread.start()

    def _sync(self) -> None:
        self.sync_result = None
        try:
            self.sync_result = self.syncer.sync()
        except Exception:
            log.exception("sync failed unexpectedly; trying again later")
        finally:
            self.wakeup.poke()

    def _sync_wait(self) -> float | None:
        if self.sync_thread is not None:
            return None  # it pokes the loop when done
        return self.syncer.seconds_until_due(time.time())

    # --- reporting ----------------------------------------------------------------------------
    def _pending(self) -> int:
        return sum(len([p for p in s.problems if not p.settled]) for s in self.agents.values())

    def _problems(self) -> list[str]:
        lines: list[str] = [self.config_problem] if self.config_problem else []
        for agent, state in sorted(self.agents.items()):
            lines += [problem.line() for problem in state.problems if problem.settled]
            lines += state.warnings
            if state.failure is not None:
                lines.append(f"{_name(agent)}: last pass failed: {state.failure}")
        sync_problem = problem_line(self.syncer.status())
        return lines + ([sync_problem] if sync_problem else [])

    def _announce(self) -> None:
        last = self.last_event
        text = f"last: {last.event}({last.agent}) {last.summary}" if last else "idle"
        recorded = sum(self.counts.values())
        self.notifier.status(f"{recorded} recorded; {self._pending()} pending; {text}")

    def _write_status(self) -> None:
        try:
            write_status(
                self.runtime.workspace.state_dir,
                pid=os.getpid(),
                started_at=self.started_at,
                last_event=self.last_event,
                counts=dict(self.counts),
                pending=self._pending(),
                problems=self._problems(),
            )
        except OSError as error:  # a full disk must not stop the work itself
            log.error("cannot write the status file: %s", error)


def _name(key: str) -> str:
    return "ratings" if key == RATINGS else key


def _backoff(failures: int) -> float:
    return float(min(RETRY_MAX_S, RETRY_MIN_S * 2 ** max(0, failures - 1)))
