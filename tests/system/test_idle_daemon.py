"""A daemon with nothing to do sleeps: from the moment its last change is done, not ten seconds
later. What `top` shows a user between a curator's approvals."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.daemon_kit import (
    WAKEUPS_PER_S_AT_MOST,
    DaemonProcess,
    NotifyListener,
    committed,
    idle,
    sleeps,
    wait_for,
)
from tests.workspace_kit import Site, draft


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "ws")


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
