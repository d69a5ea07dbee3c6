"""The ratings' planners, pure: a change whole, and the same change planned again after a kill."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from feedbackd.core.changes import Append, Change, Remove, Write
from feedbackd.core.commitmsg import PRICE_NEW_KEY, PRICE_OLD_KEY, TRANSACTION_KEY
from feedbackd.core.people import Person
from feedbackd.core.ratings import plans
from feedbackd.core.ratings.priceledger import new_price_record
from feedbackd.core.ratings.records import parse_rating
from feedbackd.core.workspacepaths import Workspace

NOW = datetime(2026, 4, 8, 12, 0, tzinfo=UTC)
WORKSPACE = Workspace(Path("/ws"))
AGENT = WORKSPACE.agent("heavylift-chengwen")
PATTERNS = AGENT.memory / "patterns.jsonl"
FEEDBACKD = Person("feedbackd", "feedbackd@localhost")
SOUL = "# HeavyLift\n\n## Claude Code Run\nRuns it.\npricing: 20"  # no final newline
RATING = parse_rating(
    {
        "transaction_id": "6f1c2a9e-3b4d-4c5e-8f70-1a2b3c4d5e6f",
        "provider_agent": "heavylift-chengwen",
        "skill_id": "claude-code-run",
        "rating": 2,
        "result_quality": "poor",
        "quality_details": "Diff was incomplete",
        "would_reuse": False,
        "cost_value_ratio": "overpriced",
    },
    requester="buyer-0",
    now=NOW,
)
RECORD = new_price_record("claude-code-run", "20", "19", "3 of 3 said overpriced", NOW)


def test_a_rating_appends_its_line_then_the_buyers_memory_removes_its_inbox_file_and_commits() -> (
    None
):
    inbox = WORKSPACE.inbox_ratings / "one.json"
    change = plans.plan_rating(WORKSPACE, RATING, NOW, [], FEEDBACKD, also=[inbox])
    line, case, profile, removed = change.actions
    rating_log = AGENT.ratings / "claude-code-run" / f"{RATING.month}.jsonl"
    assert isinstance(line, Append) and line.path == rating_log
    assert json.loads(line.line)["transaction_id"] == RATING.transaction_id
    memory = WORKSPACE.agent("buyer-0").memory
    assert (case.path, profile.path) == (memory / "cases.jsonl", memory / "entities.jsonl")
    assert removed == Remove(inbox)
    commit = change.commit
    assert (commit.event, commit.agent, commit.skill) == ("rating", AGENT.agent_id, RATING.skill_id)
    assert commit.summary == "2/5 poor from buyer-0 (overpriced)"
    assert commit.body == ["- would reuse: no", '- details: "Diff was incomplete"']
    assert commit.trailers == [(TRANSACTION_KEY, RATING.transaction_id)]
    assert commit.author is not None and commit.author.name == "buyer-0"
    assert list(commit.paths) == [
        rating_log,
        memory / "cases.jsonl",
        memory / "entities.jsonl",
        inbox,
    ]


def test_a_rating_planned_again_writes_only_what_is_missing_and_commits_the_same() -> None:
    whole = plans.plan_rating(WORKSPACE, RATING, NOW, [], FEEDBACKD)
    case_id = f"case-{RATING.transaction_id}"
    again = plans.plan_rating(
        WORKSPACE, RATING, NOW, [], FEEDBACKD, stored=True, remembered={case_id}
    )
    [profile] = again.actions
    assert isinstance(profile, Append) and profile.path.name == "entities.jsonl"
    assert again.commit == whole.commit


def test_a_price_change_keeps_soul_md_as_it_was_but_its_price() -> None:
    change = plans.plan_price_change(AGENT, PATTERNS, RECORD, SOUL, NOW)
    ledger, soul, memory = change.actions
    assert ledger == Append(AGENT.price_ledger, RECORD.line())
    assert soul == Write(AGENT.soul, SOUL.replace("pricing: 20", "pricing: 19"), exact=True)
    assert isinstance(memory, Append) and json.loads(memory.line)["id"] == f"mem-{RECORD.id}"
    commit = change.commit
    assert (commit.event, commit.summary) == ("pricing", "20 → 19 (3 of 3 said overpriced)")
    assert commit.trailers == [(PRICE_OLD_KEY, "20"), (PRICE_NEW_KEY, "19")]
    assert list(commit.paths) == [AGENT.soul, AGENT.price_ledger, PATTERNS]


def _apply(change: Change, files: dict[Path, str], upto: int) -> None:
    """The first `upto` actions of a change on files in memory (a kill after them)."""
    for action in change.actions[:upto]:
        if isinstance(action, Write):
            files[action.path] = action.text
        elif isinstance(action, Append):
            files[action.path] = files.get(action.path, "") + action.line + "\n"


@given(st.integers(0, 3))
def test_a_price_change_killed_after_any_action_and_planned_again_is_made_once(upto: int) -> None:
    """As the next pass plans it: the ledger line is there or not, SOUL.md as it is, the memory
    record there or not; the two together leave what one whole change leaves."""
    files = {AGENT.soul: SOUL}
    first = plans.plan_price_change(AGENT, PATTERNS, RECORD, SOUL, NOW)
    _apply(first, files, upto)
    stored = RECORD.id in files.get(AGENT.price_ledger, "")
    if stored:  # the ledger line is what says a change was begun
        remembered = f"mem-{RECORD.id}" in files.get(PATTERNS, "")
        again = plans.plan_price_change(
            AGENT, PATTERNS, RECORD, files[AGENT.soul], NOW, stored=True, remembered=remembered
        )
        _apply(again, files, len(again.actions))
        assert again.commit == first.commit
    else:
        _apply(first, files, len(first.actions))
    whole: dict[Path, str] = {AGENT.soul: SOUL}
    _apply(first, whole, len(first.actions))
    assert files == whole
