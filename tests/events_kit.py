"""Test helpers for webhooks: a real receiver on 127.0.0.1 that checks nothing itself and keeps
every request, answering as the test tells it (200, 500, a redirect, slowly, or not at all)."""

from __future__ import annotations

import base64
import http.server
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SECRET = "whsec_" + base64.b64encode(bytes(range(32))).decode()


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    status: int  # what the receiver answered


class Receiver:
    """What the receiver got, and how it answers next (`mode`)."""

    def __init__(self) -> None:
        self.received: list[Received] = []
        self.mode = "ok"  # ok | fail | redirect | slow | close
        self.slow_s = 30.0
        self.url = ""
        self.lock = threading.Lock()
        self.arrivals = 0  # requests begun, answered or not

    def bodies(self) -> list[bytes]:
        with self.lock:
            return [r.body for r in self.received]

    def ids(self) -> list[str]:
        with self.lock:
            return [r.headers["webhook-id"] for r in self.received]

    def accepted(self) -> list[Received]:
        """The requests it answered 2xx: the deliveries."""
        with self.lock:
            return [r for r in self.received if 200 <= r.status < 300]


def _handler(receiver: Receiver) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            mode = receiver.mode
            with receiver.lock:
                receiver.arrivals += 1
            if mode == "close":
                self.close_connection = True
                self.connection.close()
                return
            if mode == "slow":
                time.sleep(receiver.slow_s)
            status = {"ok": 200, "slow": 200, "redirect": 302}.get(mode, 500)
            headers = {k.lower(): v for k, v in self.headers.items()}
            with receiver.lock:
                receiver.received.append(Received(headers, body, status))
            self.send_response(status)
            if mode == "redirect":
                self.send_header("Location", "http://127.0.0.1:1/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@contextmanager
def receiving() -> Iterator[Receiver]:
    receiver = Receiver()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(receiver))
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


def hook_config(url: str, *, timeout_s: float = 5, extra: str = "", events: str = "") -> str:
    """feedbackd.yaml text with one hook whose secret is in `hook.secret` beside it."""
    chosen = f"\n      events: [{events}]" if events else ""
    return (
        "daemon:\n  settle_ms: 0\n"
        f"events:\n  webhooks:\n    - url: {url}\n      secret_file: hook.secret\n"
        f"      timeout_s: {timeout_s}{chosen}\n{extra}"
    )


def configure_hook(root: Path, url: str, **options: object) -> None:
    (root / "hook.secret").write_text(SECRET + "\n")
    (root / "feedbackd.yaml").write_text(hook_config(url, **options))  # type: ignore[arg-type]
