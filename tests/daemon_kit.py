"""Test helpers for the daemon: a stand-in for systemd's notify socket, the real daemon as a child
process, and waits on conditions with deadlines (never fixed sleeps)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from tests.workspace_kit import Site

T = TypeVar("T")
DEADLINE_S = 20.0
# How long a test's leftover daemon or server has to stop on SIGTERM before it is killed.
CLOSE_S = 5.0
# sockaddr_un holds 108 bytes; a deeper tmp_path falls back to an abstract socket name.
_MAX_SOCKET_PATH = 100


class SlowMark:
    """Whether the running test carries the `slow` mark (conftest sets it as each test is set
    up): one that starts the daemon or `feedbackd serve` must, as the marker's text in
    pyproject.toml says, so that `-m "not slow"` leaves out every such process."""

    carried = True  # outside pytest (the benchmarks) nothing is checked


def must_be_marked_slow(what: str) -> None:
    assert SlowMark.carried, f"a test that starts {what} is marked slow (pyproject.toml)"


def wait_for(
    predicate: Callable[[], T], timeout: float = DEADLINE_S, what: str = "the condition"
) -> T:
    """Poll predicate until it returns something truthy, and return that; after timeout seconds,
    fail the test naming `what` it waited for. The one way the tests wait for something."""
    deadline = time.monotonic() + timeout
    pause = 0.01
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(pause)
        pause = min(pause * 1.5, 0.1)


class NotifyListener:
    """A bound AF_UNIX datagram socket, as systemd offers it; records what the daemon sends."""

    def __init__(self, folder: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        path = folder / "notify.sock"
        if len(str(path)) <= _MAX_SOCKET_PATH:
            self.sock.bind(str(path))
            self.address = str(path)
        else:
            name = f"feedbackd-test-{os.getpid()}-{id(self)}"
            self.sock.bind("\0" + name)
            self.address = "@" + name
        self.sock.settimeout(0.05)
        self.received: list[tuple[float, str]] = []
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._receive, daemon=True)
        self._thread.start()

    def _receive(self) -> None:
        while not self._closed.is_set():
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.received.append((time.monotonic(), data.decode("utf-8")))

    def messages(self) -> list[str]:
        with self._lock:
            return [message for _, message in self.received]

    def times_of(self, message: str) -> list[float]:
        with self._lock:
            return [at for at, text in self.received if text == message]

    def count(self, message: str) -> int:
        return len(self.times_of(message))

    def wait(self, message: str, *, count: int = 1, timeout: float = DEADLINE_S) -> None:
        wait_for(lambda: self.count(message) >= count, timeout, f"{count} x {message!r}")

    def stop_reading(self) -> int:
        """Go deaf, as a supervisor that reads READY=1 and nothing after it, and fill the socket's
        queue so that the next datagram finds no room; how many this took."""
        self._closed.set()
        self._thread.join(1)
        filler = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        address = "\0" + self.address[1:] if self.address.startswith("@") else self.address
        sent = 0
        try:
            while sent < 100_000:
                filler.sendto(b"FILLER=1", socket.MSG_DONTWAIT, address)
                sent += 1
        except BlockingIOError:
            return sent  # the queue is full
        finally:
            filler.close()
        raise AssertionError("the notify socket never filled up")

    def close(self) -> None:
        self._closed.set()
        self._thread.join(1)
        self.sock.close()


class DaemonProcess:
    """`python -m feedbackd -w WS run`, with NOTIFY_SOCKET and WATCHDOG_USEC as systemd sets."""

    def __init__(
        self,
        site: Site,
        listener: NotifyListener,
        *args: str,
        watchdog_usec: int = 400_000,
        log_name: str = "daemon.log",
    ) -> None:
        must_be_marked_slow("the daemon")
        self.site = site
        self.listener = listener
        self.log_path = site.root.parent / log_name
        env = dict(os.environ)
        env.update(NOTIFY_SOCKET=listener.address, WATCHDOG_USEC=str(watchdog_usec))
        command = [sys.executable, "-m", "feedbackd", "-w", str(site.root), "run", *args]
        with open(self.log_path, "ab") as log:
            # Its own process group: a `kill -9` of the group takes its git children too, as
            # systemd does to a unit's control group.
            self.proc = subprocess.Popen(
                command, stdout=log, stderr=log, env=env, start_new_session=True
            )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self, count: int = 1, timeout: float = DEADLINE_S) -> None:
        def ready_or_gone() -> bool:
            return self.listener.count("READY=1") >= count or self.proc.poll() is not None

        try:
            wait_for(ready_or_gone, timeout, f"READY=1 ({count} in all)")
        except AssertionError as error:
            raise AssertionError(f"{error}: {self.log()}") from None
        if self.listener.count("READY=1") < count:
            raise AssertionError(f"daemon exited {self.proc.returncode}: {self.log()}")

    def signal(self, number: int) -> None:
        self.proc.send_signal(number)

    def stop(self, timeout: float = DEADLINE_S) -> int:
        """SIGTERM, then the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill_group(self) -> None:
        """`kill -9` of the daemon and every git process it started."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(DEADLINE_S)

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def cpu_ticks(self) -> int:
        """User plus system CPU time of the daemon, in clock ticks."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    def open_fds(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def close(self) -> None:
        """Stop it as systemd would, SIGTERM and, if it is still there after CLOSE_S, `kill -9`
        of its group: a daemon killed at once would lose what `make test`'s coverage saw of it."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(CLOSE_S)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # and any git process it left
        self.proc.wait(DEADLINE_S)


def children_of(pid: int) -> list[int]:
    """Live child processes of pid (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry))
    return found


