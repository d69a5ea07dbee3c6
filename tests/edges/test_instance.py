"""One daemon per workspace and one writer at a time, checked with real processes and flocks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from feedbackd.core.errors import Locked, WorkspaceError
from feedbackd.edges.instance import (
    DAEMON_LOCK,
    WRITE_LOCK,
    InstanceLock,
    WriteLock,
    daemon_running,
    holder_pid,
    pid_alive,
    writers_waiting,
)
from tests.daemon_kit import wait_for

# A stand-in for another feedbackd process: takes a lock, says so, and holds it until stdin closes.
HOLDER = """
import sys
from pathlib import Path
from feedbackd.edges.instance import InstanceLock, WriteLock
kind, state_dir = sys.argv[1], Path(sys.argv[2])
lock = InstanceLock(state_dir) if kind == "instance" else WriteLock(state_dir, timeout=5)
with lock:
    print("held", flush=True)
    sys.stdin.read()
"""

# Holds the instance flock without writing a pid, as a process killed mid-start could leave it.
SILENT_HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
os.ftruncate(fd, 0)
os.write(fd, sys.argv[2].encode())
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


def start_holder(*args: str, script: str = HOLDER) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "held\n"
    return child


def release(child: subprocess.Popen[str]) -> int:
    """Let the holder go (or reap it if it was killed) and return its exit status."""
    assert child.stdin is not None and child.stdout is not None
    child.stdin.close()
    status = child.wait(timeout=10)
    child.stdout.close()
    return status


def take(lock: InstanceLock | WriteLock) -> None:
    with lock:
        pass


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "workspace" / ".feedbackd"


@pytest.fixture
def other_daemon(state_dir: Path) -> Iterator[subprocess.Popen[str]]:
    child = start_holder("instance", str(state_dir))
    yield child
    release(child)


def test_lock_records_our_pid_and_clears_it_on_exit(state_dir: Path) -> None:
    with InstanceLock(state_dir):
        assert (state_dir / DAEMON_LOCK).read_text() == f"{os.getpid()}\n"
        assert holder_pid(state_dir) == os.getpid()
        assert daemon_running(state_dir)
    assert (state_dir / DAEMON_LOCK).read_text() == ""
    assert holder_pid(state_dir) is None
    assert not daemon_running(state_dir)


def test_second_lock_in_this_process_is_refused_naming_the_pid(state_dir: Path) -> None:
    with InstanceLock(state_dir), pytest.raises(Locked) as refused:
        take(InstanceLock(state_dir))
    error = refused.value
    assert error.code == "locked"
    assert error.message == (
        f"another feedbackd daemon (pid {os.getpid()}) is running on this workspace"
    )
    assert "feedbackd status" in error.hint


def test_lock_held_by_another_process_is_detected(
    state_dir: Path, other_daemon: subprocess.Popen[str]
) -> None:
    assert holder_pid(state_dir) == other_daemon.pid
    with pytest.raises(Locked, match=rf"\(pid {other_daemon.pid}\)"):
        take(InstanceLock(state_dir))
    # Probing did not disturb the holder: it still holds the lock.
    assert holder_pid(state_dir) == other_daemon.pid
    assert release(other_daemon) == 0
    with InstanceLock(state_dir):
        assert holder_pid(state_dir) == os.getpid()


def test_holder_killed_without_warning_leaves_no_stale_lock(
    state_dir: Path, other_daemon: subprocess.Popen[str]
) -> None:
    other_daemon.send_signal(signal.SIGKILL)
    other_daemon.wait(timeout=10)
    assert not pid_alive(other_daemon.pid)
    assert holder_pid(state_dir) is None
    assert not daemon_running(state_dir)
    # Its pid is still written in the file, and does not matter.
    assert (state_dir / DAEMON_LOCK).read_text() == f"{other_daemon.pid}\n"
    with InstanceLock(state_dir):
        assert holder_pid(state_dir) == os.getpid()


def test_holder_without_a_readable_pid_still_counts_as_running(state_dir: Path) -> None:
    state_dir.mkdir(parents=True)
    child = start_holder(str(state_dir / DAEMON_LOCK), "not a pid", script=SILENT_HOLDER)
    try:
        assert daemon_running(state_dir)
        assert holder_pid(state_dir) is None
        with pytest.raises(Locked, match=r"\(pid unknown\)"):
            take(InstanceLock(state_dir))
    finally:
        assert release(child) == 0


def test_no_lock_file_means_no_daemon(state_dir: Path) -> None:
    assert holder_pid(state_dir) is None
    assert not daemon_running(state_dir)
    assert not state_dir.exists()  # probing creates nothing


def test_leftover_pid_in_an_unlocked_file_is_ignored(state_dir: Path) -> None:
    state_dir.mkdir(parents=True)
    (state_dir / DAEMON_LOCK).write_text(f"{os.getpid()}\n")
    assert holder_pid(state_dir) is None
    (state_dir / DAEMON_LOCK).write_bytes(b"\xff\x00garbage" * 1000)
    assert holder_pid(state_dir) is None
    with InstanceLock(state_dir):
        assert holder_pid(state_dir) == os.getpid()


def test_state_dir_that_is_a_file_gives_a_clear_error(tmp_path: Path) -> None:
    not_a_folder = tmp_path / ".feedbackd"
    not_a_folder.write_text("oops\n")
    with pytest.raises(WorkspaceError, match="cannot open the lock file") as refused:
        take(InstanceLock(not_a_folder))
    assert "writable folder" in refused.value.hint
    with pytest.raises(WorkspaceError):
        take(WriteLock(not_a_folder))
    assert holder_pid(not_a_folder) is None


def test_lock_file_that_is_a_folder_gives_a_clear_error(state_dir: Path) -> None:
    (state_dir / DAEMON_LOCK).mkdir(parents=True)
    with pytest.raises(WorkspaceError, match="cannot open the lock file"):
        take(InstanceLock(state_dir))
    assert holder_pid(state_dir) is None


def test_pid_alive() -> None:
    assert pid_alive(os.getpid())
    assert not pid_alive(0)
    assert not pid_alive(-1)


def test_write_lock_times_out_naming_the_writer(state_dir: Path) -> None:
    child = start_holder("write", str(state_dir))
    try:
        began = time.monotonic()
        with pytest.raises(Locked, match=rf"pid {child.pid} has been writing") as refused:
            take(WriteLock(state_dir, timeout=0.2))
        waited = time.monotonic() - began
        assert 0.2 <= waited < 5
        assert "try again" in refused.value.hint
    finally:
        assert release(child) == 0
    with WriteLock(state_dir, timeout=0):
        assert (state_dir / WRITE_LOCK).read_text() == f"{os.getpid()}\n"


def test_write_lock_waits_for_the_writer_to_finish(state_dir: Path) -> None:
    child = start_holder("write", str(state_dir))
    assert child.stdin is not None
    child.stdin.close()  # the writer finishes while we wait
    take(WriteLock(state_dir, timeout=10))
    assert release(child) == 0


def test_write_lock_is_independent_of_the_instance_lock(state_dir: Path) -> None:
    with InstanceLock(state_dir), WriteLock(state_dir, timeout=0):
        assert (state_dir / WRITE_LOCK).exists()


def test_write_lock_is_reentrant_in_one_thread(state_dir: Path) -> None:
    with WriteLock(state_dir, timeout=0), WriteLock(state_dir, timeout=0):
        pass
    with WriteLock(state_dir, timeout=0):  # fully released after the nested use
        pass


def test_write_lock_excludes_other_threads(state_dir: Path) -> None:
    outcome: list[BaseException | None] = []

    def other_writer() -> None:
        try:
            with WriteLock(state_dir, timeout=0.05):
                outcome.append(None)
        except Locked as error:
            outcome.append(error)

    with WriteLock(state_dir, timeout=0):
        thread = threading.Thread(target=other_writer)
        thread.start()
        thread.join(timeout=10)
    assert len(outcome) == 1 and isinstance(outcome[0], Locked)
    thread = threading.Thread(target=other_writer)
    thread.start()
    thread.join(timeout=10)
    assert outcome[1] is None


def test_a_writer_waiting_for_the_lock_is_seen_and_a_dead_ones_marker_removed(
    tmp_path: Path,
) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    script = (
        "import sys; from pathlib import Path; from feedbackd.edges.instance import WriteLock\n"
        "with WriteLock(Path(sys.argv[1]), timeout=30): print('got it', flush=True)\n"
    )
    with WriteLock(state_dir):
        assert not writers_waiting(state_dir)
        waiter = subprocess.Popen(
            [sys.executable, "-c", script, str(state_dir)], stdout=subprocess.PIPE, text=True
        )
        wait_for(lambda: writers_waiting(state_dir), what="the waiting writer's marker")
    assert waiter.communicate(timeout=30)[0] == "got it\n"
    assert not writers_waiting(state_dir) and not list(state_dir.glob("write.lock.waiting.*"))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    (state_dir / f"write.lock.waiting.{dead}.1").touch()
    assert not writers_waiting(state_dir)
    assert not list(state_dir.glob("write.lock.waiting.*"))
