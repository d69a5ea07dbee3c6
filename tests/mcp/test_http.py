"""`/mcp` on the serve application (SPEC sections 12 and 16): the SDK's client speaking Streamable
HTTP to it in this process, behind the guard's Host, Origin, token and body rules; the write
tools only with mcp.allow_writes: true."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_kit import (
    BASE,
    answer,
    cli_json,
    http_client,
    over_http,
    refusal,
    run,
    served_app,
)
from tests.workspace_kit import Site, draft

TOKEN = "t0ken-" + "x" * 40
TASK = "Write the title of a post on TypeScript generics"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "ws")
    site.write("writer", "qi-1.json", draft({"title": "TypeScript generics"}))
    site.reconcile()
    site.cli("record", "writer", "--json", json.dumps(EDIT))
    return site


EDIT = {"type": "edit", "field": "title", "original": "Generics", "corrected": "Typed generics"}


def listed_and_asked(app: Any, headers: dict[str, str] | None = None) -> tuple[set[str], Any]:
    async def main() -> tuple[set[str], Any]:
        async with over_http(app, headers) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            asked = await client.call_tool("lessons_for", {"agent": "writer", "task": TASK})
            return names, asked

    return run(main)


def test_over_http_the_read_tools_answer_as_the_commands_and_no_write_tool_is_offered(
    site: Site,
) -> None:
    names, asked = listed_and_asked(served_app(site.root))
    assert "lessons_for" in names and not {"submit_rating", "record_feedback"} & names
    printed = cli_json(site.root, "prompt", "writer", "--for", "-", "--json", stdin=TASK)
    assert answer(asked) == printed and "Typed generics" in printed["text"]


def test_with_allow_writes_over_http_a_write_tool_records_through_the_pipeline(site: Site) -> None:
    site.configure("mcp:\n  allow_writes: true\n")

    async def main() -> Any:
        async with over_http(served_app(site.root)) as client:
            edit = {**EDIT, "corrected": "Generics, typed"}
            return await client.call_tool("record_feedback", {"agent": "writer", **edit})

    entry = answer(run(main))
    assert site.feedback("writer")[-1] == entry
    assert site.git("log", "-1", "--format=%s").strip() == "record(writer): edit of title"


def post(app: Any, body: bytes, headers: dict[str, str]) -> Any:
    async def main() -> Any:
        async with http_client(app) as http:
            return await http.post(f"{BASE}/mcp", content=body, headers={**ACCEPT, **headers})

    return run(main)


def test_a_foreign_host_is_refused_421_and_a_foreign_origin_403(site: Site) -> None:
    app = served_app(site.root)
    body = json.dumps(INITIALIZE).encode()
    rebound = post(app, body, {"Host": "evil.example"})
    assert (rebound.status_code, rebound.json()["error"]) == (421, "misdirected_request")
    forged = post(app, body, {"Origin": "https://evil.example"})
    assert (forged.status_code, forged.json()["error"]) == (403, "forbidden")
    fine = post(app, body, {})
    assert fine.status_code == 200 and fine.json()["result"]["serverInfo"]["name"] == "feedbackd"


def test_a_body_over_a_mebibyte_is_refused_413(site: Site) -> None:
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
    arguments = {"agent": "writer", "task": "x" * (1 << 20)}
    body = json.dumps({**call, "params": {"name": "lessons_for", "arguments": arguments}})
    refused = post(served_app(site.root), body.encode(), {})
    assert (refused.status_code, refused.json()["error"]) == (413, "too_large")


def test_with_a_token_mcp_needs_it_and_answers_401_without(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FEEDBACKD_HTTP_TOKEN", TOKEN)
    app = served_app(site.root)
    refused = post(app, json.dumps(INITIALIZE).encode(), {})
    assert (refused.status_code, refused.json()["error"]) == (401, "unauthorized")
    wrong = post(app, json.dumps(INITIALIZE).encode(), {"Authorization": "Bearer " + "y" * 46})
    assert wrong.status_code == 401
    names, asked = listed_and_asked(app, {"Authorization": f"Bearer {TOKEN}"})
    assert "lessons_for" in names and answer(asked)["agent"] == "writer"


def test_a_task_of_a_megabyte_is_answered_over_http(site: Site) -> None:
    words = "typescript generics title post "
    task = (words * (1_000_000 // len(words) + 1))[:1_000_000]

    async def main() -> Any:
        async with over_http(served_app(site.root)) as client:
            return await client.call_tool("lessons_for", {"agent": "writer", "task": task})

    assert "Typed generics" in answer(run(main))["text"]


def test_a_refusal_over_http_names_no_folder_of_the_server(site: Site) -> None:
    app = served_app(site.root)
    site.configure("prompt:\n  max_examples: lots\n")  # broken after the server started

    async def main() -> Any:
        async with over_http(app) as client:
            return await client.call_tool("why", {"agent": "writer"})

    code, message = refusal(run(main))
    assert code == "config_error" and "feedbackd.yaml" in message
    assert str(site.root) not in message and str(site.root.resolve()) not in message