def ledger(site: Site, agent: str) -> list[dict[str, Any]]:
    path = site.agent(agent) / "decisions.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def decided(site: Site, agent: str, state: str = "approved") -> list[str]:
    """Item ids with a ledger line of this state, in ledger order (repeats kept)."""
    return [record["item"] for record in ledger(site, agent) if record["state"] == state]


def subjects(site: Site) -> list[str]:
    return site.git("log", "--format=%s").splitlines()


def committed(site: Site, subject_start: str) -> bool:
    return any(subject.startswith(subject_start) for subject in subjects(site))


def status_json(site: Site) -> dict[str, Any]:
    done = site.cli("status", "--json")
    assert done.returncode == 0, done.stderr
    value: dict[str, Any] = json.loads(done.stdout)
    return value


def idle(daemon: DaemonProcess, quiet_s: float = 1.0, timeout: float = DEADLINE_S) -> None:
    """Wait until the daemon has done no pass for quiet_s (its status file, rewritten after each
    pass, stays unchanged) and has used almost no CPU meanwhile."""
    status = daemon.site.root / ".feedbackd" / "status.json"
    ticks_per_s = os.sysconf("SC_CLK_TCK")

    def quiet_window() -> bool:
        before, ticks = status.stat().st_mtime_ns, daemon.cpu_ticks()
        started = time.monotonic()
        while time.monotonic() - started < quiet_s:
            time.sleep(0.05)
            if status.stat().st_mtime_ns != before:
                return False
        used = (daemon.cpu_ticks() - ticks) / ticks_per_s
        return used < 0.1 * quiet_s

    wait_for(quiet_window, timeout, "the daemon to go idle")


# The watcher's look at its stop flag (10 a second), the systemd watchdog's ping the tests ask
# for (WATCHDOG_USEC 0.4 s: 5 a second) and room for a timer or two. Looking for file events
# every millisecond, as the watcher once did after each change, made about 900.
WAKEUPS_PER_S_AT_MOST = 60


def sleeps(pid: int) -> int:
    """How many times the process's threads went to sleep so far (each wake-up ends one)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            status = (task / "status").read_text()
        except FileNotFoundError:  # a thread that ended meanwhile
            continue
        total += int(status.split("voluntary_ctxt_switches:")[1].split()[0])
    return total
