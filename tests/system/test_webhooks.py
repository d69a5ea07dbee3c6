"""The daemon delivers webhooks beside its passes (SPEC section 17): a decision made while it
runs reaches a real receiver, signed; deliveries owed when the daemon is killed with `kill -9`
go out after a restart, each at least once and in commit order; a receiver that takes 30 s never
keeps SIGTERM from stopping the daemon; `serve` never delivers."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from standardwebhooks.webhooks import Webhook

from feedbackd.app.events.owed import state_path
from tests.daemon_kit import DaemonProcess, wait_for
from tests.events_kit import SECRET, Receiver, configure_hook, receiving
from tests.web_kit import Server
from tests.workspace_kit import Site, draft

pytestmark = [pytest.mark.slow, pytest.mark.measured_processes]

AGENT = "writer"
Start = Callable[..., DaemonProcess]


def workspace(tmp_path: Path, url: str, **options: object) -> Site:
    site = Site(tmp_path / "ws")
    configure_hook(site.root, url, **options)
    site.git("add", "feedbackd.yaml")
    site.git("commit", "-qm", "Send events to the team's hook")
    for n in range(1, 4):
        site.write(AGENT, f"qi-{n}.json", draft({"title": f"Title {n}"}))
    site.reconcile()  # the drafts on record
    return site


def items(received: Receiver) -> list[str]:
    return [json.loads(got.body)["data"]["item"] for got in received.accepted()]


def owed(site: Site) -> int:
    path = state_path(site.runtime())
    if not path.exists():
        return 0
    return sum(len(hook["owed"]) for hook in json.loads(path.read_text())["hooks"])


@pytest.fixture
def run(start: Start, listener: object) -> Callable[[Site], DaemonProcess]:
    def started(site: Site) -> DaemonProcess:
        daemon = start(site, listener)
        daemon.wait_ready()
        return daemon

    return started


def test_the_daemon_delivers_each_decision_signed(
    tmp_path: Path, run: Callable[[Site], DaemonProcess]
) -> None:
    with receiving() as receiver:
        site = workspace(tmp_path, receiver.url)
        daemon = run(site)
        assert site.cli("approve", AGENT, "qi-1").returncode == 0
        wait_for(lambda: items(receiver) == ["qi-1"], what="the approval at the receiver")
        got = receiver.accepted()[0]
        assert Webhook(SECRET).verify(got.body, got.headers)["type"] == "feedbackd.approve"
        assert got.headers["webhook-id"] == site.git("rev-parse", "HEAD").strip()
        assert daemon.stop() == 0


def test_deliveries_owed_at_a_kill_go_out_in_order_after_a_restart(
    tmp_path: Path, run: Callable[[Site], DaemonProcess]
) -> None:
    with receiving() as receiver:
        site = workspace(tmp_path, receiver.url)
        receiver.mode = "fail"
        daemon = run(site)
        for n in range(1, 4):
            assert site.cli("approve", AGENT, f"qi-{n}").returncode == 0
        wait_for(lambda: owed(site) == 3, what="three deliveries owed")
        daemon.kill_group()
        receiver.mode = "ok"
        daemon = run(site)
        wait_for(lambda: owed(site) == 0, what="the owed deliveries made")
        delivered = items(receiver)
        assert sorted(set(delivered)) == ["qi-1", "qi-2", "qi-3"]  # each at least once
        firsts = sorted(set(delivered), key=delivered.index)
        assert firsts == ["qi-1", "qi-2", "qi-3"]  # in commit order
        assert daemon.stop() == 0


def test_a_slow_receiver_never_keeps_the_daemon_from_stopping(
    tmp_path: Path, run: Callable[[Site], DaemonProcess]
) -> None:
    with receiving() as receiver:
        receiver.mode, receiver.slow_s = "slow", 30
        site = workspace(tmp_path, receiver.url, timeout_s=2)
        daemon = run(site)
        assert site.cli("approve", AGENT, "qi-1").returncode == 0
        wait_for(lambda: receiver.arrivals, what="the attempt in flight")
        assert site.cli("approve", AGENT, "qi-2").returncode == 0  # a decision goes ahead
        daemon.signal(signal.SIGTERM)
        assert daemon.proc.wait(20) == 0
        assert owed(site) >= 1  # kept for the next start, as the slow answer came too late


def test_serve_never_delivers(tmp_path: Path, run: Callable[[Site], DaemonProcess]) -> None:
    with receiving() as receiver:
        site = workspace(tmp_path, receiver.url)
        server = Server(site.root)
        try:
            answer = server.request("POST", f"/api/agents/{AGENT}/queue/qi-1/approve", {})
            assert answer.status == 200, answer.body
        finally:
            assert server.stop() == 0
        assert receiver.received == []
        daemon = run(site)  # the daemon finds the panel's decision and sends it
        wait_for(lambda: items(receiver) == ["qi-1"], what="the panel's approval delivered")
        assert daemon.stop() == 0
