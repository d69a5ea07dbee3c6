"""The cap on open connections and the request-head timeout (cli/web/connections.py), in process
with a small cap and a short timeout: which connection is closed, when, and when a new one is
refused. tests/test_slow_clients.py checks the real server under 1,100 slow clients."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
import uvicorn
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse

from feedbackd.cli.web.connections import Connections
from feedbackd.cli.web.guard import Receive, Scope, Send
from tests.daemon_kit import wait_for
from tests.web_kit import InThread, uvicorn_in_thread

MAX_OPEN = 4
HEAD_TIMEOUT_S = 0.5
SLACK_S = 1.5


@dataclass
class App:
    """/busy holds its request until released; anything else answers at once."""

    release: threading.Event = field(default_factory=threading.Event)
    busy: int = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"] == "/busy":
            self.busy += 1
            await run_in_threadpool(self.release.wait, 30)
        await JSONResponse({"path": scope["path"]})(scope, receive, send)


@pytest.fixture
def app() -> Iterator[App]:
    app = App()
    yield app
    app.release.set()


@pytest.fixture
def running(app: App) -> Iterator[InThread]:
    def server_for(port: int) -> uvicorn.Server:
        protocol = Connections(MAX_OPEN, HEAD_TIMEOUT_S).protocol()
        return uvicorn.Server(uvicorn.Config(app, http=protocol, log_level="error", lifespan="off"))

    with uvicorn_in_thread(server_for) as running:
        yield running


def connect(running: InThread) -> socket.socket:
    client = socket.create_connection(("127.0.0.1", running.port), timeout=5)
    client.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\n")  # part of a head
    return client


def request(client: socket.socket, path: str) -> bytes:
    """A whole request on `client`, and the answer's head and body."""
    client.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    reply = b""
    while b"}" not in reply:
        chunk = client.recv(4096)
        assert chunk, f"closed after {reply!r}"
        reply += chunk
    return reply


def closed_by_server(client: socket.socket) -> bool:
    client.setblocking(False)
    try:
        return client.recv(4096) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True
    finally:
        client.setblocking(True)


def test_a_second_head_trickled_on_a_kept_alive_connection_is_closed(running: InThread) -> None:
    with socket.create_connection(("127.0.0.1", running.port), timeout=5) as client:
        assert b" 200 " in request(client, "/first")
        client.sendall(b"GET /second HTTP/1.1\r\n")
        started = time.monotonic()

        def trickled_until_closed() -> bool:
            if closed_by_server(client):
                return True
            client.sendall(b"X")  # the head never ends, but bytes keep coming
            return False

        wait_for(trickled_until_closed, timeout=HEAD_TIMEOUT_S + SLACK_S, what="the close")
        assert time.monotonic() - started >= HEAD_TIMEOUT_S * 0.9


def test_at_the_cap_the_longest_waiting_connection_makes_room(running: InThread) -> None:
    slow = [connect(running) for _ in range(MAX_OPEN)]
    with socket.create_connection(("127.0.0.1", running.port), timeout=5) as fresh:
        assert b" 200 " in request(fresh, "/healthz")
    oldest, *others = slow
    wait_for(lambda: closed_by_server(oldest), timeout=SLACK_S, what="the oldest to close")
    assert not any(closed_by_server(client) for client in others)
    for client in slow:
        client.close()


def test_a_new_connection_is_refused_only_when_every_one_is_busy(
    running: InThread, app: App
) -> None:
    busy = [socket.create_connection(("127.0.0.1", running.port), timeout=5) for _ in range(4)]
    for client in busy:
        client.sendall(b"GET /busy HTTP/1.1\r\nHost: x\r\n\r\n")
    wait_for(lambda: app.busy == MAX_OPEN, what="every connection to be busy")
    with socket.create_connection(("127.0.0.1", running.port), timeout=5) as refused:
        reply = refused.makefile("rb").read()
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 ") and b"Retry-After: 1" in head
    assert b"x-frame-options: DENY" in head  # the security headers, even on this refusal
    assert json.loads(body)["error"] == "busy"
    app.release.set()
    for client in busy:
        assert b" 200 " in client.recv(4096)
        client.close()
    with socket.create_connection(("127.0.0.1", running.port), timeout=5) as later:
        assert b" 200 " in request(later, "/healthz")


def test_a_request_head_that_is_not_http_is_answered_in_the_error_shape(
    running: InThread,
) -> None:
    with connect(running) as client:
        client.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nnot a header line\r\n\r\n")
        reply = client.makefile("rb").read()
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert b"content-type: application/json" in head.lower()
    assert b"x-frame-options: DENY" in head
    answer = json.loads(body)
    assert answer["error"] == "bad_request" and "HTTP" in answer["message"]
