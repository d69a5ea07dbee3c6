"""`/mcp` as launch.py hands it to the web face: the MCP server over HTTP is built by the first
request to `/mcp`, in a worker thread. The SDK takes most of a second to import and tens of
megabytes to hold, so `feedbackd serve` starts, answers `/healthz` and runs for a panel's users
as it does without it, and a server nobody asks over MCP never loads it."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import anyio.to_thread

from feedbackd.app.workspace.runtime import Runtime
from feedbackd.mcp.opening import Opener

if TYPE_CHECKING:
    from feedbackd.mcp.http import McpHttp, Receive, Scope, Send

PATH = "/mcp"


class LazyMcp:
    """An ASGI app that builds the MCP face's (mcp/http.py) when first asked, then hands it
    every request."""

    def __init__(self, runtime: Runtime, config: str | None) -> None:
        self.runtime = runtime
        self.config = config
        # Opened now, beside the runtime: a configuration edited before the first request is
        # read again by that request, as by every later one.
        self.opener = Opener(runtime, config, waiting_as_http)
        self._app: McpHttp | None = None
        self._building = asyncio.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await (await self._built())(scope, receive, send)

    async def _built(self) -> McpHttp:
        async with self._building:  # one build, however many requests come first
            if self._app is None:
                self._app = await anyio.to_thread.run_sync(self._build)
        return self._app

    def _build(self) -> McpHttp:
        from feedbackd.mcp.http import McpHttp

        return McpHttp(self.runtime, self.config, self.opener, PATH)


def waiting_as_http(runtime: Runtime) -> Runtime:
    """A write over HTTP waits for the workspace lock as long as the HTTP API's do."""
    return runtime.waiting_at_most(runtime.settings.http.write_wait_s)
