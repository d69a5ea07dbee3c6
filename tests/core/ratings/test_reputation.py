"""The reputation formula against values worked out by hand, and the report shapes of SPEC §10."""

from __future__ import annotations

import math
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from feedbackd.core.config import ReputationSettings
from feedbackd.core.ratings.records import Rating, parse_rating
from feedbackd.core.ratings.reputation import (
    feedback_list_report,
    merge,
    point,
    rating_value,
    reputation_report,
    score,
    score_tallies,
    tally,
)
from feedbackd.core.timeutil import iso_ms

NOW = datetime(2026, 4, 8, 12, 0, tzinfo=UTC)
DEFAULT = ReputationSettings()


def rating(
    stars: int = 5,
    quality: str = "excellent",
    reuse: bool = True,
    cost: str = "great",
    age_days: float = 0,
    skill: str = "claude-code-run",
    details: str | None = None,
) -> Rating:
    fields: dict[str, Any] = {
        "transaction_id": str(uuid.uuid4()),
        "provider_agent": "heavylift-chengwen",
        "skill_id": skill,
        "rating": stars,
        "result_quality": quality,
        "would_reuse": reuse,
        "cost_value_ratio": cost,
        "timestamp": iso_ms(NOW - timedelta(days=age_days)),
    }
    if details is not None:
        fields["quality_details"] = details
    return parse_rating(fields, requester="buyer-1", now=NOW)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((5, "excellent", True, "great"), 1.0),
        ((1, "failed", False, "overpriced"), 0.1 * 0.2),
        ((3, "acceptable", True, "fair"), 0.4 * 0.5 + 0.3 * 0.6 + 0.2 + 0.1 * 0.6),
        ((4, "good", False, "overpriced"), 0.4 * 0.75 + 0.3 * 0.8 + 0.1 * 0.2),
        ((2, "poor", True, "great"), 0.4 * 0.25 + 0.3 * 0.3 + 0.2 + 0.1),
    ],
)
def test_value_of_one_rating(args: tuple[int, str, bool, str], expected: float) -> None:
    assert rating_value(rating(*args), DEFAULT) == pytest.approx(expected)


def test_no_ratings_is_the_cold_start_score() -> None:
    result = score([], DEFAULT, NOW)
    assert (result.score, result.count, result.confidence, result.last_updated) == (
        0.5, 0, 0.0, None,
    )  # fmt: skip
    custom = ReputationSettings(cold_start=0.3)
    assert score([], custom, NOW).score == 0.3


def test_a_new_rating_weighs_one_and_a_30_day_old_one_weighs_1_over_e() -> None:
    fresh = rating(5, "excellent", True, "great", age_days=0)  # value 1.0
    old = rating(1, "failed", False, "overpriced", age_days=30)  # value 0.02
    w = math.exp(-1)
    result = score([fresh, old], DEFAULT, NOW)
    assert result.score == pytest.approx((1.0 + w * 0.02) / (1 + w))  # 0.7364...
    assert result.score == pytest.approx(0.736437, abs=1e-6)
    assert result.confidence == pytest.approx(1 + w)
    assert result.count == 2
    assert result.last_updated == iso_ms(NOW)


def test_a_single_old_rating_keeps_its_value_but_lowers_confidence() -> None:
    old = rating(3, "acceptable", True, "fair", age_days=60)
    result = score([old], DEFAULT, NOW)
    assert result.score == pytest.approx(0.64)
    assert result.confidence == pytest.approx(math.exp(-2))


def test_future_timestamps_count_as_age_zero() -> None:
    future = rating(1, "failed", False, "overpriced", age_days=-10)
    today = rating(5, "excellent", True, "great", age_days=0)
    result = score([future, today], DEFAULT, NOW)
    assert result.score == pytest.approx((0.02 + 1.0) / 2)
    assert result.confidence == pytest.approx(2.0)
    assert result.last_updated == iso_ms(NOW + timedelta(days=10))


def test_ratings_older_than_any_float_can_weigh_still_give_their_mean() -> None:
    ancient = [rating(1, "failed", False, "overpriced", age_days=40_000)]
    result = score(ancient, DEFAULT, NOW)
    assert result.score == pytest.approx(0.02)
    assert result.confidence == 0.0


