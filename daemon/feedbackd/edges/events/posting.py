"""One POST to a webhook receiver, over in `timeout_s` whatever the receiver does.

A socket timeout alone bounds each read, not the whole: a receiver that answers a byte every few
seconds would hold the sender for ever. So a timer shuts the connection down at the deadline,
which ends any read or write in flight. Redirects are not followed (a 3xx is a failed attempt:
the signed body goes only where it was configured to), and a receiver that closes the
connection early or answers anything but 2xx has not received the event.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

ANSWER_READ_LIMIT = 64 * 1024  # of a receiver's answer, read to let it finish; the rest dropped
USER_AGENT = "feedbackd-webhooks"


@dataclass(frozen=True)
class Answer:
    """How one attempt went: `ok` for a 2xx answer; else the status or what went wrong."""

    ok: bool
    status: int | None
    error: str | None = None


def post(url: str, body: bytes, headers: Mapping[str, str], timeout_s: float) -> Answer:
    """POST `body` to `url` with `headers`; never takes much longer than `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    try:
        connection = _connection(url, timeout_s)
    except ValueError as error:
        return Answer(False, None, f"bad url: {error}")
    cutter = threading.Timer(timeout_s, _cut, args=(connection,))
    cutter.daemon = True
    cutter.start()
    try:
        return _exchange(connection, url, body, headers)
    except (OSError, http.client.HTTPException) as error:
        if time.monotonic() >= deadline:
            return Answer(False, None, f"no answer within {timeout_s:g} s")
        return Answer(False, None, _describe(error))
    finally:
        cutter.cancel()
        connection.close()


def _connection(url: str, timeout_s: float) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    if not parts.hostname or parts.scheme not in {"http", "https"}:
        raise ValueError(url)
    if parts.scheme == "https":
        context = ssl.create_default_context()
        return http.client.HTTPSConnection(
            parts.hostname, parts.port, timeout=timeout_s, context=context
        )
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout_s)


def _exchange(
    connection: http.client.HTTPConnection, url: str, body: bytes, headers: Mapping[str, str]
) -> Answer:
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    sent = {
        **headers,
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Connection": "close",
    }
    connection.request("POST", target, body=body, headers=sent)
    response = connection.getresponse()
    text = response.read(ANSWER_READ_LIMIT)
    if 200 <= response.status < 300:
        return Answer(True, response.status)
    where = response.getheader("Location")
    said = text.decode("utf-8", errors="replace").strip().replace("\n", " ")[:200]
    detail = f" (redirect to {where}, not followed)" if where else (f": {said}" if said else "")
    return Answer(False, response.status, f"HTTP {response.status}{detail}")


def _cut(connection: http.client.HTTPConnection) -> None:
    """At the deadline: end whatever the connection is waiting for."""
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):  # closed meanwhile
            sock.shutdown(socket.SHUT_RDWR)


def _describe(error: BaseException) -> str:
    if isinstance(error, http.client.RemoteDisconnected):
        return "the receiver closed the connection without answering"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, TimeoutError | socket.timeout):
        return "timed out"
    return f"{type(error).__name__}: {error}"
