"""Exports to clients that stop reading (SPEC section 12): at most `http.max_exports` stream at
once, one more is answered 503 busy, the other routes answer meanwhile, and a stalled client's
export frees its place once the client is gone. (The cut of a client that reads nothing for the
send timeout is tests/web/test_connections.py's.)"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon_kit import wait_for
from tests.web_kit import Client, serving
from tests.workspace_kit import Site, draft

ITEMS = 16
TEXT = "x" * 700_000  # each approved item: an export of 11 MB, more than both sockets buffer
EXPORT = "/api/agents/writer/export?format=openai-sft"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "ws")
    site.configure("http:\n  max_exports: 1\n")
    for n in range(ITEMS):
        site.write("writer", f"qi-{n}.json", draft({"title": f"Item {n}", "body": TEXT}))
    site.reconcile()
    for n in range(ITEMS):
        site.move("writer", f"qi-{n}.json", "approved")
    site.reconcile()
    return site


@pytest.fixture
def served(site: Site) -> Iterator[Client]:
    with serving(site.root) as client:
        yield client


def stalled_export(client: Client) -> socket.socket:
    """An export whose client reads the head of the answer, then nothing more."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(30)
    sock.connect(("127.0.0.1", client.port))
    sock.sendall(f"GET {EXPORT} HTTP/1.1\r\nHost: {client.host}\r\n\r\n".encode())
    assert sock.recv(1000).startswith(b"HTTP/1.1 200 ")
    return sock


def test_one_export_more_than_the_cap_is_busy_and_the_rest_answers(served: Client) -> None:
    with stalled_export(served):
        busy = served.get(EXPORT)
        assert busy.status == 503 and busy.json()["error"] == "busy"
        assert "1 export already streaming" in busy.json()["message"]
        assert {k.lower(): v for k, v in busy.headers.items()}["retry-after"].isdigit()
        assert served.get("/api/agents").status == 200  # no worker thread held by the export
    # The stalled client is gone: its place is free again.
    wait_for(lambda: served.get(EXPORT).status == 200, what="the export's place to be free")


def test_an_export_read_to_its_end_frees_its_place(served: Client) -> None:
    for _ in range(2):
        whole = served.get(EXPORT)
        assert whole.status == 200 and len(whole.text.splitlines()) == ITEMS
