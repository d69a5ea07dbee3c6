"""The cap on open connections and the request and send timeouts (web/connections.py), in
process with a small cap and short timeouts: which connection is closed, when, and when a new one
is refused. tests/system/test_slow_clients.py checks the real server under 1,100 slow clients."""

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

from feedbackd.web.connections import Connections
from feedbackd.web.guard import Receive, Scope, Send
from tests.daemon_kit import wait_for
from tests.web_kit import InThread, uvicorn_in_thread

MAX_OPEN = 4
HEAD_TIMEOUT_S = 0.5
BODY_TIMEOUT_S = 1.0
SEND_TIMEOUT_S = 1.0
SLACK_S = 1.5
BIG = 64 << 20  # /big's answer: more than the socket buffers of both ends hold


@dataclass
class App:
    """/busy holds its request until released; anything else answers at once."""

    release: threading.Event = field(default_factory=threading.Event)
    busy: int = 0
    reading: int = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"] == "/busy":
            self.busy += 1
            await run_in_threadpool(self.release.wait, 30)
        if scope["path"] == "/body":  # reads the whole body first, as every write does
            self.reading += 1
            while (await receive()).get("more_body", False):
                pass
        if scope["path"] == "/big":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            for _ in range(BIG >> 20):
                await send(
                    {"type": "http.response.body", "body": bytes(1 << 20), "more_body": True}
                )
            await send({"type": "http.response.body", "body": b""})
            return
        await JSONResponse({"path": scope["path"]})(scope, receive, send)


@pytest.fixture
def app() -> Iterator[App]:
    app = App()
    yield app
    app.release.set()


@pytest.fixture
def connections() -> Connections:
    return Connections(MAX_OPEN, HEAD_TIMEOUT_S, BODY_TIMEOUT_S, SEND_TIMEOUT_S)


@pytest.fixture
def running(app: App, connections: Connections) -> Iterator[InThread]:
    def server_for(port: int) -> uvicorn.Server:
        protocol = connections.protocol()
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


SLOW_BODIES = {
    "a length": b"Content-Length: 1000000\r\n\r\n{",
    "a huge chunk": b"Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFF\r\n{",
}


def slow_body(running: InThread, start: bytes) -> socket.socket:
    """A connection that has sent a whole head and the start of a body it never finishes."""
    client = socket.create_connection(("127.0.0.1", running.port), timeout=5)
    client.sendall(b"POST /body HTTP/1.1\r\nHost: x\r\n" + start)
    return client


@pytest.mark.parametrize("start", SLOW_BODIES.values(), ids=SLOW_BODIES.keys())
def test_a_body_trickled_after_its_head_is_closed(running: InThread, start: bytes) -> None:
    with slow_body(running, start) as client:
        started = time.monotonic()

        def trickled_until_closed() -> bool:
            if closed_by_server(client):
                return True
            client.sendall(b" ")  # the body never ends, but bytes keep coming
            return False

        wait_for(trickled_until_closed, timeout=BODY_TIMEOUT_S + SLACK_S, what="the close")
        assert time.monotonic() - started >= BODY_TIMEOUT_S * 0.9


def test_at_the_cap_a_connection_still_sending_its_body_makes_room(
    running: InThread, app: App
) -> None:
    slow = [slow_body(running, SLOW_BODIES["a length"]) for _ in range(MAX_OPEN)]
    wait_for(lambda: app.reading == MAX_OPEN, what="every request to wait for its body")
    with socket.create_connection(("127.0.0.1", running.port), timeout=5) as fresh:
        assert b" 200 " in request(fresh, "/healthz")
    oldest, *others = slow
    wait_for(lambda: closed_by_server(oldest), timeout=SLACK_S, what="the oldest to close")
    assert not any(closed_by_server(client) for client in others)
    for client in slow:
        client.close()


def test_a_whole_body_is_answered(running: InThread) -> None:
    with socket.create_connection(("127.0.0.1", running.port), timeout=5) as client:
        client.sendall(b"POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        assert b" 200 " in client.recv(4096)


def test_a_client_that_stops_reading_its_answer_is_cut(
    running: InThread, connections: Connections
) -> None:
    with socket.socket() as client:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        client.connect(("127.0.0.1", running.port))
        client.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        received = len(client.recv(1000))  # the start of the answer, then nothing for a while
        wait_for(
            lambda: not connections.open,
            timeout=SEND_TIMEOUT_S + 5 * SLACK_S,
            what="the server to let go of the stalled answer",
        )
        try:
            while chunk := client.recv(1 << 16):
                received += len(chunk)
        except ConnectionResetError:
            pass
    assert received < BIG  # cut short: the rest was never sent
