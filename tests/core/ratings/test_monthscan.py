"""A month file summed up in bulk: the same as reading it line by line, or no answer at all."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from feedbackd.core.ratings.monthscan import summarise
from feedbackd.core.ratings.records import Rating, parse_rating, rating_line, stored_fields
from feedbackd.core.ratings.tally import Point, tally

NOW = datetime(2026, 4, 8, 12, 0, tzinfo=UTC)


def make(days: float, stars: int, **extra: object) -> Rating:
    fields = {
        "transaction_id": str(uuid.uuid4()), "provider_agent": "p", "skill_id": "s",
        "rating": stars, "result_quality": "good", "would_reuse": stars > 2,
        "cost_value_ratio": "fair", **extra,
    }  # fmt: skip
    return parse_rating(fields, requester="buyer-1", now=NOW - timedelta(days=days))


RATINGS = [
    make(0.5, 5, result_quality="excellent", cost_value_ratio="great", latency_ms=0),
    make(3, 1, result_quality="failed", quality_details="broke — twice", latency_ms=12345),
    make(9, 3, result_quality="acceptable", cost_value_ratio="overpriced", requester_agent="b.2"),
    make(20, 2, result_quality="poor", quality_details=""),
]


def line_by_line(text: str) -> tuple[bytes, list[Point]]:
    fields = [stored_fields(line) for line in text.splitlines()]
    keys = b"".join(sorted(uuid.UUID(f["transaction_id"]).bytes for f in fields))
    points = [
        Point(
            datetime.fromisoformat(f["timestamp"]).timestamp(), f["timestamp"], f["rating"],
            f["result_quality"], f["would_reuse"], f["cost_value_ratio"],
        )
        for f in fields
    ]  # fmt: skip
    return keys, points


@pytest.mark.parametrize("final_newline", [True, False])
def test_canonical_lines_sum_up_as_read_one_by_one(final_newline: bool) -> None:
    text = "\n".join(rating_line(r) for r in RATINGS) + ("\n" if final_newline else "")
    summary = summarise(text, "p", "s", 30.0)
    assert summary is not None
    keys, points = line_by_line(text)
    assert summary.keys == keys
    expected = tally(points, 30.0)
    assert summary.tally.count == expected.count == 4
    assert (summary.tally.ref, summary.tally.newest) == (expected.ref, expected.newest)
    for field in ("weight", "rating", "would_reuse", "quality", "cost_value"):
        assert getattr(summary.tally, field) == pytest.approx(getattr(expected, field))
    capped = summarise(text, "p", "s", 30.0, cap=expected.ref - 86400)
    assert capped is not None and capped.tally.ref == expected.ref - 86400


def test_an_empty_file_holds_nothing() -> None:
    summary = summarise("", "p", "s", 30.0)
    assert summary is not None and summary.keys == b"" and summary.tally.count == 0


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t + "\n",  # a blank line
        lambda t: t.replace('"rating": 5', '"rating": 6'),
        lambda t: t.replace('"rating": 5', '"rating":5'),  # valid, but not as stored
        lambda t: t.replace('"skill_id": "s"', '"skill_id": "other"', 1),
        lambda t: t.replace('"requester_agent": "b.2"', '"requester_agent": "b..2"'),
        lambda t: t.replace("broke", "bro\\u006be"),  # an escape: read one by one
        lambda t: t.replace(f"{RATINGS[1].timestamp[:5]}", "2026-02-30"[:5], 1).replace(
            RATINGS[0].timestamp[:10], "2026-02-30"
        ),
        lambda t: "x" + t,
        lambda t: t + rating_line(RATINGS[0]) + "\n",  # a transaction twice
        lambda t: t.replace("\n", "\r\n"),
    ],
)
def test_anything_but_canonical_lines_is_left_to_the_line_by_line_reading(change: object) -> None:
    text = "".join(rating_line(r) + "\n" for r in RATINGS)
    assert callable(change)
    changed = change(text)
    assert changed != text
    assert summarise(changed, "p", "s", 30.0) is None
