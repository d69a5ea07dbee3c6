"""Test helpers: `feedbackd serve` as a real process, or its application in a thread of the test,
on a free loopback port, spoken to in HTTP."""

from __future__ import annotations

import http.client
import json
import os
import resource
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import uvicorn

from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.websafety import parse_listen
from feedbackd.web.connections import Connections
from feedbackd.web.server import GRACE_S, application, forwarding
from feedbackd.web.stopping import GracefulServer
from tests.daemon_kit import CLOSE_S, must_be_marked_slow, wait_for


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def open_files_limit(count: int) -> Callable[[], None]:
    """For Popen's preexec_fn: the child may open `count` files, soft and hard limit alike (a
    service manager's default is 1,024)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))

    return limit


@dataclass
class InThread:
    """A uvicorn server running in a thread of the test process."""

    server: uvicorn.Server
    port: int
    thread: threading.Thread

    def stop(self) -> None:
        """What SIGTERM does; then wait for the server to finish."""
        self.server.should_exit = True
        self.thread.join(timeout=10)


@contextmanager
def uvicorn_in_thread(server_for: Callable[[int], uvicorn.Server]) -> Iterator[InThread]:
    """The server that server_for(port) makes, serving a free loopback port, for a test that
    needs the server's parts in hand (a short grace, a small cap) rather than the command."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    server = server_for(port)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    running = InThread(server, port, thread)
    try:
        wait_for(lambda: server.started or not thread.is_alive(), what="the server to start")
        assert thread.is_alive(), "the server stopped as it started"
        yield running
    finally:
        running.stop()
        sock.close()


class Client:
    """HTTP/1.1 to a server on a loopback port, a connection for each request, with the Host
    header a browser would send."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.host = f"127.0.0.1:{port}"

    def request(
        self,
        method: str,
        path: str,
        body: object = None,
        *,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
        source: str | None = None,
    ) -> Answer:
        """`source` is the loopback address the request comes from (e.g. 127.0.0.2): another
        client address without leaving the machine."""
        origin = None if source is None else (source, 0)
        connection = http.client.HTTPConnection(
            "127.0.0.1", self.port, timeout=60, source_address=origin
        )
        sent = {"Host": self.host, **(headers or {})}
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        if data is not None:
            sent.setdefault("Content-Type", "application/json")
        try:
            connection.request(method, path, body=data, headers=sent)
            response = connection.getresponse()
            return Answer(response.status, dict(response.getheaders()), response.read())
        finally:
            connection.close()

    def get(self, path: str, **kwargs: Any) -> Answer:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, body: object = None, **kwargs: Any) -> Answer:
        return self.request("POST", path, body, **kwargs)


@contextmanager
def serving(root: Path) -> Iterator[Client]:
    """What `feedbackd -w ROOT serve` answers with (web/server.application), served by uvicorn
    from a thread of the test process on a free loopback port: the routes, the safety rules and
    HTTP over a real socket, without a process to start. The command itself (its refusals, its
    log, SIGTERM) and what a process of its own decides (open files, the connection cap's
    effect) are Server's."""
    runtime = Runtime.open(str(root), None)

    def server_for(port: int) -> uvicorn.Server:
        listen = parse_listen(f"127.0.0.1:{port}", "--listen")
        app, stopping = application(runtime, None, listen)
        protocol = Connections(runtime.settings.http.max_connections).protocol()
        # log_config None: uvicorn leaves the test process's logging as it is.
        http = runtime.settings.http
        settings = uvicorn.Config(
            app, http=protocol, log_config=None, lifespan="off", **forwarding(http.trusted_proxies)
        )
        return GracefulServer(settings, stopping, GRACE_S)

    with uvicorn_in_thread(server_for) as running:
        yield Client(running.port)


class Server(Client):
    """`python -m feedbackd -w ROOT serve --listen 127.0.0.1:PORT`, ready once /healthz answers.

    `log`: a file for the server's log (stderr), to read while it runs; `open_files`: its limit
    on open files, soft and hard. `listen_host` "0.0.0.0" serves every address of the machine;
    the tests still connect to 127.0.0.1 only, and name the address a user would in the Host
    header."""

    def __init__(
        self,
        root: Path,
        *,
        env: dict[str, str] | None = None,
        log: Path | None = None,
        open_files: int | None = None,
        listen_host: str = "127.0.0.1",
    ) -> None:
        must_be_marked_slow("feedbackd serve")
        super().__init__(free_port())
        self.log = log
        listen = f"{listen_host}:{self.port}"
        argv = [sys.executable, "-m", "feedbackd", "-w", str(root), "serve", "--listen", listen]
        log_file: IO[bytes] | None = None if log is None else log.open("wb")
        try:
            self.process = subprocess.Popen(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE if log_file is None else log_file,
                env={**os.environ, **(env or {})},
                preexec_fn=None if open_files is None else open_files_limit(open_files),
            )
        finally:
            if log_file is not None:
                log_file.close()  # the child has its own copy
        wait_for(self._healthy, what="the server to answer /healthz")

    def log_text(self) -> str:
        assert self.log is not None, "start the Server with log=PATH to read its log"
        return self.log.read_text(errors="replace")

    def _healthy(self) -> bool:
        if self.process.poll() is not None:
            _, err = self.process.communicate()
            said = err.decode() if err is not None else self.log_text()
            raise AssertionError(f"serve exited {self.process.returncode}: {said}")
        try:
            return self.request("GET", "/healthz").status == 200
        except OSError:
            return False

    def stop(self) -> int:
        """SIGTERM, as systemd stops the service; the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=20)
        finally:
            self.close()

    def close(self) -> None:
        """SIGTERM, and SIGKILL if it has not stopped after CLOSE_S: a server killed at once
        would lose what `make test`'s coverage saw of it."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.communicate(timeout=CLOSE_S)  # reads its pipes meanwhile
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


@dataclass
class SlowClient:
    sock: socket.socket
    opened: float
    closed: float | None = None


@dataclass
class SlowClients:
    """Loopback connections that each send part of a request head and then trickle one byte
    now and then, never finishing it: the slow-client attack, on non-blocking sockets."""

    port: int
    clients: list[SlowClient] = field(default_factory=list)
    selector: selectors.BaseSelector = field(default_factory=selectors.DefaultSelector)

    def open(self, count: int) -> None:
        start = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nX-Slow: ".encode()
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            sock.sendall(start)
            sock.setblocking(False)
            client = SlowClient(sock, time.monotonic())
            self.clients.append(client)
            self.selector.register(sock, selectors.EVENT_READ, client)

    def trickle(self) -> None:
        """One more byte of the head on every connection still open."""
        for client in self.still_open():
            try:
                client.sock.send(b"a")
            except OSError:  # reset by the server, or its buffer full: closed either way
                self._closed(client)

    def notice_closes(self, wait: float) -> None:
        """Record the connections the server closed (up to `wait` seconds for the first)."""
        for key, _ in self.selector.select(timeout=wait):
            client: SlowClient = key.data
            try:
                if client.sock.recv(4096):
                    continue  # the server answered something: the close comes next
            except BlockingIOError:
                continue
            except OSError:
                pass
            self._closed(client)

    def still_open(self) -> list[SlowClient]:
        return [client for client in self.clients if client.closed is None]

    def _closed(self, client: SlowClient) -> None:
        if client.closed is None:
            client.closed = time.monotonic()
            self.selector.unregister(client.sock)
            client.sock.close()

    def close(self) -> None:
        for client in self.still_open():
            self._closed(client)
        self.selector.close()
