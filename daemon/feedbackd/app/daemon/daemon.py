"""The long-running daemon: a start-up pass, then file events that say what the next pass looks at.

Events are only hints; every pass is the same reconcile as `run --once`, one agent at a time
under the workspace write lock, so a CLI command can slip in between agents and one broken agent
never holds up the others. The main thread does all the work, in the shape of a supervisor's
loop: start up, then one step for each wake-up (look after the helper threads, wait, reload,
pass), then shut down. A watcher thread only hands over batches (app/daemon/watching.py), and a
sync thread pulls and pushes when `git.remote` is set (app/daemon/syncthread.py), so a slow
network never holds up a decision. Both, and the signal handlers, wake the main thread through a
self-pipe (app/daemon/wakeup.py), so every wait ends the moment there is work and a stop request
is seen at once. Timers (files still settling and retries after failures in
app/daemon/agentstates.py, the full pass and the watchdog in app/daemon/timers.py, the next sync, a
watcher restart) are the wait's timeout.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType

from feedbackd.app.commits.ledgers import CommittedLedgers
from feedbackd.app.commits.locking import clean_leftovers, clear_stale_git_locks, write_lock
from feedbackd.app.curation.draftmemory import DraftAdds
from feedbackd.app.curation.webhousequeue import queue_file, with_queue_agents
from feedbackd.app.daemon.agentstates import (
    EVERY_AGENT,
    GIT_INDEX,
    RATINGS,
    RETRY_MAX_S,
    AgentStates,
    name_of,
)
from feedbackd.app.daemon.eventcounts import EventCounts
from feedbackd.app.daemon.health import RepositoryHealth
from feedbackd.app.daemon.indexheal import IndexHealer
from feedbackd.app.daemon.statusfile import PassProgress, PassTimes, write_status
from feedbackd.app.daemon.syncthread import SyncThread
from feedbackd.app.daemon.timers import CatchUp, FullPassClock, Heartbeat
from feedbackd.app.daemon.wakeup import Wakeup, signals_handled
from feedbackd.app.daemon.watching import WatcherKeeper
from feedbackd.app.reconcile import (
    Lookups,
    reconcile_all,
    reconcile_ratings,
    shared_lookups,
)
from feedbackd.app.remotesync import Syncer, problem_line
from feedbackd.app.report import Report
from feedbackd.app.workspace.configfile import SettingsFile
from feedbackd.app.workspace.problems import out_of_space
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.errors import FeedbackdError, KeptChanging, RepositoryDamaged
from feedbackd.edges.allocator import release_free_memory
from feedbackd.edges.clock import utcnow
from feedbackd.edges.files import agent_ids
from feedbackd.edges.instance import InstanceLock, writers_waiting
from feedbackd.edges.notify import Notifier
from feedbackd.edges.watcher import Changes

log = logging.getLogger("feedbackd")

# Wake up now and then even when nothing happens, to look after the watcher thread.
# What the daemon remembers of committed files is written for the next process at most this
# often (a burst's decisions change it at every one; a lost write only costs questions to git).
SAVE_LEDGERS_S = 5.0
SYNC_GRACE_S = 10.0  # at shutdown, how long a sync in flight may take to finish
WRITERS_FIRST_MAX_S = 10.0  # how long a pass gives way to commands waiting for the lock
STATUS_EVERY_S = 1.0  # during a burst, how often the status file shows how far it got
SETTINGS_LOOK_S = 1.0  # how soon an edited feedbackd.yaml is picked up
PASS_INDEX_WAIT_S = 2.0  # how long a pass waits for a git command holding the index lock


@dataclass
class NextPass:
    """What the next pass must look at."""

    agents: set[str] = field(default_factory=set)
    everything: bool = False
    inbox: bool = False  # the rating inbox (and interrupted rating commits)

    def add(self, changes: Changes) -> None:
        self.everything |= changes.everything
        self.inbox |= changes.inbox or changes.everything
        self.agents |= changes.agents

    def mark(self, key: str) -> None:
        """A key of the agents' states whose time to look again has come."""
        if key == EVERY_AGENT:
            self.everything = True
        elif key == RATINGS:
            self.inbox = True
        else:
            self.agents.add(key)

    def take(self) -> tuple[bool, bool, set[str]]:
        taken = (self.everything, self.inbox or self.everything, self.agents)
        self.everything, self.inbox, self.agents = False, False, set()
        return taken

    def __bool__(self) -> bool:
        return self.everything or self.inbox or bool(self.agents)


