"""Slow request bodies (SPEC section 12): clients that send a whole head, then trickle a body
they never finish, do not lock a new client out of `/healthz`; and a body cut short by its
connection's close is no request, even when what came of it parses."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from feedbackd.core.websafety import parse_listen
from feedbackd.web.guard import Guard, Message, Receive, Scope, Send
from tests.web_kit import Client, serving
from tests.workspace_kit import Site, draft

MAX_CONNECTIONS = 16  # the least http.max_connections takes
SLOW = MAX_CONNECTIONS + 4
REJECT = "/api/agents/writer/queue/qi-1/reject"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "ws")
    site.configure(f"http:\n  max_connections: {MAX_CONNECTIONS}\n")
    site.write("writer", "qi-1.json", draft({"title": "Old title"}))
    site.reconcile()
    return site


@pytest.fixture
def served(site: Site) -> Iterator[Client]:
    with serving(site.root) as client:
        yield client


def slow_body(client: Client, framing: bytes, start: bytes) -> socket.socket:
    """A write whose head is whole and whose body has only begun. It asks for `100 Continue`,
    which the server sends once the request is reading its body: then the head is surely in."""
    sock = socket.create_connection(("127.0.0.1", client.port), timeout=5)
    head = f"POST {REJECT} HTTP/1.1\r\nHost: {client.host}\r\nContent-Type: application/json\r\n"
    try:
        sock.sendall(head.encode() + b"Expect: 100-continue\r\n" + framing + b"\r\n\r\n")
        reply = b""
        while b"\r\n\r\n" not in reply:
            chunk = sock.recv(4096)
            assert chunk, f"closed after {reply!r}"
            reply += chunk
        assert reply.startswith(b"HTTP/1.1 100 "), reply
        sock.sendall(start)
    except BaseException:
        sock.close()
        raise
    return sock


@pytest.mark.parametrize(
    ("framing", "start"),
    [
        (b"Content-Length: 1000000", b"{"),
        (b"Transfer-Encoding: chunked", b"FFFFFFFFFFFFFFFF\r\n{"),
    ],
    ids=["a length", "a huge chunk"],
)
def test_slow_bodies_do_not_lock_out_healthz(
    site: Site, served: Client, framing: bytes, start: bytes
) -> None:
    slow: list[socket.socket] = []
    try:
        for _ in range(SLOW):
            slow.append(slow_body(served, framing, start))
        for _ in range(5):
            for sock in slow:
                with contextlib.suppress(OSError):  # closed to make room
                    sock.send(b" ")  # a byte more of each body, never the end
            answer = served.get("/healthz")
            assert (answer.status, answer.json()) == (200, {"status": "ok"})
    finally:
        for sock in slow:
            sock.close()
    assert (site.agent("writer") / "queue" / "qi-1.json").is_file()  # nothing was decided


def test_a_body_cut_short_by_a_close_reaches_no_route() -> None:
    """`{"notes": "Too dry."}` and then the connection closes, 1,000 bytes short: the route
    must not reject the draft with what came."""
    reached: list[str] = []

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        reached.append(scope["path"])

    messages: list[Message] = [
        {"type": "http.request", "body": b'{"notes": "Too dry."}', "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive() -> Message:
        return messages.pop(0)

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    headers = [(b"host", b"127.0.0.1:8787"), (b"content-length", b"1021")]
    scope = {"type": "http", "method": "POST", "path": REJECT, "headers": headers}
    guard = Guard(route, parse_listen("127.0.0.1:8787", "--listen"), None)
    asyncio.run(guard(scope, receive, send))
    assert reached == [] and sent == []
