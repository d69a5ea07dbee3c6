"""One daemon per workspace, and one writer at a time.

`InstanceLock` is held for the daemon's whole life on `.feedbackd/daemon.lock`, which records its
pid so that `status` and a second daemon can name it. `WriteLock` on `.feedbackd/write.lock` is
held only around each reconcile, by the daemon and by every CLI command that writes, so a
curator's `feedbackd approve` and the daemon never write the same files at once.

Both use flock(2): the kernel drops the lock when its holder dies, however it dies, so a
`kill -9` never leaves a stale lock behind. Lock files are never deleted (deleting one while
another process waits on it would let two holders in).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from pathlib import Path
from types import TracebackType

from feedbackd.core.errors import DiskFull, Locked, WorkspaceError
from feedbackd.edges.files import NO_SPACE
from feedbackd.edges.process import pid_alive

DAEMON_LOCK = "daemon.lock"
WRITE_LOCK = "write.lock"
WAITING = ".waiting."  # `write.lock.waiting.{pid}.{thread}`: a writer waits for the lock
# How long a second daemon keeps trying when the lock looks held by a process that is not running
# (a brief `holder_pid` probe holds it shared for a moment).
_PROBE_GRACE_S = 0.5


class InstanceLock:
    """Context manager: the lock that makes this process the workspace's one daemon."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / DAEMON_LOCK
        self._fd: int | None = None

    def __enter__(self) -> InstanceLock:
        self._fd = self._take()
        return self

    def _take(self) -> int:
        fd = _open_lock_file(self.path)
        try:
            _take_or_refuse(fd)
        except BaseException:
            os.close(fd)
            raise
        _record_pid(fd)  # closes fd itself when it fails
        return fd

    def renew(self) -> None:
        """Take the lock again when its file was deleted or replaced (say `.feedbackd/` was
        removed while the daemon ran): a lock on a deleted file keeps no second daemon out.
        Raises Locked when another daemon has taken the new file meanwhile."""
        if self._fd is None or _is_same_file(self._fd, self.path):
            return
        fd = self._take()
        os.close(self._fd)
        self._fd = fd

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._fd is None:
            return
        # Clear the pid first, so nobody reads ours after the lock is gone.
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)
        os.close(self._fd)  # closing the last descriptor releases the flock
        self._fd = None


def _is_same_file(fd: int, path: Path) -> bool:
    try:
        on_disk = os.stat(path)
    except OSError:
        return False
    held = os.fstat(fd)
    return (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino)


def holder_pid(state_dir: Path) -> int | None:
    """The pid of the live daemon holding this workspace's instance lock, else None.

    A pid whose process has died is not reported; see `daemon_running` for the lock alone.
    """
    held, pid = _probe(state_dir / DAEMON_LOCK)
    return pid if held and pid is not None and pid_alive(pid) else None


def daemon_running(state_dir: Path) -> bool:
    """True while some process holds this workspace's instance lock (even if its pid is unknown)."""
    return _probe(state_dir / DAEMON_LOCK)[0]


