"""The systemd notify client, against a real datagram socket standing in for systemd."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from feedbackd.edges.notify import Notifier


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    """A bound AF_UNIX datagram socket, as systemd offers it, and its NOTIFY_SOCKET value."""
    path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(5)
    yield sock, str(path)
    sock.close()


def receive(sock: socket.socket) -> str:
    return sock.recv(4096).decode("utf-8")


def test_messages_arrive_in_order(manager: tuple[socket.socket, str]) -> None:
    sock, address = manager
    notifier = Notifier({"NOTIFY_SOCKET": address, "WATCHDOG_USEC": "30000000"})
    notifier.ready()
    notifier.status("watching 3 agents")
    notifier.watchdog()
    notifier.stopping()
    assert [receive(sock) for _ in range(4)] == [
        "READY=1",
        "STATUS=watching 3 agents",
        "WATCHDOG=1",
        "STOPPING=1",
    ]


def test_abstract_namespace_socket() -> None:
    name = f"feedbackd-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(5)
        Notifier({"NOTIFY_SOCKET": "@" + name}).ready()
        assert receive(sock) == "READY=1"


def test_status_cannot_forge_other_assignments(manager: tuple[socket.socket, str]) -> None:
    sock, address = manager
    Notifier({"NOTIFY_SOCKET": address}).status("approved qi-1\nREADY=1\r\n  done")
    assert receive(sock) == "STATUS=approved qi-1 READY=1 done"


def test_reloading_carries_a_monotonic_timestamp(manager: tuple[socket.socket, str]) -> None:
    sock, address = manager
    Notifier({"NOTIFY_SOCKET": address}).reloading()
    first, second = receive(sock).split("\n")
    assert first == "RELOADING=1"
    assert second.startswith("MONOTONIC_USEC=") and int(second.split("=")[1]) > 0


def test_watchdog_interval_is_half_of_watchdog_usec(manager: tuple[socket.socket, str]) -> None:
    _, address = manager
    assert (
        Notifier({"NOTIFY_SOCKET": address, "WATCHDOG_USEC": "30000000"}).watchdog_interval() == 15
    )
    own = {"WATCHDOG_USEC": "1000000", "WATCHDOG_PID": str(os.getpid())}
    assert Notifier({"NOTIFY_SOCKET": address, **own}).watchdog_interval() == 0.5


@pytest.mark.parametrize(
    "watchdog",
    [
        {},
        {"WATCHDOG_USEC": ""},
        {"WATCHDOG_USEC": "0"},
        {"WATCHDOG_USEC": "-5"},
        {"WATCHDOG_USEC": "thirty"},
        {"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"},  # meant for another process
    ],
)
def test_no_watchdog_when_not_meant_for_us(
    manager: tuple[socket.socket, str], watchdog: dict[str, str]
) -> None:
    sock, address = manager
    notifier = Notifier({"NOTIFY_SOCKET": address, **watchdog})
    assert notifier.watchdog_interval() is None
    notifier.watchdog()  # nothing is sent...
    notifier.ready()
    assert receive(sock) == "READY=1"  # ...so the next datagram is the READY


def test_everything_is_a_no_op_without_notify_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WATCHDOG_USEC", "30000000")
    notifier = Notifier()  # from os.environ, where the fixture removed NOTIFY_SOCKET
    assert not notifier.enabled
    assert notifier.watchdog_interval() is None
    notifier.ready()
    notifier.status("x")
    notifier.watchdog()
    notifier.reloading()
    notifier.stopping()


def test_reads_os_environ_by_default(
    manager: tuple[socket.socket, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sock, address = manager
    monkeypatch.setenv("NOTIFY_SOCKET", address)
    monkeypatch.setenv("WATCHDOG_USEC", "4000000")
    notifier = Notifier()
    assert notifier.enabled and notifier.watchdog_interval() == 2
    notifier.ready()
    assert receive(sock) == "READY=1"


def test_relative_socket_path_is_ignored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="feedbackd.edges.notify"):
        notifier = Notifier({"NOTIFY_SOCKET": "relative/notify.sock"})
    assert not notifier.enabled
    assert "only absolute paths" in caplog.text
    notifier.ready()


def test_send_failure_is_logged_once_and_never_raises(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    notifier = Notifier({"NOTIFY_SOCKET": str(tmp_path / "gone.sock"), "WATCHDOG_USEC": "2000000"})
    with caplog.at_level(logging.DEBUG, logger="feedbackd.edges.notify"):
        notifier.ready()
        for _ in range(5):
            notifier.watchdog()
        notifier.stopping()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "cannot notify systemd (READY=1)" in warnings[0].getMessage()


def test_manager_that_comes_back_receives_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "late.sock"
    notifier = Notifier({"NOTIFY_SOCKET": str(path)})
    with caplog.at_level(logging.WARNING, logger="feedbackd.edges.notify"):
        notifier.status("nobody listens yet")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(path))
        sock.settimeout(5)
        notifier.ready()
        assert receive(sock) == "READY=1"
