"""`feedbackd mcp`: the MCP server over standard input and output, the way MCP hosts start one
(`{"command": "feedbackd", "args": ["-w", "/path/to/workspace", "mcp"]}`). Standard output
carries the protocol alone: log lines go to standard error."""

from __future__ import annotations

import anyio

from feedbackd.app.workspace.runtime import Runtime
from feedbackd.mcp.opening import Opener
from feedbackd.mcp.tools import build_server


def serve_stdio(runtime: Runtime, config: str | None) -> int:
    """Serve until the host closes standard input; the exit code. The write tools are offered
    unless mcp.allow_writes is false: the host that started the server is its user."""
    allowed = runtime.settings.mcp.allow_writes
    server = build_server(Opener(runtime, config, _as_is), allow_writes=allowed is not False)
    anyio.run(server.run_stdio_async)
    return 0


def _as_is(runtime: Runtime) -> Runtime:
    return runtime
