"""The server's stop, in process with a short grace (web/stopping.py): reads still running at
the end of the grace are cut with 503 `stopping`, writes in flight are waited for and answer what
they did, and a write that reaches the routes once the stop has begun answers 503 without running.
tests/system/test_serve_stop.py checks the same with the real server, SIGTERM and git."""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
import uvicorn
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse

from feedbackd.core.websafety import parse_listen
from feedbackd.web.guard import Guard, Receive, Scope, Send
from feedbackd.web.stopping import GracefulServer, Stopping
from tests.daemon_kit import wait_for
from tests.web_kit import Answer, InThread, uvicorn_in_thread

GRACE_S = 0.5


@dataclass
class Work:
    """A route for each kind of request: /write blocks in a worker thread (as a commit does)
    until released; /read waits on the network, for ever."""

    write_started: threading.Event = field(default_factory=threading.Event)
    read_started: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    writes_done: int = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"] == "/write":
            self.write_started.set()
            await run_in_threadpool(self.release.wait, 30)
            self.writes_done += 1
            await JSONResponse({"written": True})(scope, receive, send)
        else:
            self.read_started.set()
            await asyncio.sleep(3600)


@dataclass
class Running:
    """The server with a Stopping gate in front of Work, behind the Guard as in `serve`."""

    running: InThread
    stopping: Stopping

    @property
    def server(self) -> uvicorn.Server:
        return self.running.server

    @property
    def thread(self) -> threading.Thread:
        return self.running.thread

    @property
    def port(self) -> int:
        return self.running.port

    def request(self, method: str, path: str, answers: list[Answer]) -> threading.Thread:
        def call() -> None:
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            body = b"{}" if method == "POST" else None
            headers = {"Host": f"127.0.0.1:{self.port}", "Content-Type": "application/json"}
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            answers.append(Answer(response.status, dict(response.getheaders()), response.read()))
            connection.close()

        thread = threading.Thread(target=call)
        thread.start()
        return thread


@pytest.fixture
def work() -> Work:
    return Work()


@pytest.fixture
def running(work: Work) -> Iterator[Running]:
    stopping = Stopping()

    def server_for(port: int) -> uvicorn.Server:
        app = Guard(stopping.gate(work), parse_listen(f"127.0.0.1:{port}", "--listen"), None)
        config = uvicorn.Config(app, log_level="warning", lifespan="off")
        return GracefulServer(config, stopping, GRACE_S)

    with uvicorn_in_thread(server_for) as running:
        yield Running(running, stopping)
        work.release.set()


def test_stop_cuts_reads_at_the_grace_and_waits_for_writes(work: Work, running: Running) -> None:
    written: list[Answer] = []
    read: list[Answer] = []
    writer = running.request("POST", "/write", written)
    wait_for(work.write_started.is_set, what="the write to start")
    reader = running.request("GET", "/read", read)
    wait_for(work.read_started.is_set, what="the read to start")

    running.server.should_exit = True  # what SIGTERM does
    reader.join(timeout=GRACE_S + 5)
    [cut] = read
    assert (cut.status, cut.json()["error"]) == (503, "stopping")
    assert cut.headers["retry-after"]
    assert running.thread.is_alive() and not written, "the stop did not wait for the write"

    work.release.set()
    writer.join(timeout=10)
    running.thread.join(timeout=10)
    assert not running.thread.is_alive()
    [done] = written
    assert (done.status, done.json(), work.writes_done) == (200, {"written": True}, 1)


def test_write_that_arrives_once_the_stop_began_answers_503_untouched(
    work: Work, running: Running
) -> None:
    """Its head came before the stop, its body after: it reaches the routes too late."""
    with socket.create_connection(("127.0.0.1", running.port), timeout=10) as client:
        head = f"POST /write HTTP/1.1\r\nHost: 127.0.0.1:{running.port}\r\n"
        client.sendall(
            f"{head}Content-Type: application/json\r\nContent-Length: 2\r\n\r\n".encode()
        )
        wait_for(lambda: running.server.server_state.tasks, what="the request to be read")
        running.server.should_exit = True
        wait_for(lambda: running.stopping.begun, what="the stop to begin")
        client.sendall(b"{}")
        reply = client.makefile("rb").read()
    status_line, _, rest = reply.partition(b"\r\n")
    assert status_line == b"HTTP/1.1 503 Service Unavailable"
    head_text, _, body = rest.partition(b"\r\n\r\n")
    assert b"retry-after: 10" in head_text.lower()
    assert json.loads(body)["error"] == "stopping"
    assert not work.write_started.is_set()
    running.thread.join(timeout=10)
    assert not running.thread.is_alive()
