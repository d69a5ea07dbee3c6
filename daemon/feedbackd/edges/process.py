"""Outside processes: every command feedbackd starts (git, pricing.sync_command, the optimizer
command) runs through run_process, with no shell and, where a command may hang, a deadline after
which it is stopped together with its children.

run_command is the text face of the same runner, for the user's own commands; StartedProcess
runs one while this process goes on, to be waited for later. Coprocess is a
long-lived helper spoken to over its standard input and output (`git cat-file --batch`), each
answer awaited with a deadline.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, NoReturn

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
        process = _started(argv, cwd, env, stdin=stdin is not None, session=timeout is not None)
    except OSError as exc:
        return ProcessResult(_start_failure(argv[0], exc))
    try:
        out, err = process.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(process)
        return ProcessResult(f"timed out after {timeout:g}s", timed_out=True)
    code = process.returncode
    return ProcessResult(_exit_reason(code) if code else "", code, out, err)


class StartedProcess:
    """A short command started now and waited for later (finish), so that this process works
    on meanwhile; no shell, no input, no deadline. One that could not start finishes at once
    with the reason."""

    def __init__(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> None:
        self._failure = ""
        try:
            # Its own session: a Ctrl-C meant for feedbackd does not cut it off half-way;
            # feedbackd waits for it as it stops.
            self._process: subprocess.Popen[bytes] | None = _started(argv, cwd, env, session=True)
        except OSError as exc:
            self._process, self._failure = None, _start_failure(argv[0], exc)

    def finish(self, timeout: float | None = None) -> ProcessResult:
        """Wait for the process to end, and read its output (a process that writes more than
        a pipe holds waits until then); at `timeout`, it and its group are killed."""
        if self._process is None:
            return ProcessResult(self._failure)
        try:
            out, err = self._process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(self._process)
            return ProcessResult(f"timed out after {timeout:g}s", timed_out=True)
        code = self._process.returncode
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


def _started(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str] | None,
    *,
    stdin: bool = False,
    session: bool = False,
) -> subprocess.Popen[bytes]:
    """argv started with no shell, its output piped, its input piped (`stdin`) or empty, in a
    session of its own (`session`) or in ours; OSError when it cannot start."""
    return subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        start_new_session=session,
    )


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


class CoprocessGone(Exception):
    """A coprocess exited, stopped answering before its deadline, or could not start."""


class Coprocess:
    """A long-lived process answering requests on its stdout, one after another.

    Reads and writes never block past the deadline given: a helper that hangs is killed and
    CoprocessGone raised, and the caller starts a new one. What the process says on stderr is
    kept (its last few KiB) to explain why it went away.
    """

    def __init__(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> None:
        try:
            self._process = _started(argv, cwd, env, stdin=True)
        except OSError as exc:
            raise CoprocessGone(_start_failure(argv[0], exc)) from exc
        self._name = " ".join(argv[:2])
        self._buffer = bytearray()
        self._stderr = bytearray()
        self._closed = False
        self._readable = select.poll()  # (a poll object holds no file descriptor of its own)
        for pipe in (self._process.stdin, self._process.stdout, self._process.stderr):
            assert pipe is not None
            os.set_blocking(pipe.fileno(), False)
        self._readable.register(self._out.fileno(), select.POLLIN)
        self._readable.register(self._err.fileno(), select.POLLIN)

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def send(self, data: bytes, timeout: float) -> None:
        """Write all of `data` to the process's stdin, reading its answers meanwhile."""
        deadline = time.monotonic() + timeout
        view = memoryview(data)
        stdin = self._process.stdin
        assert stdin is not None
        writable = select.poll()
        writable.register(stdin.fileno(), select.POLLOUT)
        while view:
            if not writable.poll(self._left_ms(deadline)):
                self._give_up(f"did not take its input within {timeout:g}s")
            try:
                written = os.write(stdin.fileno(), view)
            except BrokenPipeError:
                self._give_up("exited")
            view = view[written:]

    def read_line(self, timeout: float) -> bytes:
        """The next line of output, without its newline."""
        deadline = time.monotonic() + timeout
        while (end := self._buffer.find(b"\n")) < 0:
            self._fill(deadline)
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        return line

    def read_exact(self, size: int, timeout: float) -> bytes:
        """The next `size` bytes of output."""
        deadline = time.monotonic() + timeout
        while len(self._buffer) < size:
            self._fill(deadline)
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    def end_input(self) -> None:
        """Close the process's input, and go on reading its output: a process that buffers
        its answers writes out the last of them once its input ends."""
        stdin = self._process.stdin
        if stdin is not None:
            stdin.close()

    def close(self) -> None:
        """End the process: close its input (it exits on end of input), kill it if it lingers."""
        if self._closed:
            return
        self._closed = True
        for pipe in (self._process.stdin, self._process.stdout, self._process.stderr):
            if pipe is not None:
                pipe.close()
        try:
            self._process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    @property
    def _out(self) -> IO[bytes]:
        assert self._process.stdout is not None
        return self._process.stdout

    @property
    def _err(self) -> IO[bytes]:
        assert self._process.stderr is not None
        return self._process.stderr

    def _fill(self, deadline: float) -> None:
        """Read what the process has written so far; CoprocessGone at the deadline or its end."""
        events = self._readable.poll(self._left_ms(deadline))
        if not events:
            self._give_up("did not answer in time")
        for fd, _ in events:
            chunk = os.read(fd, 65536)
            if fd == self._err.fileno():
                self._stderr = (self._stderr + chunk)[-4096:]
            elif chunk:
                self._buffer += chunk
            else:
                self._give_up("exited")

    def _left_ms(self, deadline: float) -> int:
        return max(0, round((deadline - time.monotonic()) * 1000))

    def _give_up(self, what: str) -> NoReturn:
        with contextlib.suppress(OSError):  # what it said last, if it said it before going
            while chunk := os.read(self._err.fileno(), 65536):
                self._stderr = (self._stderr + chunk)[-4096:]
        self.close()
        said = self._stderr.decode("utf-8", errors="replace").strip().splitlines()
        reason = f"{self._name} {what}" + (f": {said[-1]}" if said else "")
        raise CoprocessGone(reason)


def pid_alive(pid: int) -> bool:
    """True when a process with this pid exists (even one owned by another user)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
