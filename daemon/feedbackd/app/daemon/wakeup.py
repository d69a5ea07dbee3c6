"""How the daemon's main thread is woken: a self-pipe that any thread or a signal pokes, and the
signal handlers a run installs (and restores afterwards).

The main loop waits in select() on the pipe, so every wait ends the moment there is something to
do. The pipe is also the interpreter's signal wake-up fd: a signal delivered to any thread writes
to it at once, and the Python handler, which only sets flags, runs as soon as select() returns.
No lock is ever taken inside a signal handler.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
from collections.abc import Callable, Iterator, Mapping
from types import FrameType

Handler = Callable[[int, FrameType | None], None]


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


@contextlib.contextmanager
def signals_handled(handlers: Mapping[signal.Signals, Handler], wakeup: Wakeup) -> Iterator[None]:
    """Install handlers and make signals poke wakeup; put back what was there before on exit."""
    previous = {number: signal.signal(number, handler) for number, handler in handlers.items()}
    # The interpreter writes to this fd the moment a signal arrives, in whichever thread, so the
    # main loop's select() returns and the Python handler runs without delay.
    previous_fd = signal.set_wakeup_fd(wakeup.write_fd, warn_on_full_buffer=False)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        signal.set_wakeup_fd(previous_fd)
