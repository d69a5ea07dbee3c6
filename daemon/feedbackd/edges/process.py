"""Outside processes: every command feedbackd starts (pricing.sync_command, the optimizer
command) runs through run_command, with no shell, a deadline, and its own process group so that a
time-out stops its children too.
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
    """Run argv (no shell) with a deadline; never raises for the command's own failures."""
    try:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env={**os.environ, **env},
            start_new_session=True,  # its own process group: a time-out stops its children too
        )
    except OSError as exc:
        return CommandResult(f"cannot start {argv[0]!r}: {exc.strerror or exc}")
    try:
        out, err = process.communicate(stdin.encode("utf-8"), timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(process)
        return CommandResult(f"timed out after {timeout:g}s")
    stdout, stderr = _decode(out), _decode(err)
    if process.returncode != 0:
        return CommandResult(_exit_reason(process.returncode), stdout, stderr)
    return CommandResult("", stdout, stderr)


def _stop(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    try:
        process.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        log.warning("a stopped command (pid %d) still holds its output open", process.pid)


def _exit_reason(code: int) -> str:
    if code < 0:
        return f"killed by signal {-code}"
    return f"exit status {code}"


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
