"""The daemon's parts on their own: signal handlers installed and put back, the agents' states,
backoff and retries, what the next pass looks at, the timers, one pass in this process.
tests/system/test_daemon.py runs the whole daemon."""

from __future__ import annotations

import logging
import os
import select
import signal
import socket
import time
from pathlib import Path
from types import FrameType

import pytest

from feedbackd.app.daemon import daemon as daemon_module
from feedbackd.app.daemon.agentstates import EVERY_AGENT, RATINGS, AgentStates, backoff
from feedbackd.app.daemon.daemon import Daemon, NextPass
from feedbackd.app.daemon.timers import CatchUp, Heartbeat
from feedbackd.app.daemon.wakeup import Wakeup, signals_handled
from feedbackd.app.report import Report
from feedbackd.app.workspace.problems import Problem
from feedbackd.core.workspacepaths import Workspace
from feedbackd.edges.notify import Notifier
from feedbackd.edges.watcher import Changes
from tests.workspace_kit import Site, draft


# --- signals and the wake-up pipe -----------------------------------------------------------
def test_signal_handlers_are_installed_for_the_run_and_put_back_after() -> None:
    heard: list[int] = []

    def on_hangup(signum: int, frame: FrameType | None) -> None:
        heard.append(signum)

    before = signal.getsignal(signal.SIGHUP)
    wakeup = Wakeup()
    try:
        with signals_handled({signal.SIGHUP: on_hangup}, wakeup):
            os.kill(os.getpid(), signal.SIGHUP)
            readable, _, _ = select.select([wakeup.read_fd], [], [], 5)
            assert readable, "the signal did not poke the wake-up pipe"
            assert heard == [signal.SIGHUP]
        assert signal.getsignal(signal.SIGHUP) == before
        assert signal.set_wakeup_fd(-1) == -1  # the interpreter's wake-up fd was put back too
    finally:
        wakeup.close()


def test_handlers_are_put_back_when_the_run_fails() -> None:
    before = signal.getsignal(signal.SIGTERM)
    wakeup = Wakeup()
    try:
        with (
            pytest.raises(RuntimeError),
            signals_handled({signal.SIGTERM: lambda *_: None}, wakeup),
        ):
            raise RuntimeError("a bug in the loop")
        assert signal.getsignal(signal.SIGTERM) == before
    finally:
        wakeup.close()


def test_a_poke_ends_the_wait_at_once_and_a_full_pipe_loses_nothing() -> None:
    wakeup = Wakeup()
    try:
        for _ in range(100_000):  # far more than a pipe holds
            wakeup.poke()
        started = time.monotonic()
        wakeup.wait(5)
        assert time.monotonic() - started < 1
        started = time.monotonic()
        wakeup.wait(0.05)  # drained: now it waits out its timeout
        assert time.monotonic() - started >= 0.04
    finally:
        wakeup.close()


# --- the agents' states -----------------------------------------------------------------------
def test_failures_back_off_exponentially_up_to_a_minute() -> None:
    assert [backoff(n) for n in range(1, 9)] == [1, 2, 4, 8, 16, 32, 60, 60]
    states = AgentStates()
    for _ in range(3):
        states.failed("writer", "git said no")
    assert states.state("writer").failures == 3
    assert states.retry_at["writer"] == pytest.approx(time.time() + 4, abs=1)
    assert states.problem_lines() == ["writer: last pass failed: git said no"]


def test_a_pass_that_succeeds_clears_the_failure_and_the_retry() -> None:
    states = AgentStates()
    states.failed(RATINGS, "inbox unreadable")
    assert states.problem_lines() == ["ratings: last pass failed: inbox unreadable"]
    states.passed(RATINGS, Report())
    assert states.state(RATINGS).failures == 0 and RATINGS not in states.retry_at
    assert states.problem_lines() == []


def test_a_file_still_settling_is_looked_at_again_once_it_has_settled() -> None:
    states = AgentStates()
    settles_at = time.time() + 2
    draft = Problem(
        Path("queue/qi-1.json"), "not valid JSON", "", settled=False, retry_at=settles_at
    )
    states.passed("writer", Report(problems=[draft]))
    assert states.pending() == 1
    assert states.take_due(settles_at) == []
    assert states.take_due(settles_at + 0.1) == ["writer"]
    assert states.take_due(settles_at + 0.1) == []  # taken once


