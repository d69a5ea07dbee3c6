"""A daemon with nothing to do sleeps: from the moment its last change is done, not ten seconds
later. What `top` shows a user between a curator's approvals."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.daemon_kit import DaemonProcess, NotifyListener, committed, idle, wait_for
from tests.workspace_kit import Site, draft

# The watcher's look at its stop flag (10 a second), the systemd watchdog's ping the tests ask
# for (WATCHDOG_USEC 0.4 s: 5 a second) and room for a timer or two. Looking for file events
# every millisecond, as the watcher once did after each change, made about 900.
WAKEUPS_PER_S_AT_MOST = 60


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "ws")


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


@pytest.mark.slow
def test_right_after_an_approval_the_daemon_sleeps_until_the_next_change(
    site: Site, listener: NotifyListener, start: type[DaemonProcess]
) -> None:
    """Counted in wake-ups rather than CPU time: a busy machine makes the daemon wake less
    often, never more, so the bound holds however loaded the machine is."""
    site.write("w", "qi-1.json", draft({"title": "Old title"}))
    site.reconcile()
    daemon = start(site, listener)
    daemon.wait_ready()
    site.write("w", "qi-1.json", draft({"title": "New title"}))
    site.move("w", "qi-1.json", "approved")
    wait_for(lambda: committed(site, "approve(w): qi-1"), what="the approval's commit")
    idle(daemon)  # its last pass a second ago: a curator's next move is likeliest now
    before, began = sleeps(daemon.pid), time.monotonic()
    time.sleep(1.0)  # the measurement itself: a second with nothing happening
    rate = (sleeps(daemon.pid) - before) / (time.monotonic() - began)
    assert rate <= WAKEUPS_PER_S_AT_MOST, f"the daemon woke {rate:.0f} times a second"
