"""Outside processes: every command feedbackd starts (git, pricing.sync_command, the optimizer
command) runs through run_process, with no shell and, where a command may hang, a deadline after
which it is stopped together with its children.

run_command is the text face of the same runner, for the user's own commands.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("feedbackd")


@dataclass(frozen=True)
class ProcessResult:
    """How a process ended: `reason` is empty when it exited with status 0.

    `status` is its exit status (negative: the signal that ended it), or None when it could not
    start or was stopped at its deadline (`timed_out`); its output is kept in every other case.
    """

    reason: str
    status: int | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return not self.reason


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    timeout: float | None = None,
) -> ProcessResult:
    """Run argv (no shell) in `cwd`, with `env` added to this process's environment.

    With a timeout the process gets its own process group, and at the deadline that whole group
    is killed (a `git fetch` and its ssh, a script and what it started). Without one it stays
    in ours, so that a signal to this process group reaches it too. Never raises for the
    command's own failures: they come back as a reason.
    """
    try:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env={**os.environ, **(env or {})},
            start_new_session=timeout is not None,
        )
    except OSError as exc:
        return ProcessResult(_start_failure(argv[0], exc))
    try:
        out, err = process.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(process)
        return ProcessResult(f"timed out after {timeout:g}s", timed_out=True)
    code = process.returncode
    return ProcessResult(_exit_reason(code) if code else "", code, out, err)


@dataclass(frozen=True)
class CommandResult:
    """How an external command ended: `reason` is empty when it succeeded."""

    reason: str
    stdout: str = ""
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return not self.reason


def run_command(
    argv: Sequence[str], *, stdin: str, timeout: float, cwd: Path, env: Mapping[str, str]
) -> CommandResult:
    """Run argv (no shell) with a deadline, text in and out; never raises for its failures."""
    done = run_process(argv, cwd=cwd, env=env, stdin=stdin.encode("utf-8"), timeout=timeout)
    return CommandResult(done.reason, _decode(done.stdout), _decode(done.stderr))


def _start_failure(program: str, exc: OSError) -> str:
    reason = f"cannot start {program!r}: {exc.strerror or exc}"
    if exc.filename is not None and os.fsdecode(exc.filename) != program:
        reason += f" ({os.fsdecode(exc.filename)})"  # the folder to run it in, say
    return reason


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Kill the process group of a timed-out process and collect what is left of it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    try:
        process.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        # A child that left the group still holds the output pipes: stop reading them.
        log.warning("a stopped command (pid %d) still holds its output open", process.pid)
        process.wait()
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


def _exit_reason(code: int) -> str:
    if code < 0:
        return f"killed by signal {-code}"
    return f"exit status {code}"


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