def test_agents_gone_from_disk_are_forgotten_but_the_ratings_are_kept() -> None:
    states = AgentStates()
    for key in ("old", "kept", RATINGS):
        states.failed(key, "x")
    states.keep_only(["kept", "new"])
    assert sorted(states.states) == sorted(["kept", RATINGS])
    assert "old" not in states.retry_at
    assert states.seconds_until_due(time.time()) == pytest.approx(1, abs=0.5)


def test_due_keys_mark_what_the_next_pass_looks_at() -> None:
    next_pass = NextPass()
    assert not next_pass
    next_pass.mark("writer")
    next_pass.mark(RATINGS)
    assert next_pass.take() == (False, True, {"writer"}) and not next_pass
    next_pass.mark(EVERY_AGENT)
    assert next_pass.take() == (True, True, set())
    next_pass.add(Changes(agents=frozenset({"a"})))
    assert next_pass.take() == (False, False, {"a"})


# --- timers ----------------------------------------------------------------------------------
class WatchedNotifier(Notifier):
    """A notifier as systemd sets it up with WatchdogSec=20: a ping every 10 s, recorded."""

    def __init__(self) -> None:
        super().__init__({})
        self.pings = 0

    def watchdog_interval(self) -> float | None:
        return 10.0

    def watchdog(self) -> None:
        self.pings += 1


def test_the_heartbeat_pings_only_when_a_watchdog_is_set_and_due() -> None:
    assert Heartbeat(Notifier({})).seconds_until_due(time.monotonic()) is None
    notifier = WatchedNotifier()
    heartbeat = Heartbeat(notifier)
    heartbeat.beat()
    heartbeat.beat()  # not due again yet
    assert notifier.pings == 1
    assert heartbeat.seconds_until_due(time.monotonic()) == pytest.approx(10, abs=1)


# --- a pass ------------------------------------------------------------------------------------
def test_a_failed_listing_of_agents_retries_the_agents_it_knows_and_not_the_ratings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = Site(tmp_path / "ws")
    site.write("writer", "qi-1.json", draft({"title": "A"}))
    daemon = Daemon(site.runtime())
    try:
        daemon._pass()  # the start-up pass: the rating inbox and the one agent
        assert sorted(daemon.agent_states.states) == sorted([RATINGS, "writer"])

        def unreadable(workspace: Workspace) -> list[str]:
            raise PermissionError(13, "Permission denied", str(workspace.agents_dir))

        monkeypatch.setattr(daemon_module, "agent_ids", unreadable)
        daemon.next_pass.everything = True
        assert daemon._agents_on_disk() == ["writer"]
        assert EVERY_AGENT in daemon.agent_states.retry_at
        daemon._pass()  # does not take ":ratings" for an agent id
    finally:
        daemon.wakeup.close()


def test_a_long_start_up_asks_systemd_for_more_time_and_says_how_far(tmp_path: Path) -> None:
    path = tmp_path / "notify.sock"
    manager = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    manager.bind(str(path))
    manager.settimeout(5)
    now = [100.0]
    catch_up = CatchUp(Notifier({"NOTIFY_SOCKET": str(path)}), clock=lambda: now[0])
    try:
        catch_up.progress(1, 20_000)  # under two seconds in: nothing said yet
        now[0] += CatchUp.REPORT_S
        catch_up.progress(1_200, 20_000)
        assert manager.recv(4096) == b"EXTEND_TIMEOUT_USEC=30000000"
        assert manager.recv(4096) == b"STATUS=catching up: 1,200 of 20,000 agents"
        catch_up.progress(1_300, 20_000)  # the same instant: not again
        now[0] += CatchUp.REPORT_S
        catch_up.progress(2_000, 20_000)
        assert manager.recv(4096) == b"EXTEND_TIMEOUT_USEC=30000000"
    finally:
        manager.close()


def test_a_pass_the_workspace_kept_changing_under_is_a_warning_not_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    states = AgentStates()
    logger = logging.getLogger("feedbackd")  # the CLI may have stopped it propagating
    logger.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.INFO, logger="feedbackd"):
            states.failed("writer", "the folder kept changing while feedbackd read it", fault=False)
            states.failed("other", "git said no")
    finally:
        logger.removeHandler(caplog.handler)
    levels = {record.getMessage().split(":")[0]: record.levelname for record in caplog.records}
    assert levels == {"writer": "WARNING", "other": "ERROR"}
    assert states.retry_at["writer"] == pytest.approx(time.time() + 1, abs=1)  # still retried
