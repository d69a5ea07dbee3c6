"""`feedbackd serve` under slow clients (SPEC section 12): 1,100 connections that each trickle a
request head they never finish, at a server that may open only 1,024 files (systemd's default),
do not keep a new client from `/healthz`; the server closes each of them within 10 s of its
start and runs out of nothing."""

from __future__ import annotations

import http.client
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.web_kit import Server, SlowClients
from tests.workspace_kit import Site

pytestmark = pytest.mark.slow

SLOW_CLIENTS = 1100
OPEN_FILES = 1024  # the server's limit, soft and hard: the connection cap is what protects it
HEAD_TIMEOUT_S = 10.0
SLACK_S = 4.0  # a loaded 2-core machine may notice a close late
TRICKLE_EVERY_S = 1.0
PROBE_EVERY_S = 2.0
PROBE_TIMEOUT_S = 3.0


@pytest.fixture
def own_files() -> Iterator[None]:
    """This test process holds 1,100 sockets itself."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = SLOW_CLIENTS + 200
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"the test needs {wanted} open files and the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def healthz_seconds(port: int) -> float:
    """How long a new client waits for `GET /healthz` (fails unless it is 200 in time)."""
    start = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=PROBE_TIMEOUT_S)
    try:
        connection.request("GET", "/healthz", headers={"Host": f"127.0.0.1:{port}"})
        answer = connection.getresponse()
        assert (answer.status, answer.read()) == (200, b'{"status":"ok"}')
    finally:
        connection.close()
    return time.monotonic() - start


def test_slow_clients_neither_lock_out_a_new_one_nor_stay_open(
    tmp_path: Path, own_files: None
) -> None:
    site = Site(tmp_path / "ws")
    server = Server(site.root, log=tmp_path / "serve.log", open_files=OPEN_FILES)
    slow = SlowClients(server.port)
    try:
        slow.open(SLOW_CLIENTS)
        probes: list[tuple[int, float]] = []  # (slow connections open, seconds to answer)
        deadline = max(c.opened for c in slow.clients) + HEAD_TIMEOUT_S + SLACK_S
        next_trickle = next_probe = time.monotonic()
        while slow.still_open() and time.monotonic() < deadline:
            now = time.monotonic()
            if now >= next_trickle:
                slow.trickle()
                next_trickle = now + TRICKLE_EVERY_S
            if now >= next_probe:
                probes.append((len(slow.still_open()), healthz_seconds(server.port)))
                next_probe = now + PROBE_EVERY_S
            slow.notice_closes(wait=0.1)
        left_open = len(slow.still_open())
        lived = [c.closed - c.opened for c in slow.clients if c.closed is not None]
    finally:
        slow.close()
        stopped = server.stop()

    assert left_open == 0, f"{left_open} slow connections stayed open"
    assert max(lived) <= HEAD_TIMEOUT_S + SLACK_S
    # Those not evicted to make room were closed by the head timeout, not at once.
    assert sum(seconds >= HEAD_TIMEOUT_S - 1 for seconds in lived) >= 400
    under_attack = [seconds for open_then, seconds in probes if open_then >= 400]
    assert len(under_attack) >= 3, probes
    assert stopped == 0
    log = server.log_text()
    assert "Errno 24" not in log and "Traceback" not in log, log
