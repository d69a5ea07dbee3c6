"""The pure self-optimisation rules: price cuts, increases, floor, cap, cooldown, lessons."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from feedbackd.core.config import OptimizerSettings, PricingSettings
from feedbackd.core.ratings.records import Rating, parse_rating
from feedbackd.core.ratings.skillrules import (
    Lesson,
    NoChange,
    PriceChange,
    PriceHistory,
    QualityFinding,
    decide_price,
    decide_quality,
    distinct_lessons,
    lessons_as_json,
    lessons_in_brief,
    price_floor,
    render_lessons,
    stepped,
)

NOW = datetime(2026, 4, 8, 12, 0, tzinfo=UTC)
WEEK = timedelta(days=7)
DEFAULTS = PricingSettings()


def rating(minutes_ago: float = 10, requester: str = "buyer", **fields: Any) -> Rating:
    doc = {
        "transaction_id": str(uuid.uuid4()),
        "provider_agent": "heavylift-chengwen",
        "skill_id": "claude-code-run",
        "rating": 4,
        "result_quality": "good",
        "would_reuse": True,
        "cost_value_ratio": "fair",
        "timestamp": (NOW - timedelta(minutes=minutes_ago)).isoformat(),
    }
    doc.update(fields)
    return parse_rating(doc, requester=requester, now=NOW)


def overpriced(count: int, minutes_ago: float = 10, buyers: int = 0) -> list[Rating]:
    """`count` ratings that say overpriced, from `buyers` requesters (one each by default)."""
    return [
        rating(minutes_ago + i, f"buyer-{i % (buyers or count)}", cost_value_ratio="overpriced")
        for i in range(count)
    ]


def price(
    current: float,
    ratings: list[Rating],
    history: PriceHistory | None = None,
    **settings: Any,
) -> PriceChange | NoChange:
    return decide_price(
        current, ratings, history or PriceHistory(), PricingSettings(**settings), NOW, WEEK
    )


# --- cuts -------------------------------------------------------------------------------------


def test_three_overpriced_ratings_cut_the_price_by_the_step() -> None:
    change = price(20, overpriced(3))
    assert isinstance(change, PriceChange)
    assert (change.old, change.new, change.direction) == (20, 19, "cut")
    assert change.summary == "20 → 19 (3 of 3 ratings from 3 buyers said overpriced)"
    assert change.base == 20 and change.limit == 10


def test_one_buyer_alone_never_moves_a_price() -> None:
    verdict = price(20, overpriced(4, buyers=1))
    assert isinstance(verdict, NoChange)
    assert verdict.reason == (
        "4 of 4 ratings from 1 buyer said overpriced; a cut needs 3 ratings from 2 buyers"
    )
    change = price(20, overpriced(4, buyers=2))
    assert isinstance(change, PriceChange)
    assert change.summary == "20 → 19 (4 of 4 ratings from 2 buyers said overpriced)"
    assert isinstance(price(20, overpriced(4, buyers=1), min_requesters=1), PriceChange)


def test_cut_rounds_half_up_to_cents() -> None:
    assert stepped(9.5, 5, -1) == 9.03  # 9.025
    assert stepped(12.5, 10, -1) == 11.25
    assert stepped(0.1, 5, -1) == 0.1  # 0.095 rounds back up
    change = price(9.5, overpriced(3))
    assert isinstance(change, PriceChange) and change.summary.startswith("9.5 → 9.03 ")


def test_too_few_samples_change_nothing() -> None:
    verdict = price(20, overpriced(2))
    assert isinstance(verdict, NoChange)
    assert "too few ratings" in verdict.reason and "2 of 3" in verdict.reason


def test_too_few_overpriced_among_enough_samples_change_nothing() -> None:
    verdict = price(20, [*overpriced(2), rating(30), rating(40)])
    assert (
        isinstance(verdict, NoChange)
        and "2 of 4 ratings from 2 buyers said overpriced" in verdict.reason
    )


def test_only_ratings_after_the_last_change_count() -> None:
    history = PriceHistory(base=20, last_change=NOW - timedelta(days=8))
    older = overpriced(3, minutes_ago=60 * 24 * 8 + 5)  # before the change
    assert isinstance(price(19, older, history), NoChange)
    assert isinstance(price(19, [*older, *overpriced(3)], history), PriceChange)


def test_ratings_outside_the_window_do_not_count() -> None:
    stale = overpriced(3, minutes_ago=60 * 24 * 8)
    assert isinstance(price(20, stale), NoChange)


def test_cooldown_holds_the_price_until_it_passes() -> None:
    recent_change = PriceHistory(base=20, last_change=NOW - timedelta(days=6))
    verdict = price(19, overpriced(3), recent_change)
    assert isinstance(verdict, NoChange) and verdict.reason.startswith("cooldown")
    short = price(19, overpriced(3), recent_change, cooldown="5d")
    assert isinstance(short, PriceChange) and short.new == 18.05


def test_repeated_cuts_stop_at_the_floor() -> None:
    settings = {"step_pct": 10}
    current, history, prices = 20.0, PriceHistory(), []
    for _ in range(20):
        change = price(current, overpriced(3), history, **settings)
        if isinstance(change, NoChange):
            assert "at its floor" in change.reason
            break
        prices.append(change.new)
        history = PriceHistory(base=history.base or current, last_change=None)
        current = change.new
    assert prices == [18, 16.2, 14.58, 13.12, 11.81, 10.63, 10]
    assert current == 10  # floor_ratio 0.5 × base 20


def test_floor_is_the_higher_of_min_price_and_the_base_share() -> None:
    assert price_floor(20, DEFAULTS) == 10
    assert price_floor(1.5, DEFAULTS) == 1  # min_price wins
    assert price_floor(12.5, PricingSettings(floor_ratio=0.5)) == 6.25
    clamped = price(10.2, overpriced(3), PriceHistory(base=20))
    assert isinstance(clamped, PriceChange) and clamped.new == 10
    assert clamped.why.endswith("; floor 10")


def test_a_price_below_its_floor_is_never_raised_by_a_cut() -> None:
    verdict = price(3, overpriced(3), PriceHistory(base=20))
    assert isinstance(verdict, NoChange) and "floor" in verdict.reason


def test_overpriced_threshold_and_samples_are_configurable() -> None:
    ratings = [*overpriced(1), rating(20)]
    change = price(
        20, ratings, min_samples=2, overpriced_min_count=1, min_requesters=1, step_pct=10
    )
    assert isinstance(change, PriceChange) and change.new == 18


# --- increases --------------------------------------------------------------------------------


def delighted(count: int) -> list[Rating]:
    return [
        rating(5 + i, rating=5, would_reuse=True, cost_value_ratio="great") for i in range(count)
    ]


def test_increases_are_off_by_default() -> None:
    verdict = price(20, delighted(6))
    assert isinstance(verdict, NoChange) and "0 of 6" in verdict.reason


def test_five_top_ratings_raise_the_price_when_allowed() -> None:
    change = price(20, delighted(5), allow_increase=True)
    assert isinstance(change, PriceChange)
    assert (change.new, change.direction) == (21, "increase")
    assert "5 of 5 buyers rated 5" in change.why


def test_increase_needs_five_top_ratings_and_no_overpriced() -> None:
    assert isinstance(price(20, delighted(4), allow_increase=True), NoChange)
    mixed = [*delighted(5), *overpriced(1)]
    assert isinstance(price(20, mixed, allow_increase=True), NoChange)
    not_again = [rating(5 + i, rating=5, would_reuse=False) for i in range(5)]
    assert isinstance(price(20, not_again, allow_increase=True), NoChange)


def test_increase_is_capped_at_cap_ratio_times_base() -> None:
    history = PriceHistory(base=10)
    change = price(14.8, delighted(5), history, allow_increase=True, cap_ratio=1.5)
    assert isinstance(change, PriceChange) and change.new == 15 and change.why.endswith("cap 15")
    at_cap = price(15, delighted(5), history, allow_increase=True, cap_ratio=1.5)
    assert isinstance(at_cap, NoChange) and "at its cap" in at_cap.reason


# --- quality ----------------------------------------------------------------------------------


def quality(ratings: list[Rating], **settings: Any) -> QualityFinding | NoChange:
    newest_first = sorted(ratings, key=lambda r: r.timestamp, reverse=True)
    return decide_quality(newest_first, OptimizerSettings(**settings), "7d")


def test_good_ratings_need_no_lessons() -> None:
    assert isinstance(quality([rating(1), rating(2, rating=3)]), NoChange)
    assert isinstance(quality([]), NoChange)


def test_any_poor_result_gives_lessons() -> None:
    finding = quality([rating(1), rating(2, result_quality="poor", quality_details="Too slow")])
    assert isinstance(finding, QualityFinding)
    assert finding.lessons == (Lesson("Too slow", 1),)
    assert "1 of 2 results" in finding.why


def test_low_average_gives_lessons_even_without_poor_results() -> None:
    ratings = [rating(1, rating=2, quality_details="Missed the point"), rating(2, rating=2)]
    finding = quality(ratings)
    assert isinstance(finding, QualityFinding) and "average rating 2.0 ≤ 2" in finding.why
    assert finding.low_count == 2 and finding.lessons == (Lesson("Missed the point", 1),)


def test_lessons_are_distinct_newest_first_with_counts() -> None:
    low = [
        rating(1, rating=1, result_quality="failed", quality_details="Output was truncated"),
        rating(2, rating=2, quality_details="Ignored the style guide"),
        rating(3, rating=1, quality_details="output   was truncated."),
        rating(4, rating=5, quality_details="Great work"),  # not a low rating
        rating(5, rating=2, quality_details="Output was truncated"),
        rating(6, rating=2),
    ]
    finding = quality(low)
    assert isinstance(finding, QualityFinding)
    assert finding.lessons == (
        Lesson("Output was truncated", 3),
        Lesson("Ignored the style guide", 1),
    )
    assert render_lessons(finding.lessons) == (
        "## Lessons from recent ratings\n"
        "- Output was truncated (3×)\n"
        "- Ignored the style guide (1×)\n"
    )


def test_lessons_are_capped_at_max_lessons() -> None:
    low = [rating(i, rating=1, quality_details=f"Problem {i}") for i in range(1, 6)]
    finding = quality(low, max_lessons=2)
    assert isinstance(finding, QualityFinding)
    assert [lesson.text for lesson in finding.lessons] == ["Problem 1", "Problem 2"]


def test_no_lessons_render_as_an_empty_file() -> None:
    assert render_lessons([]) == ""
    assert distinct_lessons([rating(1, rating=1, quality_details="  ")]) == []


@pytest.mark.parametrize("threshold", [1.0, 3.5])
def test_threshold_is_configurable(threshold: float) -> None:
    ratings = [rating(1, rating=3), rating(2, rating=3)]
    finding = quality(ratings, low_rating_threshold=threshold)
    assert isinstance(finding, QualityFinding) == (threshold >= 3)


def test_lessons_in_brief_show_three_and_count_the_rest() -> None:
    lessons = [Lesson("x" * 80, 3), Lesson("Tests skipped", 2), Lesson("Slow", 1)]
    assert lessons_in_brief(lessons[1:]) == "Tests skipped ×2; Slow ×1"
    brief = lessons_in_brief([*lessons, Lesson("a", 1), Lesson("b", 1)])
    assert brief.startswith("x" * 59 + "… ×3; Tests skipped ×2; Slow ×1")
    assert brief.endswith(", and 2 more")
    assert lessons_as_json(lessons[2:]) == [{"text": "Slow", "count": 1}]