def _probe(path: Path) -> tuple[bool, int | None]:
    """(is the lock held, the pid written in it); takes the lock only for an instant if free."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return False, None
    try:
        if _try_flock(fd, fcntl.LOCK_SH):
            fcntl.flock(fd, fcntl.LOCK_UN)
            return False, None
        return True, _read_pid(fd)
    finally:
        os.close(fd)


class WriteLock:
    """Context manager: the short lock taken around each reconcile by the daemon and the CLI.

    Waits up to `timeout` seconds for the current writer, then raises Locked. Re-entrant within
    a thread, so code that already holds it can call code that takes it again.
    """

    _held = threading.local()

    def __init__(self, state_dir: Path, *, timeout: float = 30.0) -> None:
        self.path = state_dir / WRITE_LOCK
        self.timeout = timeout
        self._fd: int | None = None
        # The pid a writer left in the file: it died holding the lock, maybe in the middle of
        # a commit. A clean release empties the file, unless keep_mark asks to leave the pid
        # for the next writer (what the dead one left is not cleaned up yet).
        self.abandoned_by: int | None = None
        self.keep_mark = False

    def __enter__(self) -> WriteLock:
        depths: dict[Path, int] = self._depths()
        key = self.path.absolute()
        if depths.get(key, 0) == 0:
            self._fd, self.abandoned_by = _wait_for_lock(self.path, self.timeout)
        depths[key] = depths.get(key, 0) + 1
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        depths = self._depths()
        key = self.path.absolute()
        depths[key] -= 1
        if depths[key] == 0:
            del depths[key]
        if self._fd is not None:
            if not self.keep_mark:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, 0)  # released: no writer died holding it
            os.close(self._fd)
            self._fd = None

    @classmethod
    def _depths(cls) -> dict[Path, int]:
        if not hasattr(cls._held, "depths"):
            cls._held.depths = {}
        depths: dict[Path, int] = cls._held.depths
        return depths


def _wait_for_lock(path: Path, timeout: float) -> tuple[int, int | None]:
    """Open and flock path, retrying with backoff until timeout; the pid goes into the file.
    Returns the descriptor and the pid found in the file (a holder that died holding it).

    While it waits, a marker beside the lock says a writer is waiting: the daemon, between two
    decisions, lets it go first (writers_waiting)."""
    fd = _open_lock_file(path)
    if _try_flock(fd, fcntl.LOCK_EX):
        left = _read_pid(fd)
        _record_pid(fd)
        return fd, left
    marker = path.with_name(f"{path.name}{WAITING}{os.getpid()}.{threading.get_ident()}")
    try:
        marker.touch()
        _wait_for_flock(fd, path, timeout)
    finally:
        with contextlib.suppress(OSError):
            marker.unlink()
    left = _read_pid(fd)
    _record_pid(fd)
    return fd, left


def _wait_for_flock(fd: int, path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    pause = 0.005
    while not _try_flock(fd, fcntl.LOCK_EX):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            holder = _read_pid(fd)
            os.close(fd)
            raise _busy_error(timeout, holder)
        # flock(2) has no timeout of its own; short naps keep the wait cheap and responsive.
        time.sleep(min(pause, remaining))
        pause = min(pause * 2, 0.1)


def writers_waiting(state_dir: Path) -> bool:
    """True while another process waits for the write lock (markers of dead ones are removed)."""
    waiting = False
    for marker in state_dir.glob(f"{WRITE_LOCK}{WAITING}*"):
        pid_text = marker.name.removeprefix(f"{WRITE_LOCK}{WAITING}").split(".")[0]
        pid = int(pid_text) if pid_text.isdigit() else None
        if pid is not None and pid != os.getpid() and pid_alive(pid):
            waiting = True
        elif pid is None or not pid_alive(pid):
            with contextlib.suppress(OSError):
                marker.unlink()  # left by a writer that was killed while waiting
    return waiting


def _busy_error(timeout: float, holder: int | None) -> Locked:
    who = f"pid {holder}" if holder is not None else "another feedbackd process"
    return Locked(
        f"the workspace is busy: {who} has been writing to it for more than {timeout:g} s",
        hint="wait for it to finish (see `feedbackd status`) and try again",
    )


def _take_or_refuse(fd: int) -> None:
    """Take the instance lock, or raise Locked naming the daemon that holds it."""
    deadline = time.monotonic() + _PROBE_GRACE_S
    while not _try_flock(fd, fcntl.LOCK_EX):
        holder = _read_pid(fd)
        if (holder is not None and pid_alive(holder)) or time.monotonic() > deadline:
            raise _locked_error(holder)
        time.sleep(0.01)


def _locked_error(holder: int | None) -> Locked:
    who = f"pid {holder}" if holder is not None else "pid unknown"
    return Locked(
        f"another feedbackd daemon ({who}) is running on this workspace",
        hint="stop it first (`systemctl stop feedbackd`, or kill that pid), "
        "or use `feedbackd status` to see what it is doing",
    )


def _open_lock_file(path: Path) -> int:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise WorkspaceError(
            f"cannot open the lock file {path}: {error.strerror or error}",
            hint=f"{path.parent} must be a writable folder (it holds feedbackd's local state; "
            "it is safe to delete it while no feedbackd runs)",
        ) from error


def _try_flock(fd: int, mode: int) -> bool:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _record_pid(fd: int) -> None:
    """Write this process's pid in the lock file. When that fails (a full disk) the lock is
    given up: left held, this process's next attempt would wait for itself."""
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError as error:
        os.close(fd)
        if error.errno in NO_SPACE:
            raise DiskFull(
                "the disk is full: the lock file in .feedbackd/ cannot be written"
                f" ({error.strerror}); nothing was changed",
                hint="free some space on the workspace's disk and run the command again",
            ) from None
        raise


def _read_pid(fd: int) -> int | None:
    """The pid written in a lock file, or None when it is empty or not a pid."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None
