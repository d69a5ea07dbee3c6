"""Stored ratings kept field by field: each row reads back exactly what its line says."""

from __future__ import annotations

import json
import tracemalloc
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from feedbackd.core.ratings.records import Rating, parse_rating, rating_line, stored_fields
from feedbackd.core.ratings.skillrules import ratings_since_change
from feedbackd.core.ratings.storedratings import RatingRows, as_stored
from feedbackd.core.timeutil import iso_ms, unix_ms

NOW = datetime(2026, 4, 8, 12, 0, tzinfo=UTC)


def rating(n: int, **extra: Any) -> Rating:
    fields = {
        "transaction_id": str(uuid.uuid4()),
        "provider_agent": "heavylift",
        "skill_id": "code-run",
        "requester_agent": f"buyer-{n % 3}",
        "rating": n % 5 + 1,
        "result_quality": ("excellent", "good", "acceptable", "poor", "failed")[n % 5],
        "would_reuse": n % 2 == 0,
        "cost_value_ratio": ("great", "fair", "overpriced")[n % 3],
        "timestamp": iso_ms(NOW + timedelta(minutes=n, milliseconds=n)),
        **extra,
    }
    return parse_rating(fields, requester=None, now=NOW)


def rows_of(*ratings: Rating) -> RatingRows:
    rows = RatingRows("heavylift", "code-run")
    for r in ratings:
        rows.add(stored_fields(rating_line(r)))
    return rows


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"latency_ms": 0},
        {"latency_ms": 1234},
        {"latency_ms": 2**63 - 1},
        {"latency_ms": 10**30},  # valid, if odd: beyond 64 bits
        {"quality_details": "Läuft nicht — timed out after 30 s.\u2028second line"},
        {"quality_details": ""},
    ],
)
def test_a_row_gives_back_exactly_the_stored_line(extra: dict[str, Any]) -> None:
    r = rating(7, **extra)
    row = rows_of(r)[0]
    assert row.fields() == json.loads(rating_line(r))
    assert row.transaction_id == r.transaction_id
    assert row.timestamp == r.timestamp
    assert row.moment == r.moment
    assert row.month == r.month == "2026-04"


def test_rows_are_selected_by_time_and_requester_in_file_order() -> None:
    made = [rating(n) for n in range(9)]
    rows = rows_of(*made)
    since = made[4].moment
    assert [r.transaction_id for _, r in rows.select(None, None)] == [
        r.transaction_id for r in made
    ]
    assert [r.transaction_id for _, r in rows.select(unix_ms(since), None)] == [
        r.transaction_id for r in made[4:]
    ]
    assert [r.transaction_id for _, r in rows.select(unix_ms(since), "buyer-1")] == [
        made[4].transaction_id,
        made[7].transaction_id,
    ]
    assert [r for _, r in rows.select(None, "someone-else")] == []


def test_rows_read_later_are_appended_and_earlier_rows_still_read_the_same() -> None:
    first, later = rows_of(rating(0), rating(1)), rows_of(rating(2), rating(3, latency_ms=10**30))
    expected = [r.fields() for r in first] + [r.fields() for r in later]
    handed_out = first[1]
    first.extend(later)
    assert handed_out.fields() == expected[1]
    assert [r.fields() for r in first] == expected
    assert first[3].latency_ms == 10**30
    assert [r.requester_agent for r in first] == ["buyer-0", "buyer-1", "buyer-2", "buyer-0"]


def test_newest_first_sorts_as_the_stored_spellings_do() -> None:
    made = [rating(n % 4) for n in range(12)]  # equal times, different transaction ids
    selected = list(rows_of(*made).select(None, None))
    by_order = [r for _, r in sorted(selected, key=lambda pair: pair[0], reverse=True)]
    by_text = sorted(
        (r for _, r in selected), key=lambda r: (r.timestamp, r.transaction_id), reverse=True
    )
    assert [r.transaction_id for r in by_order] == [r.transaction_id for r in by_text]


def test_times_read_back_to_the_millisecond_that_was_written() -> None:
    start = datetime(2026, 4, 8, 12, 0, tzinfo=UTC)
    for step in range(0, 2000, 3):
        moment = start + timedelta(milliseconds=step, microseconds=step % 1000)
        rows = rows_of(rating(0, timestamp=iso_ms(moment)))
        assert rows[0].timestamp == iso_ms(moment)
        assert rows[0].unix_ms == unix_ms(moment)
        assert [r for _, r in rows.select(unix_ms(moment), None)] == [rows[0]]
        assert [r for _, r in rows.select(unix_ms(moment) + 1, None)] == []


def test_a_row_equals_the_rating_it_was_read_from() -> None:
    r = rating(3, latency_ms=80, quality_details="slow")
    assert as_stored(r) == rows_of(r)[0]
    assert as_stored(r) != as_stored(rating(3))
    assert "slow" in repr(as_stored(r))


def test_ten_thousand_kept_ratings_take_under_a_hundred_bytes_each() -> None:
    lines = [stored_fields(rating_line(rating(n, latency_ms=900 + n))) for n in range(10_000)]
    tracemalloc.start()
    try:
        rows = RatingRows("heavylift", "code-run")
        for fields in lines:
            rows.add(fields)
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(rows) == 10_000
    assert size / len(rows) < 100, f"{size / len(rows):.0f} bytes a rating"


@pytest.mark.parametrize("stored", [False, True], ids=["submitted", "stored"])
def test_the_price_rule_counts_ratings_from_the_window_start_and_after_the_last_change(
    stored: bool,
) -> None:
    t = NOW.replace(microsecond=0)
    at = {n: rating(0, timestamp=iso_ms(t + timedelta(milliseconds=n))) for n in (0, 1, 2)}
    made = [as_stored(r) if stored else r for r in at.values()]

    def counted(window_start: datetime, last_change: datetime | None) -> list[int]:
        kept = ratings_since_change(made, last_change, window_start)
        return [unix_ms(r.moment) - unix_ms(t) for r in kept]

    half = timedelta(microseconds=500)
    assert counted(t, None) == [0, 1, 2]  # a rating at the window's start is in it
    assert counted(t + half, None) == [1, 2]
    assert counted(t - half, None) == [0, 1, 2]
    assert counted(t - timedelta(days=1), t + timedelta(milliseconds=1)) == [2]  # after, not at
    assert counted(t - timedelta(days=1), t + half) == [1, 2]
    assert counted(t + timedelta(milliseconds=2), t) == [2]
