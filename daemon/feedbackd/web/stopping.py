"""Stopping on SIGTERM without a false answer (SPEC section 12): after SIGTERM, a write in flight
either completes and answers truthfully, or answers 503 having changed nothing.

uvicorn's own stop cancels every request still running after its grace. A write runs in a worker
thread, which cancelling cannot stop: the commit went through, and the client was told 500.
Here a stop lets reads run for the grace and then cuts them (503 `stopping`), but waits for the
writes in flight to finish and answer, however long they take (the unit's TimeoutStopSec bounds
that). A write that reaches the routes once the stop has begun answers 503 `stopping`, with
Retry-After, before it touches anything.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from typing import Any

import uvicorn
from starlette.responses import JSONResponse

from feedbackd.core.wording import counted
from feedbackd.web.guard import SAFE_METHODS, ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("feedbackd")
RETRY_AFTER_S = 10  # long enough for a service manager to start the server again
DRAIN_S = 1.0  # after the last write answered, how long its connection may take to close


class Stopping:
    """Whether a stop has begun, and the writes in flight (each request's own task)."""

    def __init__(self) -> None:
        self.begun = False
        self.writes: set[asyncio.Task[Any]] = set()

    def gate(self, app: ASGIApp) -> ASGIApp:
        """ASGI middleware that keeps count of the writes, refuses new ones once the stop has
        begun, and answers 503 for a read cut short by the stop."""

        async def gated(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
            elif scope["method"] in SAFE_METHODS:
                await self._read(app, scope, receive, send)
            else:
                await self._write(app, scope, receive, send)

        return gated

    async def _write(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        task = asyncio.current_task()
        assert task is not None, "uvicorn answers each request in a task of its own"
        if self.begun:
            await stopping_response()(scope, receive, send)
            return
        self.writes.add(task)
        try:
            await app(scope, receive, send)
        finally:
            self.writes.discard(task)

    async def _read(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await app(scope, receive, watched)
        except asyncio.CancelledError:
            if not self.begun:
                raise
            # Cut at the end of the grace: the task ends here, with an answer if none began.
            if not started:
                await stopping_response()(scope, receive, send)


def stopping_response() -> JSONResponse:
    message = f"the server is stopping; send the request again in {RETRY_AFTER_S} s"
    return JSONResponse(
        {"error": "stopping", "message": message},
        status_code=503,
        headers={"Retry-After": str(RETRY_AFTER_S), "Connection": "close"},
    )


class GracefulServer(uvicorn.Server):
    """uvicorn's server, whose stop waits for the writes in flight (see the module's text)."""

    def __init__(self, config: uvicorn.Config, stopping: Stopping, grace_s: float) -> None:
        super().__init__(config)
        self.stopping = stopping
        self.grace_s = grace_s

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.stopping.begun = True
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()  # idle ones close now, busy ones after their answer
        try:
            async with asyncio.timeout(self.grace_s):
                await self._until(lambda: bool(self.server_state.connections or self._tasks()))
        except TimeoutError:
            self._cut_reads()
            await self._until(lambda: bool(self.stopping.writes))
            await self._drain()
        if not self.force_exit:
            await self.lifespan.shutdown()

    def _tasks(self) -> set[asyncio.Task[None]]:
        return {task for task in self.server_state.tasks if not task.done()}

    def _cut_reads(self) -> None:
        reads = self._tasks() - self.stopping.writes
        if reads or self.stopping.writes:
            log.info(
                "stopping: the %g s grace is over; %s cut, waiting for %s in flight to finish",
                self.grace_s,
                counted(len(reads), "read"),
                counted(len(self.stopping.writes), "write"),
            )
        for task in reads:
            task.cancel()

    async def _until(self, busy: Callable[[], bool]) -> None:
        """Wait while busy() holds; a second Ctrl-C (uvicorn's force_exit) ends the wait."""
        while busy() and not self.force_exit:
            await asyncio.sleep(0.05)

    async def _drain(self) -> None:
        """Let the last answers leave before the process ends (bounded: a client that does not
        read its answer does not hold the stop)."""
        try:
            async with asyncio.timeout(DRAIN_S):
                await self._until(lambda: bool(self._tasks()))
        except TimeoutError:
            pass