def test_custom_weights_maps_decay_and_clamping() -> None:
    settings = ReputationSettings(
        weights={"rating": 1.0, "quality": 0.0, "would_reuse": 0.0, "cost_value": 0.0},
        decay_days=10,
    )
    fresh, old = rating(5, age_days=0), rating(1, "failed", False, "overpriced", age_days=10)
    w = math.exp(-1)
    assert score([fresh, old], settings, NOW).score == pytest.approx(1.0 / (1 + w))
    generous = ReputationSettings(
        weights={"rating": 1.0, "quality": 1.0},  # would_reuse and cost_value keep 0.2, 0.1
        quality_map={"poor": 0.9},  # the other levels keep their defaults
    )
    assert rating_value(rating(3, "poor"), generous) == pytest.approx(0.5 + 0.9 + 0.2 + 0.1)
    assert score([rating(5, "excellent")], generous, NOW).score == 1.0  # clamped from 2.0
    negative = ReputationSettings(weights={"rating": -1.0, "quality": 0.0})
    assert score([rating(5)], negative, NOW).score == 0.0


def test_tallies_give_the_same_score_for_any_later_now() -> None:
    ratings = [rating(s, q, s > 2, c, age_days=d) for s, q, c, d in [
        (5, "good", "fair", 1.5), (2, "poor", "overpriced", 12), (4, "excellent", "great", 40),
        (3, "acceptable", "fair", 90), (1, "failed", "overpriced", 400),
    ]]  # fmt: skip
    first, second = [point(r) for r in ratings[:2]], [point(r) for r in ratings[2:]]
    tallies = [tally(first, 30.0), tally(second, 30.0)]
    later = NOW + timedelta(days=17)
    direct = score(ratings, DEFAULT, later)
    combined = score_tallies(tallies, DEFAULT, later)
    assert combined.score == pytest.approx(direct.score, rel=1e-12)
    assert combined.confidence == pytest.approx(direct.confidence, rel=1e-12)
    merged = score_tallies([merge(*tallies)], DEFAULT, later)
    assert merged.score == pytest.approx(direct.score, rel=1e-12)
    assert merged.count == 5 and merged.last_updated == direct.last_updated


def test_reputation_report_has_the_provider_and_each_skill() -> None:
    ratings = [
        rating(5, "excellent", True, "great", skill="claude-code-run"),
        rating(1, "failed", False, "overpriced", skill="web-research", age_days=30),
    ]
    report = reputation_report("heavylift-chengwen", ratings, DEFAULT, NOW)
    w = math.exp(-1)
    assert report == {
        "agent_id": "heavylift-chengwen",
        "reputation_score": round((1 + w * 0.02) / (1 + w), 4),
        "feedback_count": 2,
        "last_updated": iso_ms(NOW),
        "confidence": round(1 + w, 4),
        "skills": {
            "claude-code-run": {
                "reputation_score": 1.0,
                "feedback_count": 1,
                "last_updated": iso_ms(NOW),
                "confidence": 1.0,
            },
            "web-research": {
                "reputation_score": 0.02,
                "feedback_count": 1,
                "last_updated": iso_ms(NOW - timedelta(days=30)),
                "confidence": round(w, 4),
            },
        },
    }


def test_reputation_of_an_agent_never_seen_is_the_cold_start() -> None:
    report = reputation_report("nobody", [], DEFAULT, NOW)
    assert report == {
        "agent_id": "nobody",
        "reputation_score": 0.5,
        "feedback_count": 0,
        "last_updated": None,
        "confidence": 0.0,
        "skills": {},
    }


def test_feedback_list_report_summarises_the_window_newest_first() -> None:
    ratings = [
        rating(5, "excellent", True, "great", age_days=3, details="fast"),
        rating(2, "poor", False, "overpriced", age_days=1, details="wrong output"),
        rating(4, "good", True, "overpriced", age_days=2),
    ]
    report = feedback_list_report(
        "claude-code-run", "heavylift-chengwen", "7d", ratings, DEFAULT, NOW, limit=2
    )
    assert report["skill_id"] == "claude-code-run" and report["since"] == "7d"
    assert report["agent_id"] == "heavylift-chengwen"
    assert report["count"] == 3
    assert [f["rating"] for f in report["feedbacks"]] == [2, 4]  # newest first, limited
    assert report["feedbacks"][0]["quality_details"] == "wrong output"
    assert "latency_ms" not in report["feedbacks"][0]
    assert report["average_rating"] == 3.67
    assert report["quality_counts"] == {
        "excellent": 1, "good": 1, "acceptable": 0, "poor": 1, "failed": 0,
    }  # fmt: skip
    assert report["would_reuse_ratio"] == round(2 / 3, 4)
    assert report["overpriced_ratio"] == round(2 / 3, 4)
    assert report["reputation_score"] == round(score(ratings, DEFAULT, NOW).score, 4)


def test_an_empty_feedback_list_says_there_is_nothing_rather_than_zero() -> None:
    report = feedback_list_report("x", None, None, [], DEFAULT, NOW)
    assert report["count"] == 0 and report["feedbacks"] == []
    assert report["average_rating"] is None
    assert report["would_reuse_ratio"] is None and report["overpriced_ratio"] is None
    assert report["reputation_score"] == 0.5
