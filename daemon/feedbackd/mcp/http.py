"""`/mcp` on `feedbackd serve`: the MCP server over Streamable HTTP, an ASGI app that launch.py
hands to the web face (built by the first request: mounted.py), whose guard puts SPEC section
12's rules (Host, Origin, token, the 1 MiB body) in front of it as in front of every route.

Stateless, with JSON answers: each POST is one exchange, answered as one JSON body, so no
session outlives its request and no stream stays open (the guard has read the body whole
before the route sees it). The write tools are offered only with `mcp.allow_writes: true`, and a
write waits for the workspace lock as long as an HTTP write does (http.write_wait_s).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings

from feedbackd.app.workspace.runtime import Runtime
from feedbackd.mcp.opening import Opener
from feedbackd.mcp.tools import build_server

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class McpHttp:
    """The ASGI app of `/mcp`. The SDK's session manager runs in a task of the server's event
    loop, started by the first request (the server runs no lifespan) and ended with the loop."""

    def __init__(self, runtime: Runtime, config: str | None, opener: Opener, path: str) -> None:
        allowed = runtime.settings.mcp.allow_writes is True
        server = build_server(opener, allowed, _without(runtime.workspace.root, config))
        # The web face's guard checks Host and Origin against the listen address and
        # http.public_names; the SDK's own check knows loopback names alone.
        unchecked = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        self.app = server.streamable_http_app(
            streamable_http_path=path,
            json_response=True,
            stateless_http=True,
            transport_security=unchecked,
        )
        self.manager = server.session_manager
        self._running: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._started()
        await self.app(scope, receive, send)

    async def _started(self) -> None:
        if self._running is None:
            self._running = asyncio.get_running_loop().create_task(self._run())
        ready = asyncio.ensure_future(self._ready.wait())
        await asyncio.wait([ready, self._running], return_when=asyncio.FIRST_COMPLETED)
        if not self._ready.is_set():
            ready.cancel()
            self._running.result()  # the manager failed to start: its error, to every request

    async def _run(self) -> None:
        async with self.manager.run():
            self._ready.set()
            await asyncio.Event().wait()  # until the server's loop ends and cancels it


def _without(root: Path, config: str | None) -> Callable[[str], str]:
    """A message without the server's folders: files named relative to the workspace, the
    `--config` file by its name (what git or the configuration loader quote names them whole)."""
    spelled = {f"{str(folder).rstrip('/')}/": "" for folder in (root, root.resolve())}
    if config:
        given = Path(config).expanduser()
        spelled |= {str(name): given.name for name in (given.absolute(), given.resolve(), given)}

    def told(message: str) -> str:
        for whole, shown in spelled.items():
            message = message.replace(whole, shown)
        return message

    return told
