"""The MCP server as hosts run it (SPEC section 16): `feedbackd mcp` as a process of its own, over
its standard input and output, and `/mcp` of a real `feedbackd serve`, each spoken to by the
SDK's client; a host that goes away in the middle of a call leaves nothing half written."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.cli_kit import PROGRAM
from tests.mcp_kit import answer, cli_json, refusal, run, stdio_server
from tests.web_kit import Server
from tests.workspace_kit import Site, draft

pytestmark = [pytest.mark.slow, pytest.mark.measured_processes]
TASK = "Write the title of a post on TypeScript generics"
EDIT = {"type": "edit", "field": "title", "original": "Generics", "corrected": "Typed generics"}
ALL_TOOLS = {
    *("lessons_for", "snippet", "recent_feedback", "list_ratings", "reputation", "why", "stats"),
    *("submit_rating", "record_feedback"),
}


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "ws")
    site.write("writer", "qi-1.json", draft({"title": "TypeScript generics"}))
    site.reconcile()
    site.cli("record", "writer", "--json", json.dumps(EDIT))
    return site


def test_feedbackd_mcp_serves_every_tool_over_standard_input_and_output(site: Site) -> None:
    async def main() -> list[Any]:
        async with Client(stdio_server(site.root)) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            refused = await client.call_tool("lessons_for", {"agent": "writr", "task": TASK})
            asked = await client.call_tool("lessons_for", {"agent": "writer", "task": TASK})
            read = await client.read_resource("feedbackd://agents/writer/snippet")
            return [names, refused, asked, read.contents[0]]

    names, refused, asked, snippet = run(main)
    assert names == ALL_TOOLS
    assert refusal(refused)[0] == "not_found"
    printed = cli_json(site.root, "prompt", "writer", "--for", "-", "--json", stdin=TASK)
    assert answer(asked) == printed
    assert snippet.text == site.prompt("writer")


def test_allow_writes_false_keeps_the_write_tools_from_a_stdio_host(site: Site) -> None:
    site.configure("mcp:\n  allow_writes: false\n")

    async def main() -> set[str]:
        async with Client(stdio_server(site.root)) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    assert run(main) == ALL_TOOLS - {"submit_rating", "record_feedback"}


def raw_server(root: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*PROGRAM, "-w", str(root), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )


def message(n: int, method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}).encode()


HELLO = b"\n".join(
    [
        message(0, "initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "a host that leaves", "version": "1"},
        }),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(),
    ]
)  # fmt: skip


def test_a_host_that_leaves_mid_call_leaves_each_write_done_once_or_not_at_all(
    site: Site,
) -> None:
    head = site.git("rev-parse", "HEAD").strip()
    notes = [f"leaving note {n}" for n in range(5)]
    asked = [
        message(n + 1, "tools/call", {
            "name": "record_feedback",
            "arguments": {"agent": "writer", "type": "rejection", "notes": note},
        })
        for n, note in enumerate(notes)
    ]  # fmt: skip
    with raw_server(site.root) as server:
        assert server.stdin and server.stdout and server.stderr
        server.stdin.write(HELLO + b"\n" + b"\n".join(asked) + b"\n")
        server.stdin.close()  # gone before any answer is read
        out, err = server.stdout.read(), server.stderr.read()  # until the server has exited
        assert server.wait(timeout=60) == 0, err.decode()
    for line in out.decode().splitlines():  # standard output carries the protocol alone
        assert json.loads(line)["jsonrpc"] == "2.0"
    stored = [e.get("notes") for e in site.feedback("writer")]
    assert all(stored.count(note) <= 1 for note in notes)
    recorded = [note for note in notes if note in stored]
    commits = site.git("rev-list", f"{head}..HEAD").split()
    assert len(commits) == len(recorded)
    assert site.git("status", "--porcelain") == ""


def test_a_host_whose_end_breaks_mid_call_leaves_the_server_gone_and_the_workspace_whole(
    site: Site,
) -> None:
    with raw_server(site.root) as server:
        assert server.stdin and server.stdout and server.stderr
        server.stdin.write(HELLO + b"\n")
        server.stdin.flush()
        assert json.loads(server.stdout.readline())["id"] == 0  # initialized
        server.stdin.write(message(1, "tools/call", {
            "name": "record_feedback",
            "arguments": {"agent": "writer", "type": "rejection", "notes": "cut short"},
        }) + b"\n")  # fmt: skip
        server.stdin.close()
        server.stdout.close()  # the host's end is gone: the answer has nowhere to go
        server.stderr.read()  # until the server has exited
    stored = [e.get("notes") for e in site.feedback("writer")]
    assert stored.count("cut short") <= 1
    assert site.git("status", "--porcelain") == ""


def test_mcp_on_a_real_feedbackd_serve(site: Site) -> None:
    server = Server(site.root)
    try:

        async def main() -> list[Any]:
            async with Client(f"http://127.0.0.1:{server.port}/mcp") as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                asked = await client.call_tool("lessons_for", {"agent": "writer", "task": TASK})
                return [names, asked]

        names, asked = run(main)
    finally:
        server.close()
    assert names == ALL_TOOLS - {"submit_rating", "record_feedback"}
    assert "Typed generics" in answer(asked)["text"]