class WritersFirst:
    """keep_going for one pass under the write lock: False once a command waits for the lock,
    which then goes first after the decision (or inbox file) in hand, or once the daemon is
    stopping. `gave_way` says the pass stopped for a command: it goes on right after it."""

    def __init__(self, state_dir: Path, keep_going: Callable[[], bool]) -> None:
        self.state_dir = state_dir
        self.keep_going = keep_going
        self.gave_way = False

    def __call__(self) -> bool:
        if writers_waiting(self.state_dir):
            self.gave_way = True
            return False
        return self.keep_going()


class Daemon:
    """`feedbackd run`: one daemon per workspace, reconciling whatever its watcher points at."""

    def __init__(self, runtime: Runtime, notifier: Notifier | None = None) -> None:
        # A pass waits only briefly for a git command holding the index lock (a commit waiting
        # for its editor): it is tried again with backoff, `status` shows why meanwhile, and
        # the write lock is free for the commands and the web server between the tries.
        self.runtime = replace(runtime, index_wait_s=min(runtime.index_wait_s, PASS_INDEX_WAIT_S))
        self.notifier = notifier or Notifier()
        self.stop = threading.Event()
        self.stop_signal = 0
        self.reload_requested = False
        self.settings_file = SettingsFile(_settings_path(runtime))
        self.config_problem: str | None = None  # a reload refused: the old settings stand
        self.wakeup = Wakeup()
        self.watching = WatcherKeeper(self.wakeup)
        self.next_pass = NextPass(everything=True)
        self.started_at = utcnow()
        self.starting = True  # until the start-up pass is over (READY=1)
        self.event_counts = EventCounts()  # what the workspace recorded since the start, by anyone
        self.pass_times = PassTimes()
        self.progress: PassProgress | None = None  # the decisions of the agent pass running now
        self.status_written_at = 0.0
        self.agent_states = AgentStates()
        self.index = IndexHealer(self.agent_states)  # an index behind the commits (a full disk)
        self.full_pass = FullPassClock()
        self.heartbeat = Heartbeat(self.notifier)
        self.syncer = Syncer(runtime)
        self.sync = SyncThread(self.syncer, self.wakeup)
        # the files this daemon committed or git vouched for (and the last process left)
        self.ledgers = CommittedLedgers.kept_in(runtime.workspace.state_dir)
        self.draft_adds = DraftAdds(runtime)  # the drafts' commits, kept from pass to pass
        self.health = RepositoryHealth()
        self.catch_up: CatchUp | None = None
        self.memory_to_release = False  # a pass ran since freed memory was last given back
        self.exit_code = 0

    # --- life cycle -----------------------------------------------------------------------------
    def run(self) -> int:
        """Serve until SIGTERM or SIGINT; 0 on a clean stop. Raises Locked for a second daemon."""
        state_dir = self.runtime.workspace.state_dir
        state_dir.mkdir(parents=True, exist_ok=True)
        handlers = {
            signal.SIGTERM: self._on_stop,
            signal.SIGINT: self._on_stop,
            signal.SIGHUP: self._on_reload,
        }
        try:
            with InstanceLock(state_dir) as self.instance, signals_handled(handlers, self.wakeup):
                return self._serve()
        finally:
            self.wakeup.close()

    def _serve(self) -> int:
        """The loop template: start up, one step for each wake-up until asked to stop, shut down."""
        self._start_up()
        while not self.stop.is_set():
            self._step()
        self._shut_down()
        return self.exit_code

    def _start_up(self) -> None:
        log.info("feedbackd %d started in %s", os.getpid(), self.runtime.workspace.root)
        self.catch_up = CatchUp(self.notifier)
        self.event_counts.start(self.runtime)
        self._write_status()  # `status` says "starting" from now on, not the last daemon's state
        self._clean_up_after_a_crash()
        self._pass()
        while self.next_pass and not self.stop.is_set():
            self._pass()  # what the first pass left to a command that went first
        self.catch_up = None  # only the start-up pass keeps systemd waiting
        self.starting = False
        self._write_status()
        if not self.stop.is_set():
            self.notifier.ready()  # after the start-up pass: everything pending is recorded
            log.info("ready; watching %s", self.runtime.workspace.data)

    def _step(self) -> None:
        self._look_after_watcher()
        self._look_after_sync()
        self._wait_for_work()
        if self.reload_requested:
            self._reload()
        if self.next_pass and not self.stop.is_set():
            self._pass()
        if self.index.due and not self.stop.is_set():
            self.index.heal(self.runtime)
            self._write_status()

    def _clean_up_after_a_crash(self) -> None:
        """Temporary files, stale git locks, a lagging index: what a killed writer left."""
        try:
            with write_lock(self.runtime):
                clean_leftovers(self.runtime)
        except (FeedbackdError, OSError) as error:  # the passes report what still stands
            log.error("could not clean up after an earlier crash: %s", error)

    def _shut_down(self) -> None:
        self.notifier.stopping()
        name = signal.Signals(self.stop_signal).name if self.stop_signal else "a request"
        log.info("feedbackd stopping on %s", name)
        self.watching.close()
        self.sync.join(SYNC_GRACE_S)
        self._write_status()

    # Signal handlers run in the main thread between two statements of a pass: they only set
    # flags (Event.set takes a lock the main thread never holds), and the pass checks them.
    def _on_stop(self, signum: int, frame: FrameType | None) -> None:
        self.stop_signal = signum
        self.stop.set()

    def _on_reload(self, signum: int, frame: FrameType | None) -> None:
        self.reload_requested = True

    def _reload(self) -> None:
        self.reload_requested = False
        self.health.look_now()  # a repository repaired: recording resumes without a restart
        self.notifier.reloading()
        old_data, old_queue = self.runtime.workspace.data, queue_file(self.runtime)
        try:
            self.runtime = self.runtime.reload()
        except FeedbackdError as error:
            log.error("configuration not reloaded, keeping the old one: %s", error)
            self.config_problem = f"configuration not reloaded, the old one stands: {error}"
            self._write_status()
        else:
            log.info("configuration reloaded")
            self.settings_file = SettingsFile(_settings_path(self.runtime))
            self.config_problem = None
            self.syncer.runtime = self.runtime  # read when the next sync starts
            self.draft_adds = DraftAdds(self.runtime)  # the data folder may have moved
            self.next_pass.everything = True  # settings change what a snippet says
            if (self.runtime.workspace.data, queue_file(self.runtime)) != (old_data, old_queue):
                self.watching.close()  # watch the new data folder (or queue file) instead
        self.notifier.ready()

    # --- waiting ------------------------------------------------------------------------------
    def _look_after_watcher(self) -> None:
        debounce_ms = self.runtime.settings.daemon.debounce_ms
        shared = queue_file(self.runtime)
        self.watching.look_after(self.runtime.workspace.data, debounce_ms, shared)

    def _wait_for_work(self) -> None:
        if not self.watching.has_batches():
            timeout = self._next_timeout()
            if timeout > 0 and self.memory_to_release:
                # Going idle after passes: what they freed goes back to the system, once.
                release_free_memory()
                self.memory_to_release = False
            self.wakeup.wait(timeout)
        for changes in self.watching.drain():
            self.next_pass.add(changes)
        if self.settings_file.changed():
            log.info("%s changed; reloading the configuration", self.settings_file.path.name)
            self.reload_requested = True
        self._due_timers()
        self.heartbeat.beat()
        self._keep_instance_lock()

    def _keep_instance_lock(self) -> None:
        try:
            self.instance.renew()
        except FeedbackdError as error:  # another daemon took the workspace over: let it
            log.error("stopping: the instance lock was lost: %s", error)
            self.exit_code = 1
            self.stop.set()

    def _next_timeout(self) -> float:
        if self.next_pass or self.reload_requested or self.index.due:
            return 0.0
        now_wall, now = time.time(), time.monotonic()
        waits = [
            SETTINGS_LOOK_S,
            self.full_pass.seconds_until_due(now),
            self.agent_states.seconds_until_due(now_wall),
            self.heartbeat.seconds_until_due(now),
            self.watching.seconds_until_restart(now),
            self.sync.seconds_until_due(now_wall) if self.health.damage is None else None,
            self.health.seconds_until_check(now),
        ]
        return max(0.01, min(wait for wait in waits if wait is not None))

    def _due_timers(self) -> None:
        for key in self.agent_states.take_due(time.time()):
            if key == GIT_INDEX:
                self.index.due = True
            else:
                self.next_pass.mark(key)
        if self.full_pass.due():
            self.next_pass.everything = True
        if self.health.damage is not None and self.health.whole_again(self.runtime):
            self.next_pass.everything = True  # what waited while nothing was recorded

    def _keep_going(self) -> bool:
        self.heartbeat.beat()
        return not self.stop.is_set()

    # --- passes -------------------------------------------------------------------------------
    def _pass(self) -> None:
        started = time.monotonic()
        self.memory_to_release = True
        everything, inbox, agents = self.next_pass.take()
        if self.health.damage is not None:
            return  # nothing is recorded on a damaged history; a full pass follows its repair
        if everything:
            self.full_pass.started()
            chosen = self._agents_on_disk()
        else:
            chosen = sorted(agents)
        if inbox and self._keep_going():
            writers_first = WritersFirst(self.runtime.workspace.state_dir, self._keep_going)
            self._reconcile(RATINGS, lambda: reconcile_ratings(self.runtime, writers_first))
            self._after(RATINGS, writers_first)
        lookups = shared_lookups(self.runtime, chosen, everything, self.draft_adds)
        for done, agent in enumerate(chosen, start=1):
            if not self._keep_going() or self.health.damage is not None:
                break
            self._pass_agent(agent, lookups)
            if self.catch_up is not None:
                self.catch_up.progress(done, len(chosen))
        self.pass_times.add(time.monotonic() - started)
        self.index.after_pass(self.runtime)
        self.ledgers.save(at_most_every_s=SAVE_LEDGERS_S)  # for the next process (a restart)
        self._write_status()
        self._announce()

    def _agents_on_disk(self) -> list[str]:
        try:
            found = with_queue_agents(self.runtime, agent_ids(self.runtime.workspace))
        except OSError as error:
            log.error("cannot list %s: %s", self.runtime.workspace.agents_dir, error)
            self.agent_states.look_again_in(EVERY_AGENT, RETRY_MAX_S)
            return self.agent_states.known_agents()
        self.agent_states.keep_only(found)
        return found

    def _pass_agent(self, agent: str, lookups: Lookups) -> None:
        if not self.runtime.workspace.agent(agent).root.is_dir():
            self.agent_states.forget(agent)  # moved away or removed: nothing left to report
            return
        writers_first = WritersFirst(self.runtime.workspace.state_dir, self._keep_going)
        self._reconcile(
            agent,
            lambda: reconcile_all(
                self.runtime,
                [agent],
                keep_going=writers_first,
                ledgers=self.ledgers,
                lookups=lookups,
                on_decision=self._decided_one,
            ),
        )
        self.progress = None
        self._after(agent, writers_first)

    def _after(self, key: str, writers_first: WritersFirst) -> None:
        """A pass that gave way lets the waiting commands go, then goes on where it stopped."""
        if writers_first.gave_way and not self.stop.is_set():
            self._let_writers_go_first()
            self.next_pass.mark(key)

    def _decided_one(self, agent: str, done: int, total: int) -> None:
        """A burst of decisions shows in `status` as it goes, not only once it is over."""
        self.progress = PassProgress(agent, done, total) if done < total else None
        if time.monotonic() - self.status_written_at >= STATUS_EVERY_S:
            self._write_status()

    def _let_writers_go_first(self) -> None:
        """Wait (a few seconds at most) until no command waits for the write lock any more."""
        deadline = time.monotonic() + WRITERS_FIRST_MAX_S
        state_dir = self.runtime.workspace.state_dir
        while writers_waiting(state_dir) and time.monotonic() < deadline:
            if self.stop.wait(0.01):
                return
            self.heartbeat.beat()

    def _reconcile(self, key: str, work: Callable[[], Report]) -> None:
        """One agent (or the ratings) under the write lock; a failure is retried with backoff."""
        state = self.agent_states.state(key)
        try:
            with write_lock(self.runtime):
                if state.failures and self.runtime.git_enabled:
                    clear_stale_git_locks(self.runtime)  # left by a git that was killed?
                report = work()
        except FeedbackdError as error:
            if isinstance(error, RepositoryDamaged):
                self.health.damaged(error.message)  # nothing more is recorded until repaired
            fault = not isinstance(error, KeptChanging)
            self.agent_states.failed(key, str(error), disk_full=out_of_space(error), fault=fault)
            return
        except OSError as error:  # feedbackd's own state (the write lock) on a full disk
            where = f"{error.filename}: " if error.filename else ""
            self.agent_states.failed(
                key, f"{where}{error.strerror or error}", disk_full=out_of_space(error)
            )
            return
        except Exception as error:  # a bug must not take the daemon (and every agent) down
            log.exception("internal error while reconciling %s", name_of(key))
            self.agent_states.failed(key, f"internal error: {error!r}")
            return
        self._count(report)
        self.agent_states.passed(key, report)

    def _count(self, report: Report) -> None:
        self.event_counts.add_own(report.events, utcnow())
        if any(event.commit is not None for event in report.events):
            self.syncer.after_commit()  # push soon (when git.remote is set)

    # --- remote sync --------------------------------------------------------------------------
    def _look_after_sync(self) -> None:
        """Count what a finished sync did; start the next one when due."""
        finished = self.sync.collect()
        if finished is not None:
            self._count(finished.report)
            self._write_status()
        if not self.stop.is_set() and self.health.damage is None:  # no pushing the damage on
            self.sync.start_if_due()

    # --- reporting ----------------------------------------------------------------------------
    def _problems(self) -> list[str]:
        lines = [line for line in (self.health.problem_line(), self.config_problem) if line]
        lines += self.agent_states.problem_lines()
        sync_problem = problem_line(self.syncer.status())
        return lines + ([sync_problem] if sync_problem else [])

    def _announce(self) -> None:
        last = self.event_counts.last
        text = f"last: {last.event}({last.agent}) {last.summary}" if last else "idle"
        recorded = sum(self.event_counts.counts.values())
        self.notifier.status(f"{recorded} recorded; {self.agent_states.pending()} pending; {text}")

    def _write_status(self) -> None:
        self.status_written_at = time.monotonic()
        to_do = self.progress.total - self.progress.done if self.progress is not None else 0
        self.event_counts.catch_up(self.runtime)
        try:
            write_status(
                self.runtime.workspace.state_dir,
                pid=os.getpid(),
                started_at=self.started_at,
                starting=self.starting,
                last_event=self.event_counts.last,
                counts=dict(self.event_counts.counts),
                pending=self.agent_states.pending() + to_do,
                problems=self._problems(),
                passes=self.pass_times,
                progress=self.progress,
            )
        except OSError as error:  # a full disk must not stop the work itself
            log.error("cannot write the status file: %s", error)


def _settings_path(runtime: Runtime) -> Path:
    """The configuration file in use, or the workspace's feedbackd.yaml that would be."""
    return runtime.config_file or runtime.workspace.root / "feedbackd.yaml"
