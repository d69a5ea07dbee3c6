"""Test helpers: `feedbackd serve` as a real process on a free loopback port, spoken to in HTTP."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.daemon_kit import wait_for


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


class Server:
    """`python -m feedbackd -w ROOT serve --listen 127.0.0.1:PORT`, ready once /healthz answers.

    `listen_host` "0.0.0.0" serves every address of the machine; the tests still connect to
    127.0.0.1 only, and name the address a user would in the Host header."""

    def __init__(
        self, root: Path, *, env: dict[str, str] | None = None, listen_host: str = "127.0.0.1"
    ) -> None:
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        listen = f"{listen_host}:{self.port}"
        argv = [sys.executable, "-m", "feedbackd", "-w", str(root), "serve", "--listen", listen]
        self.process = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        wait_for(self._healthy, what="the server to answer /healthz")

    def _healthy(self) -> bool:
        if self.process.poll() is not None:
            _, err = self.process.communicate()
            raise AssertionError(f"serve exited {self.process.returncode}: {err.decode()}")
        try:
            return self.request("GET", "/healthz").status == 200
        except OSError:
            return False

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

    def stop(self) -> int:
        """SIGTERM, as systemd stops the service; the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=20)
        finally:
            self.close()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
