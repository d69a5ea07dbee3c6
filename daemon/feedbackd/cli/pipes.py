"""Standard output whose reader has gone: `feedbackd export ... | head -1`.

`head` closes the pipe once it has its line, and the next write fails with EPIPE. That is no
error of the command: it stops where it is, quietly (no traceback, no error line), with the exit
status a shell reports for a command that SIGPIPE stopped, as `seq 1 100000 | head -1` does.
Python ignores SIGPIPE, so the write raises BrokenPipeError instead of ending the process; only
one on standard output is the reader's doing (a pipe to a child, such as git, that died is not).
"""

from __future__ import annotations

import contextlib
import os
import select
import sys

# 128 + SIGPIPE: what a shell shows for a command stopped by its reader (`set -o pipefail`).
READER_GONE_EXIT = 141


def reader_gone(error: BaseException) -> bool:
    """True when `error` is a write that failed because standard output's reader has gone."""
    return isinstance(error, BrokenPipeError) and stdout_has_no_reader()


def stdout_has_no_reader() -> bool:
    """True when standard output is a pipe whose reader has gone. click and rich meet a broken
    pipe themselves (printing help, a table) and exit 1 quietly: this tells that exit apart."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by something that is not a file
        return False
    poller = select.poll()
    poller.register(descriptor, 0)  # POLLERR is always reported: a pipe with no reader left
    return any(events & select.POLLERR for _, events in poller.poll(0))


def stop_writing() -> None:
    """Send whatever standard output still holds to /dev/null: Python flushes it at exit, and a
    second BrokenPipeError there would print "Exception ignored" on stderr."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
