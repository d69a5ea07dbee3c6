"""Rating records: what a requester may submit, and what it is told when the input is wrong."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from feedbackd.core.errors import InvalidFeedback
from feedbackd.core.ratings.records import (
    ALLOWED,
    Rating,
    parse_rating,
    parse_rating_file,
    rating_line,
    stored_fields,
)
from feedbackd.core.ratings.storedratings import is_failed

NOW = datetime(2026, 4, 8, 10, 0, tzinfo=UTC)
TX = "6f1c2a4e-8b3d-4e9f-a1b2-c3d4e5f60718"
SEED = Path("/work/shared/seeds/agentbnb-genesis-feedback.txt")


def seed_example() -> dict[str, Any]:
    """The requester example of the AgentBnB seed, exactly as written there."""
    if SEED.is_file():
        text = SEED.read_text(encoding="utf-8")
        start = text.index("{")
        return json.loads(text[start : text.index("}", start) + 1])  # type: ignore[no-any-return]
    return {
        "transaction_id": "uuid-from-request-response",
        "provider_agent": "heavylift-chengwen",
        "skill_id": "claude-code-run",
        "rating": 5,
        "latency_ms": 28500,
        "result_quality": "excellent",
        "quality_details": "Code executed correctly, output matched expectations",
        "would_reuse": True,
        "cost_value_ratio": "great",
    }


def payload(**changes: Any) -> dict[str, Any]:
    data = {**seed_example(), "transaction_id": TX}
    data.update(changes)
    return {key: value for key, value in data.items() if value is not ...}


def refusal(data: Any, requester: str | None = "requester-1") -> str:
    with pytest.raises(InvalidFeedback) as caught:
        parse_rating(data, requester=requester, now=NOW)
    assert caught.value.code == "invalid_feedback"
    return caught.value.message


def test_the_seed_example_is_valid_once_its_placeholder_id_is_a_uuid() -> None:
    example = seed_example()
    assert example["transaction_id"] == "uuid-from-request-response"  # a placeholder in the seed
    example["transaction_id"] = TX
    rating = parse_rating(json.dumps(example, indent=3), requester="requester-1", now=NOW)
    assert rating.provider_agent == "heavylift-chengwen"
    assert rating.requester_agent == "requester-1"
    assert rating.rating == 5 and rating.latency_ms == 28500 and rating.would_reuse is True
    assert rating.timestamp == "2026-04-08T10:00:00.000Z"  # defaults to now


def test_the_seed_placeholder_id_itself_is_refused_as_not_a_uuid() -> None:
    message = refusal({**seed_example()})
    assert message.startswith('transaction_id: "uuid-from-request-response" is not allowed')
    assert "a UUID" in message


def test_uuid_is_kept_in_canonical_lowercase_form() -> None:
    upper = "{" + TX.upper() + "}"
    rating = parse_rating(payload(transaction_id=upper), requester="r-1", now=NOW)
    assert rating.transaction_id == TX
    compact = parse_rating(payload(transaction_id=TX.replace("-", "")), requester="r-1", now=NOW)
    assert compact.transaction_id == TX


def test_timestamp_is_stored_as_utc_with_milliseconds() -> None:
    rating = parse_rating(
        payload(timestamp="2026-04-08T12:30:00.123456+02:00"), requester="r-1", now=NOW
    )
    assert rating.timestamp == "2026-04-08T10:30:00.123Z"
    assert rating.month == "2026-04"
    naive = parse_rating(payload(timestamp="2026-03-01T00:00:00"), requester="r-1", now=NOW)
    assert naive.timestamp == "2026-03-01T00:00:00.000Z"


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0, "0"), (6, "6"), (2.5, "2.5"), ("5", '"5"'), (True, "true"), (5.0, "5.0"), (None, "null")],
)
def test_rating_must_be_an_integer_from_1_to_5(value: Any, shown: str) -> None:
    assert refusal(payload(rating=value)) == (
        f"rating: {shown} is not allowed (an integer from 1 to 5)"
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("result_quality", "great"),
        ("result_quality", "EXCELLENT"),
        ("result_quality", 1),
        ("cost_value_ratio", "cheap"),
        ("cost_value_ratio", None),
        ("would_reuse", "yes"),
        ("would_reuse", 1),
        ("latency_ms", -1),
        ("latency_ms", 1.5),
        ("latency_ms", "100"),
        ("timestamp", "yesterday"),
        ("timestamp", 1775635200),
        ("timestamp", "2026-02-30T10:00:00Z"),
        ("transaction_id", "not-a-uuid"),
        ("transaction_id", 42),
        ("quality_details", 7),
    ],
)
def test_bad_values_name_the_field_the_value_and_what_is_allowed(field: str, value: Any) -> None:
    message = refusal(payload(**{field: value}))
    assert message == f"{field}: {json.dumps(value)} is not allowed ({ALLOWED[field]})"


@pytest.mark.parametrize("field", ["provider_agent", "skill_id", "requester_agent"])
@pytest.mark.parametrize("bad", ["../x", "a/b", "", ".hidden", "a..b", "x" * 129, "a b", "nul\0"])
def test_ids_that_could_leave_the_workspace_are_refused(field: str, bad: str) -> None:
    message = refusal(payload(**{field: bad}))
    assert message.startswith(f"{field}: ")
    assert "1-128 characters from A-Z a-z 0-9 . _ -" in message


def test_quality_details_up_to_500_characters() -> None:
    assert parse_rating(payload(quality_details="d" * 500), requester="r-1", now=NOW)
    message = refusal(payload(quality_details="d" * 501))
    assert message.startswith('quality_details: "dddd')
    assert "(501 characters)" in message and "at most 500 characters" in message


def test_unknown_fields_are_refused_with_the_allowed_ones_and_a_guess() -> None:
    message = refusal(payload(foo=1))
    assert message.startswith("unknown field `foo` (allowed: transaction_id, provider_agent,")
    typo = refusal(payload(rating=..., ratng=5))
    assert typo.startswith("unknown field `ratng` (did you mean `rating`?")
    assert typo.endswith("rating is missing (an integer from 1 to 5)")


@pytest.mark.parametrize(
    "field", ["transaction_id", "provider_agent", "skill_id", "rating", "would_reuse"]
)
def test_a_missing_required_field_is_named(field: str) -> None:
    assert refusal(payload(**{field: ...})) == f"{field} is missing ({ALLOWED[field]})"


def test_several_missing_fields_are_listed_together() -> None:
    assert refusal({"transaction_id": TX}) == (
        "missing fields: provider_agent, skill_id, rating, result_quality, would_reuse,"
        " cost_value_ratio"
    )


def test_optional_fields_may_be_left_out_or_null() -> None:
    rating = parse_rating(
        payload(latency_ms=None, quality_details=..., timestamp=None), requester="r-1", now=NOW
    )
    assert rating.latency_ms is None and rating.quality_details is None
    assert rating.timestamp == "2026-04-08T10:00:00.000Z"


def test_requester_comes_from_the_payload_or_from_the_caller() -> None:
    own = parse_rating(payload(requester_agent="buyer-7"), requester="other", now=NOW)
    assert own.requester_agent == "buyer-7"
    assert parse_rating(payload(), requester="agent-x", now=NOW).requester_agent == "agent-x"
    message = refusal(payload(), requester=None)
    with pytest.raises(InvalidFeedback) as caught:
        parse_rating(payload(), requester=None, now=NOW)
    assert "requester_agent is missing" in message
    assert "--as" in caught.value.hint and "agent_id" in caught.value.hint


def test_a_provider_cannot_rate_its_own_skill() -> None:
    message = refusal(payload(), requester="heavylift-chengwen")
    assert "cannot rate its own skill" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"rating": 5,}', r"invalid JSON: .* \(line 1, column 14\)"),
        ('{\n  "rating": 5\n  "skill_id": "x"\n}', r"invalid JSON: .* \(line 3, column 3\)"),
        ("", r"the JSON ends before it is complete \(line 1, column 1\)"),
        ('{"rating": NaN}', r"NaN is not a JSON value"),
        ("[" * 50_000, r"the JSON is nested more than 64 levels deep"),
        ('{"rating": 5, "rating": 4}', r"the key 'rating' appears twice in one object"),
        ('{"rating": ' + "5" * 101 + "}", r"a number of 101 digits \(at most 100 are accepted\)"),
    ],
)
def test_text_that_is_not_json_is_explained_with_its_position(text: str, expected: str) -> None:
    assert re.fullmatch(expected, refusal(text))


@pytest.mark.parametrize(
    ("value", "kind"), [([1], "a list"), ("x", "a string"), (3, "a number"), (None, "null")]
)
def test_a_rating_must_be_an_object(value: Any, kind: str) -> None:
    assert refusal(json.dumps(value)) == f"a rating must be a JSON object, not {kind}"


def test_huge_input_is_refused_before_parsing() -> None:
    message = refusal(json.dumps(payload(quality_details="x" * 100_000)))
    assert message.startswith("the rating text is too large")


def test_rating_line_keeps_spec_order_and_leaves_out_empty_fields() -> None:
    rating = parse_rating(payload(latency_ms=None), requester="requester-1", now=NOW)
    line = rating_line(rating)
    assert "\n" not in line and "null" not in line
    assert list(json.loads(line)) == [
        "transaction_id", "provider_agent", "skill_id", "requester_agent", "rating",
        "result_quality", "quality_details", "would_reuse", "cost_value_ratio", "timestamp",
    ]  # fmt: skip
    assert Rating.model_validate_json(line) == rating


def test_non_ascii_details_stay_readable_in_the_line() -> None:
    rating = parse_rating(payload(quality_details="Très bien — ✓"), requester="r-1", now=NOW)
    assert "Très bien — ✓" in rating_line(rating)


@pytest.mark.parametrize(
    ("rating", "quality", "failed"),
    [
        (5, "excellent", False),
        (3, "acceptable", False),
        (2, "good", True),
        (1, "excellent", True),
        (4, "poor", True),
        (5, "failed", True),
    ],
)
def test_failed_rental(rating: int, quality: str, failed: bool) -> None:
    parsed = parse_rating(payload(rating=rating, result_quality=quality), requester="r", now=NOW)
    assert is_failed(parsed) is failed


def test_an_inbox_file_holds_one_rating_or_a_list() -> None:
    one = parse_rating_file(json.dumps(payload()), requester="r-1", now=NOW)
    assert [r.transaction_id for r in one] == [TX]
    other = "0f1c2a4e-8b3d-4e9f-a1b2-c3d4e5f60718"
    many = parse_rating_file(
        json.dumps([payload(), payload(transaction_id=other)]), requester="r-1", now=NOW
    )
    assert [r.transaction_id for r in many] == [TX, other]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("[]", "the file holds an empty list"),
        ('[{"transaction_id": "x"}, 1]', "rating 1 of 2: transaction_id: "),
        ("[PAYLOAD, 1]", "rating 2 of 2: a rating must be a JSON object, not a number"),
        ("[PAYLOAD, PAYLOAD]", f"transaction_id {TX} appears twice in the file"),
        ('{"transaction_id": ', "the JSON ends before it is complete"),
    ],
)
def test_a_bad_inbox_file_is_refused_as_a_whole(content: str, expected: str) -> None:
    text = content.replace("PAYLOAD", json.dumps(payload()))
    with pytest.raises(InvalidFeedback) as caught:
        parse_rating_file(text, requester="r-1", now=NOW)
    assert caught.value.message.startswith(expected)


def test_stored_lines_take_a_fast_path_only_when_already_canonical() -> None:
    rating = parse_rating(payload(), requester="requester-1", now=NOW)
    line = rating_line(rating)
    assert stored_fields(line) == rating.model_dump(exclude_none=True)
    edited = line.replace(TX, TX.upper()).replace("10:00:00.000Z", "12:00:00+02:00")
    assert stored_fields(edited) == rating.model_dump(exclude_none=True)


@pytest.mark.parametrize(
    "change",
    [
        {"rating": 6},
        {"rating": True},
        {"would_reuse": 1},
        {"latency_ms": -5},
        {"result_quality": "superb"},
        {"quality_details": "x" * 501},
        {"provider_agent": "../x"},
        {"transaction_id": "6f1c2a4e-8b3d-4e9f-a1b2-c3d4e5f6071"},
        {"timestamp": "2026-02-30T10:00:00.000Z"},
        {"timestamp": None},
        {"extra": 1},
    ],
)
def test_stored_lines_with_bad_fields_are_refused(change: dict[str, Any]) -> None:
    fields = parse_rating(payload(), requester="requester-1", now=NOW).model_dump()
    fields.update(change)
    with pytest.raises(InvalidFeedback):
        stored_fields(json.dumps(fields))


@pytest.mark.parametrize("line", ["not json", "[1, 2]", '"text"', b"\xff\xfe{}", "{}"])
def test_stored_lines_that_are_not_ratings_are_refused(line: str | bytes) -> None:
    with pytest.raises(InvalidFeedback):
        stored_fields(line)
