"""The `feedbackd` command line run inside the test process, looking to a test as the real one.

Starting `python -m feedbackd` costs a few hundred milliseconds of imports before the command
does anything, and most tests of a command care about what it says and does, not about the
process. `run_cli` runs the command here instead, with what a test can give a process and see of
it: the arguments, standard input, the environment (replaced whole, as `subprocess.run(env=...)`
does), the working folder; stdout and stderr as text (what child processes write to the
inherited descriptors included), and the exit code, in a `subprocess.CompletedProcess`. A bug
that escapes the command ends it as it ends Python: its traceback on stderr, exit code 1.

What a command leaves behind in the process is put back after each run, so that every run
starts as a new process would and the test goes on in the state it had: the `feedbackd` logger
(bound to the run's stderr, and no longer passing records on) and the hook typer puts in
sys.excepthook. The global options need nothing: each run sets them all.

`run_process` is the real process, for tests where the process is the point: signals, a
terminal, start-up time, git starting the merge driver, the daemon and the server.
"""

from __future__ import annotations

import contextlib
import locale
import logging
import os
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import click
from click.testing import CliRunner

from feedbackd import launch

PROGRAM = [sys.executable, "-m", "feedbackd"]
# What click names the program started as `python -m feedbackd`, in usage lines and hints.
PROGRAM_NAME = "python -m feedbackd"
Main = Callable[[list[str]], int]


def run_cli(
    args: Sequence[str],
    *,
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """`python -m feedbackd ARGS`, run in this process."""
    return as_text(run_cli_bytes(args, stdin=stdin, env=env, cwd=cwd))


def run_cli_bytes(
    args: Sequence[str],
    *,
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """`run_cli` with stdout and stderr as the bytes written (a file name may not be UTF-8)."""
    return run_main(lambda argv: launch.main(argv, PROGRAM_NAME), args, stdin, env, cwd)


def run_process(
    args: Sequence[str],
    *,
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`python -m feedbackd ARGS` in a process of its own."""
    return subprocess.run(
        [*PROGRAM, *args],
        input=stdin,
        env=None if env is None else dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_main(
    main: Main,
    args: Sequence[str],
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """What `raise SystemExit(main(args))` as a process's main module would show a test."""
    argv = list(args)
    # click's CliRunner swaps what belongs to the process (the standard streams, os.environ;
    # with "fd", the descriptors a child such as git inherits and writes to). The command line
    # runs on the copy of click that typer carries, which this leaves as a process has it;
    # typer's own CliRunner would fix its help at 80 columns.
    runner = CliRunner(capture="fd")
    with _as_a_new_process(), contextlib.chdir(cwd) if cwd else contextlib.nullcontext():
        result = runner.invoke(
            _Program(main), argv, input=stdin, env=_changes_to(env), catch_exceptions=True
        )
    stderr = result.stderr_bytes
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        # Python's last words, written to stderr as it writes them (backslashreplace)
        lines = traceback.format_exception(result.exception)
        stderr += "".join(lines).encode("utf-8", "backslashreplace")
    return subprocess.CompletedProcess(
        [*PROGRAM, *argv], result.exit_code, result.stdout_bytes, stderr
    )


def as_text(done: subprocess.CompletedProcess[bytes]) -> subprocess.CompletedProcess[str]:
    """The outputs as `subprocess.run(text=True)` reads them."""
    return subprocess.CompletedProcess(
        done.args, done.returncode, _text(done.stdout), _text(done.stderr)
    )


class _Program(click.Command):
    """A process's `raise SystemExit(main(args))`, as CliRunner.invoke calls a click command."""

    def __init__(self, main: Main) -> None:
        super().__init__(PROGRAM_NAME)
        self._main = main

    def main(self, args: Sequence[str] | None = None, *_: Any, **__: Any) -> NoReturn:  # type: ignore[override]
        raise SystemExit(self._main(list(args or ())))


def _changes_to(env: Mapping[str, str] | None) -> dict[str, str | None]:
    """CliRunner's changes to os.environ (None removes a variable) that make it exactly `env`."""
    if env is None:
        return {}
    return {**dict.fromkeys(set(os.environ) - set(env)), **env}


def _text(data: bytes) -> str:
    """Bytes read from a process as `subprocess.run(text=True)` reads them."""
    encoding = locale.getpreferredencoding(False)
    return data.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")


@contextlib.contextmanager
def _as_a_new_process() -> Iterator[None]:
    """Start the run with the state a new process has; give the test back its own after."""
    logger = logging.getLogger("feedbackd")
    kept = (logger.handlers[:], logger.level, logger.propagate, sys.excepthook)
    logger.handlers.clear()
    # A new process's `feedbackd` logger has no handler and passes records to a root logger
    # with none either; logging's last resort then writes warnings to stderr. Not passing them
    # to pytest's handlers on the root logger comes to the same.
    logger.setLevel(logging.WARNING)
    logger.propagate = False
    try:
        yield
    finally:
        for handler in logger.handlers:
            handler.close()
        logger.handlers[:], level, logger.propagate, sys.excepthook = kept
        logger.setLevel(level)  # (which also forgets the levels the logger has looked up)
