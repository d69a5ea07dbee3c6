"""The optimizer.command protocol: the context it reads, the answers it may give (pure)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from feedbackd.core.ratings.optimizer_command import (
    MAX_ANSWER_CHARS,
    Answer,
    SkillContext,
    UnusableAnswer,
    command_context,
    parse_answer,
)
from feedbackd.core.ratings.records import Rating, parse_rating
from feedbackd.core.ratings.skillrules import Lesson, QualityFinding

NOW = datetime(2026, 4, 8, 12, 0, tzinfo=UTC)


def rating(**fields: Any) -> Rating:
    doc = {
        "transaction_id": str(uuid.uuid4()),
        "provider_agent": "heavylift-chengwen",
        "skill_id": "claude-code-run",
        "rating": 2,
        "result_quality": "poor",
        "would_reuse": False,
        "cost_value_ratio": "fair",
        "timestamp": (NOW - timedelta(hours=1)).isoformat(),
        **fields,
    }
    return parse_rating(doc, requester="buyer", now=NOW)


def test_the_context_tells_the_skill_the_ratings_and_the_lessons() -> None:
    ratings = [rating(), rating(cost_value_ratio="overpriced"), rating(result_quality="good")]
    finding = QualityFinding("average rating 2.0 ≤ 2", (Lesson("Forgot the tests", 2),), 3, 2.0, 2)
    about = SkillContext("heavylift-chengwen", "claude-code-run", "Runs a task.", 20.0, "7d")
    context = command_context(about, finding, ratings)
    assert context == {
        "agent": "heavylift-chengwen",
        "skill": "claude-code-run",
        "description": "Runs a task.",
        "price": 20.0,
        "why": "average rating 2.0 ≤ 2",
        "ratings": {
            "window": "7d",
            "count": 3,
            "average_rating": 2.0,
            "low_count": 2,
            "quality_counts": {"poor": 2, "good": 1},
            "overpriced_count": 1,
        },
        "lessons": [{"text": "Forgot the tests", "count": 2}],
        "answer": {"description": "the new description (one paragraph)", "reason": "why"},
    }
    assert json.loads(json.dumps(context)) == context


def test_a_good_answer_gives_the_description_and_reason() -> None:
    stdout = '\n  {"description": "Runs a task and its tests.", "reason": " buyers asked "}\n'
    assert parse_answer(stdout) == Answer("Runs a task and its tests.", "buyers asked")


def test_an_answer_without_a_reason_gets_one() -> None:
    answer = parse_answer('{"description": "Better."}')
    assert answer == Answer("Better.", "optimizer.command suggested it")


@pytest.mark.parametrize("stdout", ["", "  \n\n"])
def test_no_answer_is_none(stdout: str) -> None:
    assert parse_answer(stdout) is None


@pytest.mark.parametrize(
    ("stdout", "says"),
    [
        ("certainly! here is a better description", "answered something that is not JSON"),
        ('{"reason": "no description"}', 'must answer {"description": "...", "reason": "..."}'),
        ('{"description": "   ", "reason": "blank"}', "must answer"),
        ('{"description": "x", "reason": 3}', "must answer"),
        ('["description", "reason"]', "must answer"),
        ('{"description": "half \\ud83d", "reason": "x"}', "answered half of a character pair"),
        (json.dumps({"description": "x" * MAX_ANSWER_CHARS}), "must answer"),
    ],
    ids=["not-json", "no-description", "blank", "reason-not-text", "list", "half-pair", "huge"],
)
def test_an_unusable_answer_says_why(stdout: str, says: str) -> None:
    with pytest.raises(UnusableAnswer) as caught:
        parse_answer(stdout)
    assert str(caught.value).startswith(says)
    assert len(str(caught.value)) < 300  # a log line, not the whole answer
