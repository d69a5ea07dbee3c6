"""Agent memory: what a requester remembers of its rentals, and how memories are listed."""

from __future__ import annotations

import json
import logging
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from feedbackd.app.workspace.agentfiles import add_memory, list_memory, write_rental_memories
from feedbackd.core.errors import FeedbackdError, InvalidId
from feedbackd.core.ratings.memory import CASES, ENTITIES, PATTERNS, MemoryRecord, rental_memories
from feedbackd.core.ratings.records import Rating, parse_rating
from feedbackd.core.timeutil import iso_ms
from feedbackd.core.workspacepaths import Workspace

NOW = datetime(2026, 4, 8, 12, 0, tzinfo=UTC)


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    ws = Workspace(tmp_path / "ws")
    ws.agents_dir.mkdir(parents=True)
    return ws


def rental(stars: int = 5, quality: str = "excellent", **extra: Any) -> Rating:
    fields = {
        "transaction_id": str(uuid.uuid4()),
        "provider_agent": "heavylift-chengwen",
        "skill_id": "claude-code-run",
        "rating": stars,
        "latency_ms": 28500,
        "result_quality": quality,
        "would_reuse": stars >= 3,
        "cost_value_ratio": "great",
        "timestamp": iso_ms(NOW),
        **extra,
    }
    return parse_rating(fields, requester="buyer-1", now=NOW)


def test_a_successful_rental_is_a_case_of_importance_0_8_and_a_profile_of_0_7() -> None:
    r = rental(quality_details="Code executed correctly")
    (agent_a, case), (agent_b, profile) = rental_memories(r, NOW)
    assert agent_a == agent_b == "buyer-1"
    assert (case.category, case.importance, case.subject) == (CASES, 0.8, "heavylift-chengwen")
    assert case.id == f"case-{r.transaction_id}"
    assert case.source == f"rating:{r.transaction_id}"
    assert case.content == (
        "Rental of claude-code-run from heavylift-chengwen on 2026-04-08: rating 5/5, quality"
        " excellent (Code executed correctly), cost/value great, would reuse, latency 28500 ms."
    )
    assert (profile.category, profile.importance) == (ENTITIES, 0.7)
    assert profile.subject == "heavylift-chengwen"
    assert profile.content.startswith("Provider heavylift-chengwen: 1 rental (claude-code-run)")
    assert profile.createdAt == "2026-04-08T12:00:00.000Z"


@pytest.mark.parametrize(("stars", "quality"), [(2, "good"), (5, "poor"), (4, "failed")])
def test_a_failed_rental_is_a_case_of_importance_0_9(stars: int, quality: str) -> None:
    (_, case), _profile = rental_memories(rental(stars, quality), NOW)
    assert case.importance == 0.9
    assert case.content.startswith("Failed rental of claude-code-run")


def test_the_profile_sums_up_earlier_rentals_of_the_same_provider() -> None:
    earlier = [rental(2, "poor", cost_value_ratio="overpriced"), rental(4, "good")]
    latest = rental(5, "excellent", skill_id="web-research")
    _case, (_, profile) = rental_memories(latest, NOW, earlier=[*earlier, latest])
    assert profile.content == (
        "Provider heavylift-chengwen: 3 rentals (claude-code-run, web-research), average rating"
        " 3.7/5, would reuse 2 of 3, failed 1, overpriced 1. Last: web-research on 2026-04-08,"
        " rating 5/5, excellent, cost/value great."
    )


def test_rental_memories_are_written_to_the_requesters_memory(workspace: Workspace) -> None:
    r = rental()
    paths = write_rental_memories(workspace, r, NOW)
    memory = workspace.agents_dir / "buyer-1" / "memory"
    assert paths == [memory / "cases.jsonl", memory / "entities.jsonl"]
    line = json.loads((memory / "cases.jsonl").read_text())
    assert list(line) == [
        "id", "category", "importance", "content", "subject", "source", "createdAt",
    ]  # fmt: skip


def test_add_memory_appends_a_record_with_a_fresh_id(workspace: Workspace) -> None:
    path = add_memory(
        workspace, "heavylift-chengwen", PATTERNS, 0.6, "Skill claude-code-run price 20 → 19",
        subject=None, source="pricing", now=NOW,
    )  # fmt: skip
    add_memory(
        workspace, "heavylift-chengwen", PATTERNS, 0.85, "Skill x adjusted: y because z",
        subject="claude-code-run", source="optimize", now=NOW,
    )  # fmt: skip
    assert path == workspace.agents_dir / "heavylift-chengwen" / "memory" / "patterns.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records[0]["id"].startswith("mem-1775649600000-") and len(records[0]["id"]) == 24
    assert records[0]["id"] != records[1]["id"]
    assert "subject" not in records[0]


