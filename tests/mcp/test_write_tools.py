"""The MCP server's write tools (SPEC section 16): submit_rating and record_feedback take the same
lock and pipeline as the commands, make the same files and commits, refuse a repeated
transaction and a busy workspace with the command line's codes, and write nothing twice when a
hundred calls come at once."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from feedbackd.app.commands import queries
from feedbackd.edges.instance import WriteLock
from tests.mcp_kit import answer, cli_json, in_process, refusal, run
from tests.workspace_kit import Site, draft

RATING = {
    "provider_agent": "provider-1",
    "skill_id": "summarise",
    "rating": 4,
    "result_quality": "good",
    "would_reuse": True,
    "cost_value_ratio": "fair",
    "requester_agent": "buyer-1",
}
EDIT = {"type": "edit", "field": "title", "original": "Old", "corrected": "New"}


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "ws")
    site.write("writer", "qi-1.json", draft({"title": "Old title"}))
    site.reconcile()
    return site


def rating(**changes: Any) -> dict[str, Any]:
    return {**RATING, "transaction_id": str(uuid.uuid4()), **changes}


def calls(root: Path, *asked: tuple[str, dict[str, Any]], wait_s: float | None = None) -> list[Any]:
    """Each (tool, arguments) called in turn on one connection; their results."""

    async def main() -> list[Any]:
        async with in_process(root, wait_s=wait_s) as client:
            return [await client.call_tool(tool, arguments) for tool, arguments in asked]

    return run(main)


def test_record_feedback_stores_and_commits_the_entry_as_record_does(site: Site) -> None:
    (result,) = calls(site.root, ("record_feedback", {"agent": "writer", **EDIT}))
    entry = answer(result)
    assert entry["id"].startswith("fb-") and {k: entry[k] for k in EDIT} == EDIT
    assert site.feedback("writer") == [entry]
    assert site.git("log", "-1", "--format=%s").strip() == "record(writer): edit of title"
    printed = cli_json(site.root, "record", "writer", "--json", json.dumps(EDIT))
    assert set(printed) == set(entry)  # the command's entry: the same keys, its own id and time
    assert site.git("status", "--porcelain") == ""


def test_record_feedback_refuses_what_record_refuses(site: Site) -> None:
    head = site.git("rev-parse", "HEAD")
    missing, unknown, bad_id = calls(
        site.root,
        ("record_feedback", {"agent": "writer", "type": "edit", "original": "a"}),
        ("record_feedback", {"agent": "writr", **EDIT}),
        ("record_feedback", {"agent": "writer", "queueItemId": "../x", **EDIT}),
    )
    assert refusal(missing) == ("invalid_feedback", "a edit needs `corrected`")
    code, message = refusal(unknown)
    assert code == "not_found" and "did you mean writer?" in message
    assert refusal(bad_id)[0] == "invalid_id"
    assert site.git("rev-parse", "HEAD") == head and site.feedback("writer") == []


def test_submit_rating_answers_as_post_api_feedback_and_refuses_a_repeat(site: Site) -> None:
    sent = rating()
    first, again, other = calls(
        site.root,
        ("submit_rating", {"rating": sent}),
        ("submit_rating", {"rating": sent}),
        ("submit_rating", {"rating": rating(rating=5)}),
    )
    received = answer(first)
    assert received["feedback_id"] == sent["transaction_id"]
    assert received["received_at"].endswith("Z") and len(received["commit"]) == 40
    assert refusal(again)[0] == "feedback_already_submitted"
    assert answer(other)["feedback_id"] != sent["transaction_id"]  # the server goes on
    month_files = list((site.agent("provider-1") / "ratings" / "summarise").glob("*.jsonl"))
    lines = [json.loads(line) for line in month_files[0].read_text().splitlines()]
    assert [line["transaction_id"] for line in lines].count(sent["transaction_id"]) == 1


@pytest.mark.parametrize(
    "changes",
    [{"rating": 9}, {"result_quality": "meh"}, {"surprise": 1}, {"requester_agent": None}],
)
def test_an_invalid_rating_is_invalid_feedback_naming_each_problem(
    site: Site, changes: dict[str, Any]
) -> None:
    sent = {k: v for k, v in rating(**changes).items() if v is not None}
    (result,) = calls(site.root, ("submit_rating", {"rating": sent}))
    code, message = refusal(result)
    assert code == "invalid_feedback" and message
    assert not (site.agent("provider-1") / "ratings").exists()


def test_a_locked_workspace_is_a_locked_tool_error_having_changed_nothing(site: Site) -> None:
    head = site.git("rev-parse", "HEAD")
    with WriteLock(site.root / ".feedbackd"):  # a daemon pass, a command: another writer
        recorded, rated = calls(
            site.root,
            ("record_feedback", {"agent": "writer", **EDIT}),
            ("submit_rating", {"rating": rating()}),
            wait_s=0.3,
        )
    assert refusal(recorded)[0] == "locked" and refusal(rated)[0] == "locked"
    assert site.git("rev-parse", "HEAD") == head and site.git("status", "--porcelain") == ""
    (after,) = calls(site.root, ("record_feedback", {"agent": "writer", **EDIT}))
    assert answer(after)["type"] == "edit"


def test_a_hundred_calls_at_once_are_each_answered_and_written_once(site: Site) -> None:
    notes = [f"note {n}" for n in range(20)]
    results: dict[int, Any] = {}

    async def one(client: Any, n: int) -> None:
        if n < len(notes):
            asked = {"agent": "writer", "type": "rejection", "notes": notes[n]}
            results[n] = await client.call_tool("record_feedback", asked)
        else:
            results[n] = await client.call_tool("recent_feedback", {"agent": "writer"})

    async def main() -> None:
        async with in_process(site.root) as client, anyio.create_task_group() as group:
            for n in range(100):
                group.start_soon(one, client, n)

    run(main)
    assert len(results) == 100 and not [n for n, r in results.items() if r.is_error]
    stored = [entry["notes"] for entry in site.feedback("writer")]
    assert sorted(stored) == sorted(notes)  # each once
    assert site.git("status", "--porcelain") == ""
    subjects = site.git("log", "--format=%s").splitlines()
    assert sum(subject.startswith("record(writer)") for subject in subjects) == len(notes)


def test_an_edited_configuration_counts_at_the_next_call(site: Site) -> None:
    for n in range(3):
        edit = {**EDIT, "original": f"Old {n}", "corrected": f"New {n}"}
        site.cli("record", "writer", "--json", json.dumps(edit))

    async def main() -> list[Any]:
        async with in_process(site.root) as client:
            before = await client.call_tool("snippet", {"agent": "writer"})
            site.configure("prompt:\n  max_examples: 1\n")
            after = await client.call_tool("snippet", {"agent": "writer"})
            return [before, after]

    before, after = run(main)
    assert len(answer(before)["examples"]) == 3 and len(answer(after)["examples"]) == 1
    (out_of_range,) = calls(
        site.root, ("lessons_for", {"agent": "writer", "task": "x", "limit": 101})
    )
    assert refusal(out_of_range) == ("usage", "limit 101 is out of range (give 0 to 100 examples)")


@pytest.mark.parametrize(
    ("raised", "said"),
    [
        (OSError(28, "No space left on device"), "disk_full"),
        (OSError(5, "Input/output error"), "internal"),
        (RuntimeError("a bug"), "internal"),
    ],
)
def test_a_failure_beyond_feedbackd_refusals_is_a_tool_error_and_the_server_goes_on(
    site: Site, monkeypatch: pytest.MonkeyPatch, raised: Exception, said: str
) -> None:
    def failing(*args: Any) -> Any:
        raise raised

    monkeypatch.setattr(queries, "recent_feedback", failing)
    failed, fine = calls(
        site.root,
        ("recent_feedback", {"agent": "writer"}),
        ("why", {"agent": "writer"}),
    )
    assert refusal(failed)[0] == said
    assert answer(fine)["agent"] == "writer"
