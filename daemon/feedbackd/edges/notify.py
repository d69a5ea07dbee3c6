"""Tell systemd how the daemon is doing, through its notify protocol (no extra dependencies).

systemd passes `NOTIFY_SOCKET` (a datagram socket; a leading `@` means the abstract namespace) to
units with `Type=notify`, and `WATCHDOG_USEC` (and `WATCHDOG_PID`) when `WatchdogSec=` is set.
Without `NOTIFY_SOCKET` (a terminal, a test, another supervisor) every method does nothing.
Reporting to systemd must never take the daemon down, so a failed send is logged once and dropped.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Mapping

log = logging.getLogger(__name__)


class Notifier:
    """Sends `READY=1`, `STATUS=...`, `WATCHDOG=1`, `RELOADING=1` and `STOPPING=1` to systemd."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self._address = _socket_address(env.get("NOTIFY_SOCKET", ""))
        self._watchdog_s = _watchdog_seconds(env) if self._address is not None else None
        self._failed = False

    @property
    def enabled(self) -> bool:
        """True when a service manager is listening."""
        return self._address is not None

    def ready(self) -> None:
        """Start-up is done: systemd marks the unit active and `systemctl start` returns."""
        self._send("READY=1")

    def status(self, text: str) -> None:
        """One line shown by `systemctl status`."""
        # The protocol is newline-separated, so a multi-line text would forge other assignments.
        self._send("STATUS=" + " ".join(text.split()))

    def watchdog(self) -> None:
        """Still alive: send every `watchdog_interval()` seconds, or systemd restarts the unit."""
        if self._watchdog_s is not None:
            self._send("WATCHDOG=1")

    def reloading(self) -> None:
        """Configuration reload begins; call `ready()` again when it is done."""
        monotonic_usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self._send(f"RELOADING=1\nMONOTONIC_USEC={monotonic_usec}")

    def extend_timeout(self, seconds: float) -> None:
        """Start-up (or shutdown) needs longer: systemd's timeout now ends `seconds` from now."""
        self._send(f"EXTEND_TIMEOUT_USEC={int(seconds * 1_000_000)}")

    def stopping(self) -> None:
        """Shutdown begins: systemd stops expecting watchdog pings."""
        self._send("STOPPING=1")

    def watchdog_interval(self) -> float | None:
        """Seconds between watchdog pings (half of `WATCHDOG_USEC`), or None when not watched."""
        return self._watchdog_s

    def _send(self, message: str) -> None:
        if self._address is None:
            return
        # A socket per message, as libsystemd does: nothing to close, safe from any thread, and
        # a manager that restarts is reached again. Never waiting: a supervisor that stopped
        # reading leaves its socket full, and a datagram sent then would block the daemon's
        # loop (and every decision after it) until it read again. Such a message is dropped.
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                sock.sendto(message.encode("utf-8"), socket.MSG_DONTWAIT, self._address)
        except BlockingIOError as error:
            self._report_failure(message, error, "its socket is full; dropped")
        except OSError as error:
            self._report_failure(message, error, "")

    def _report_failure(self, message: str, error: OSError, why: str) -> None:
        # A manager that went away, or stopped reading, would otherwise flood the log with one
        # line per ping.
        first_line = message.splitlines()[0]
        reason = why or str(error)
        if self._failed:
            log.debug("systemd notify %s failed again: %s", first_line, reason)
            return
        self._failed = True
        log.warning(
            "cannot notify systemd (%s): %s; further failures are not logged", first_line, reason
        )


def _socket_address(value: str) -> str | None:
    """The address to send to: a path, or `\\0name` for the abstract namespace; None if unusable."""
    if not value:
        return None
    if value.startswith("@"):
        return "\0" + value[1:]
    if value.startswith("/"):
        return value
    log.warning("ignoring NOTIFY_SOCKET=%r: only absolute paths and @abstract names work", value)
    return None


def _watchdog_seconds(env: Mapping[str, str]) -> float | None:
    """Half of WATCHDOG_USEC, when it is meant for this process (WATCHDOG_PID, if set, is us)."""
    watchdog_pid = env.get("WATCHDOG_PID", "").strip()
    if watchdog_pid and watchdog_pid != str(os.getpid()):
        return None
    text = env.get("WATCHDOG_USEC", "").strip()
    if not text:
        return None
    try:
        usec = int(text)
    except ValueError:
        log.warning("ignoring WATCHDOG_USEC=%r: not a whole number of microseconds", text)
        return None
    return usec / 2_000_000 if usec > 0 else None