@pytest.mark.parametrize(
    ("category", "importance", "content", "expected"),
    [
        ("../x", 0.5, "c", InvalidId),
        ("a/b", 0.5, "c", InvalidId),
        ("cases", 1.5, "c", FeedbackdError),
        ("cases", -0.1, "c", FeedbackdError),
        ("cases", float("nan"), "c", FeedbackdError),
        ("cases", 0.5, "", FeedbackdError),
        ("cases", 0.5, "x" * 4001, FeedbackdError),
    ],
)
def test_bad_memory_is_refused(
    workspace: Workspace, category: str, importance: float, content: str, expected: type
) -> None:
    with pytest.raises(expected):
        add_memory(
            workspace, "agent-1", category, importance, content,
            subject=None, source="test", now=NOW,
        )  # fmt: skip
    assert not (workspace.agents_dir / "agent-1" / "memory").exists()


def test_a_bad_agent_id_is_refused(workspace: Workspace) -> None:
    with pytest.raises(InvalidId):
        add_memory(workspace, "../up", CASES, 0.5, "c", subject=None, source="t", now=NOW)


def test_memory_is_listed_by_importance_then_newest(workspace: Workspace) -> None:
    agent = "buyer-1"
    for hours, category, importance in [
        (5, PATTERNS, 0.6), (4, CASES, 0.8), (3, CASES, 0.9), (1, CASES, 0.8), (2, PATTERNS, 0.85),
    ]:  # fmt: skip
        add_memory(
            workspace, agent, category, importance, f"{category} {hours}h ago",
            subject=None, source="test", now=NOW - timedelta(hours=hours),
        )  # fmt: skip
    listed = [(r.importance, r.content) for r in list_memory(workspace, agent, None)]
    assert listed == [
        (0.9, "cases 3h ago"), (0.85, "patterns 2h ago"), (0.8, "cases 1h ago"),
        (0.8, "cases 4h ago"), (0.6, "patterns 5h ago"),
    ]  # fmt: skip
    only_patterns = list_memory(workspace, agent, PATTERNS)
    assert [r.content for r in only_patterns] == ["patterns 2h ago", "patterns 5h ago"]
    assert list_memory(workspace, agent, "nothing-here") == []
    assert list_memory(workspace, "never-seen", None) == []


def test_only_the_latest_profile_per_provider_is_listed(workspace: Workspace) -> None:
    first, second = rental(2, "poor"), rental(5, "excellent")
    write_rental_memories(workspace, first, NOW - timedelta(days=1))
    write_rental_memories(workspace, second, NOW, earlier=[first])
    other = rental(provider_agent="other-provider")
    write_rental_memories(workspace, other, NOW - timedelta(days=2))
    profiles = list_memory(workspace, "buyer-1", ENTITIES)
    assert [p.subject for p in profiles] == ["heavylift-chengwen", "other-provider"]
    assert profiles[0].id == f"profile-{second.transaction_id}"
    assert profiles[0].content.startswith("Provider heavylift-chengwen: 2 rentals")
    everything = list_memory(workspace, "buyer-1", None)
    assert [r.category for r in everything] == [CASES, CASES, CASES, ENTITIES, ENTITIES]
    assert everything[0].importance == 0.9  # the failed rental


def test_bad_memory_lines_are_skipped_with_a_warning(
    workspace: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    path = add_memory(workspace, "buyer-1", CASES, 0.8, "kept", subject=None, source="t", now=NOW)
    good = json.loads(path.read_text())
    with path.open("a") as handle:
        handle.write("{not json\n")
        handle.write(json.dumps({**good, "importance": "high"}) + "\n")
        handle.write(json.dumps({**good, "category": "patterns"}) + "\n")
        handle.write(json.dumps({**good, "extra": 1}) + "\n")
    with caplog.at_level(logging.WARNING):
        assert [r.content for r in list_memory(workspace, "buyer-1", None)] == ["kept"]
    for number in (2, 3, 4, 5):
        assert f"_data/agents/buyer-1/memory/cases.jsonl, line {number}: skipped" in caplog.text


def test_records_round_trip_through_their_line() -> None:
    record = rental_memories(rental(), NOW)[0][1]
    assert MemoryRecord.model_validate_json(record.line()) == record
    assert MemoryRecord.model_validate({**record.model_dump(), "importance": 1}).importance == 1
