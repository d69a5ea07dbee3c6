"""The daemon's parts on their own: signal handlers installed and put back, the wake-up pipe.
tests/test_daemon.py runs the whole daemon."""

from __future__ import annotations

import os
import select
import signal
import time
from types import FrameType

import pytest

from feedbackd.loop.wakeup import Wakeup, signals_handled


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
