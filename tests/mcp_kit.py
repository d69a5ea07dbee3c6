"""Test helpers for the MCP face: the SDK's own client, connected to the server in process (the
tools, their answers and refusals), to `/mcp` of the serve application (the HTTP rules in front
of it), or to a real `feedbackd mcp` process over its standard input and output."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.websafety import parse_listen
from feedbackd.mcp.mounted import PATH, LazyMcp
from feedbackd.mcp.opening import Opener
from feedbackd.mcp.tools import build_server
from feedbackd.web.server import application
from tests.cli_kit import run_cli

T = TypeVar("T")
LISTEN = "127.0.0.1:8787"
BASE = f"http://{LISTEN}"


def in_process(root: Path, *, allow_writes: bool = True, wait_s: float | None = None) -> Client:
    """The SDK's client on the server of the workspace at `root`, in this process; `wait_s`: how
    long a write waits for the workspace lock."""
    runtime = Runtime.open(str(root), None)

    def adjust(opened: Runtime) -> Runtime:
        return opened if wait_s is None else opened.waiting_at_most(wait_s)

    return Client(build_server(Opener(runtime, None, adjust), allow_writes))


def run(main: Callable[[], Awaitable[T]]) -> T:
    """An async test body, run to its end."""
    return anyio.run(main)


def served_app(root: Path) -> Any:
    """What `feedbackd -w ROOT serve` answers with on 127.0.0.1:8787, `/mcp` mounted as
    launch.py mounts it, behind the guard."""
    runtime = Runtime.open(str(root), None)
    app, _ = application(
        runtime, None, parse_listen(LISTEN, "--listen"), {PATH: LazyMcp(runtime, None)}
    )
    return app


def http_client(app: Any, headers: dict[str, str] | None = None) -> httpx2.AsyncClient:
    """An HTTP client that sends its requests to `app` in this process (no socket)."""
    transport = httpx2.ASGITransport(app=app)
    return httpx2.AsyncClient(transport=transport, base_url=BASE, headers=headers or {})


@asynccontextmanager
async def over_http(app: Any, headers: dict[str, str] | None = None) -> AsyncIterator[Client]:
    """The SDK's client speaking Streamable HTTP to `/mcp` of `app`."""
    async with http_client(app, headers) as http:
        transport = streamable_http_client(BASE + PATH, http_client=http)
        async with Client(transport) as client:
            yield client


def stdio_server(root: Path, *args: str) -> StdioServerParameters:
    """`python -m feedbackd -w ROOT mcp` as a host starts it."""
    argv = ["-m", "feedbackd", "-w", str(root), *args, "mcp"]
    # The whole environment (the SDK passes on a few variables only): the test's git identity.
    return StdioServerParameters(command=sys.executable, args=argv, env=dict(os.environ))


def cli_json(root: Path, *argv: str, stdin: str | None = None) -> Any:
    """What `feedbackd -w ROOT ARGV` prints as JSON (run in this process)."""
    done = run_cli(["-w", str(root), *argv], stdin=stdin)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def answer(result: CallToolResult) -> dict[str, Any]:
    """A tool's structured answer; fails the test on a tool error."""
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def refusal(result: CallToolResult) -> tuple[str, str]:
    """A tool error's code and message, checked to be said as text the same way."""
    assert result.is_error, result.structured_content
    said = result.structured_content or {}
    text = result.content[0].text  # type: ignore[union-attr]
    assert text == f"{said['error']}: {said['message']}"
    return said["error"], said["message"]
