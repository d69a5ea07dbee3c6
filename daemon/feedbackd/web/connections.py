"""Open connections under slow and idle clients (SPEC section 12): a connection that has not sent a
whole request head within 10 s is closed, so is one whose request body has not arrived whole
within 30 s of its head, or that has taken nothing of its answer for 30 s; and at most
`http.max_connections` are open at once.

uvicorn closes a keep-alive connection that stays silent, but not one that starts a request head
(or a body: `Content-Length: 1000000`, or a chunk of 2**64 bytes) and trickles it a byte at a
time, nor one whose client stops reading its answer; and it accepts connections until the process
runs out of file descriptors (then every request fails, `/healthz` included). The h11 protocol
below adds these limits to uvicorn's own.

At the cap, a new connection makes room by closing the connection that has waited longest for its
request (its head or its body): a slow client is evicted, while a real one sends its request at
once and is served. Only when every open connection is busy with a request is the new one refused,
with a 503.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import resource
import time

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from feedbackd.core.websafety import SECURITY_HEADERS
from feedbackd.core.wording import counted

log = logging.getLogger("feedbackd")
HEAD_TIMEOUT_S = 10.0
BODY_TIMEOUT_S = 30.0  # a 1 MiB body (the most taken) at 300 kbit/s
SEND_TIMEOUT_S = 30.0  # how long a client may take none of its answer
# Descriptors the server needs besides its connections: the listening socket, git helpers and
# their pipes, the workspace's files, logs.
OTHER_FILES = 64
REFUSAL_LOG_EVERY_S = 60.0
MIN_BACKLOG, MAX_BACKLOG = 16, 2048  # 2048: uvicorn's own default


class Connections:
    """What the open connections share: the cap, the timeouts, and which of them are waiting
    for a request (its head or its body), longest-waiting first."""

    def __init__(
        self,
        max_open: int,
        head_timeout_s: float = HEAD_TIMEOUT_S,
        body_timeout_s: float = BODY_TIMEOUT_S,
        send_timeout_s: float = SEND_TIMEOUT_S,
    ) -> None:
        self.max_open = max_open
        self.head_timeout_s = head_timeout_s
        self.body_timeout_s = body_timeout_s
        self.send_timeout_s = send_timeout_s
        self.open: set[LimitedH11Protocol] = set()
        # A dict keeps insertion order: the first key has waited longest.
        self.waiting: dict[LimitedH11Protocol, None] = {}
        self.refusals = 0  # since the log last said so
        self._said_at = -REFUSAL_LOG_EVERY_S

    def protocol(self) -> type[H11Protocol]:
        """The protocol class uvicorn builds for each connection (`uvicorn.Config(http=...)`)."""
        connections = self

        class Protocol(LimitedH11Protocol):
            shared = connections

        return Protocol

    def refused(self) -> None:
        """Count a refused connection; say so in the log at most once a minute, so that a flood
        of them does not flood the log too."""
        self.refusals += 1
        now = time.monotonic()
        if now - self._said_at < REFUSAL_LOG_EVERY_S:
            return
        log.warning(
            "refused %s: all %d open connections were busy with requests "
            "(raise http.max_connections if the machine can take more)",
            counted(self.refusals, "connection"),
            self.max_open,
        )
        self.refusals, self._said_at = 0, now

    def make_room(self) -> bool:
        """Close the connection that has waited longest for its request; False if every open
        connection is busy with a request."""
        oldest = next(iter(self.waiting), None)
        if oldest is None:
            return False
        oldest.close_connection()
        return True


class LimitedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the request and send timeouts and the cap on open
    connections."""

    shared: Connections
    _timer: asyncio.TimerHandle | None = None
    _awaited: str | None = None  # "head" or "body": what the running clock waits for
    _send_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.shared.open.add(self)
        if len(self.shared.open) > self.shared.max_open and not self.shared.make_room():
            self._refuse()
            return
        self._wait_for("head")

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow_state()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow_state()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        self._stop_send_clock()
        self.shared.open.discard(self)
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        """The client has not taken what was sent: start the send clock (a client that reads
        on stops it, whatever it took)."""
        super().pause_writing()
        if self._send_timer is None:
            self._send_timer = self.loop.call_later(self.shared.send_timeout_s, self._not_read)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._stop_send_clock()

    def close_connection(self) -> None:
        """Close this connection now; it no longer counts as open."""
        self._stop_waiting()
        self.shared.open.discard(self)
        if self.transport.is_closing():
            return
        with contextlib.suppress(h11.LocalProtocolError):  # h11 may already be in an end state
            self.conn.send(h11.ConnectionClosed())
        self.transport.close()

    def _follow_state(self) -> None:
        """Waiting for a head between requests (the first, or the next on a keep-alive
        connection), for the body of a request whose head has come, or busy while a request
        is being answered."""
        cycle = self.cycle
        if self.transport.is_closing():
            self._stop_waiting()
        elif cycle is None or cycle.response_complete:
            self._wait_for("head")
        elif cycle.more_body and not cycle.response_started:
            self._wait_for("body")
        else:
            self._stop_waiting()

    def _wait_for(self, what: str) -> None:
        """Start the clock for the head or the body, unless it is already running for it
        (trickled bytes do not reset it). A connection keeps its place among those waiting
        from its head to its body: it has waited that long for a whole request."""
        if self._awaited == what:
            return
        self._stop_clock()
        self.shared.waiting.setdefault(self, None)
        limit = self.shared.head_timeout_s if what == "head" else self.shared.body_timeout_s
        self._awaited = what
        self._timer = self.loop.call_later(limit, self._too_slow, what, limit)

    def _stop_waiting(self) -> None:
        self.shared.waiting.pop(self, None)
        self._stop_clock()

    def _stop_clock(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._awaited = None, None

    def _stop_send_clock(self) -> None:
        if self._send_timer is not None:
            self._send_timer.cancel()
            self._send_timer = None

    def _too_slow(self, what: str, limit: float) -> None:
        self._timer, self._awaited = None, None
        log.debug(
            "closed a connection from %s: no whole request %s within %g s", self.client, what, limit
        )
        self.close_connection()

    def _not_read(self) -> None:
        """Cut the connection: its client took nothing of its answer for the send timeout. An
        abort, as a close would wait for the unread answer to leave first."""
        self._send_timer = None
        log.debug(
            "closed a connection from %s: it read nothing of its answer for %g s",
            self.client,
            self.shared.send_timeout_s,
        )
        self._stop_waiting()
        self.shared.open.discard(self)
        self.transport.abort()

    def send_400_response(self, msg: str) -> None:
        """A request that is not HTTP (h11 could not parse its head): uvicorn answers it in
        plain text; here it is the JSON error every other refusal is."""
        message = f"the request is not valid HTTP/1.1 ({msg.rstrip('.')})"
        self.transport.write(error_reply(400, "Bad Request", "bad_request", message))
        self.close_connection()

    def _refuse(self) -> None:
        self.shared.refused()
        self.transport.write(busy_response(self.shared.max_open))
        self.close_connection()


def busy_response(max_open: int) -> bytes:
    """A whole HTTP response, sent before the request is read: the server is full."""
    message = f"all {max_open} connections are busy with requests; try again shortly"
    return error_reply(503, "Service Unavailable", "busy", message, retry_after_s=1)


def error_reply(
    status: int, reason: str, code: str, message: str, *, retry_after_s: int | None = None
) -> bytes:
    """A whole HTTP response in the shape of every other error, with the security headers, for
    refusals made below the application (which never sees these connections)."""
    body = json.dumps({"error": code, "message": message}).encode()
    lines = [
        f"HTTP/1.1 {status} {reason}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        *([f"Retry-After: {retry_after_s}"] if retry_after_s is not None else []),
        "Connection: close",
    ]
    head = "".join(line + "\r\n" for line in lines).encode("ascii")
    security = b"".join(name + b": " + value + b"\r\n" for name, value in SECURITY_HEADERS)
    return head + security + b"\r\n" + body


def raise_open_file_limit(max_open: int) -> int:
    """Raise this process's soft limit on open files to its hard limit (systemd's LimitNOFILE=
    sets both), say so if the connection cap still does not fit under it, and return it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (OSError, ValueError):  # a sandbox may forbid it: the soft limit stays
            pass
    if soft == resource.RLIM_INFINITY:
        return MAX_BACKLOG * 4 + max_open + OTHER_FILES
    if max_open + OTHER_FILES + MIN_BACKLOG * 4 > soft:
        log.warning(
            "http.max_connections is %d but this process may open only %d files: lower "
            "http.max_connections or raise the limit (LimitNOFILE= in the unit, ulimit -n)",
            max_open,
            soft,
        )
    return soft


def accept_backlog(max_open: int, open_files: int) -> int:
    """How many pending connections to accept in one go (uvicorn's backlog).

    asyncio accepts up to `backlog` connections at once, and a connection closed to make room
    gives its descriptor back a few turns of the event loop later, so during a burst up to about
    three batches are open beyond the cap: the batch is sized so that they still fit under the
    limit on open files."""
    spare = (open_files - max_open - OTHER_FILES) // 4
    return max(MIN_BACKLOG, min(MAX_BACKLOG, spare))
