"""reviews.jsonl: its lines read strictly, and two clones' files merged by id."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from feedbackd.core.curation.merging import kind_of, merge_bytes
from feedbackd.core.errors import InvalidFeedback
from feedbackd.core.people import Person
from feedbackd.core.reviews.reviewlog import new_review, read_reviews, reviews_of

ADA = Person("Ada", "ada@example.org")
BO = Person("Bo", "bo@example.org")
NOW = datetime(2026, 4, 8, 10, 0, tzinfo=UTC)


def test_a_review_line_holds_the_contract_fields() -> None:
    approval = new_review("qi-1", ADA, "approve", {"title": "T"}, NOW, lambda a, n: "abc123")
    assert json.loads(approval.line()) == {
        "id": f"rv-{int(NOW.timestamp() * 1000)}-abc123",
        "item": "qi-1",
        "curator": "Ada <ada@example.org>",
        "verdict": "approve",
        "content": {"title": "T"},
        "at": "2026-04-08T10:00:00.000Z",
    }
    rejection = new_review("qi-1", BO, "reject", "too long", NOW, lambda a, n: "abc124")
    assert json.loads(rejection.line())["notes"] == "too long"
    assert "content" not in json.loads(rejection.line())
    assert read_reviews(approval.line() + "\n" + rejection.line() + "\n") == [approval, rejection]


def test_a_verdict_needs_its_version() -> None:
    with pytest.raises(ValueError):
        new_review("qi-1", ADA, "approve", "a note", NOW, lambda a, n: "abc123")


GOOD = {
    "id": "rv-1-a",
    "item": "qi-1",
    "curator": "Ada <ada@example.org>",
    "verdict": "reject",
    "notes": "no",
    "at": "2026-04-08T10:00:00.000Z",
}


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"verdict": "maybe"}, "`approve` with a `content` object or `reject` with `notes`"),
        ({"verdict": "approve"}, "`approve` with a `content`"),
        ({"curator": "Ada"}, "Name <email>"),
        ({"item": "../x"}, "not an item id"),
        ({"at": "yesterday"}, "yesterday"),
        ({"id": ""}, "`id` must be a non-empty string"),
        ({"extra": 1}, "unknown key `extra`"),
    ],
)
def test_a_bad_line_is_an_error_naming_it(change: dict[str, object], why: str) -> None:
    text = json.dumps(GOOD) + "\n\n" + json.dumps({**GOOD, "id": "rv-2-b", **change}) + "\n"
    with pytest.raises(InvalidFeedback) as caught:
        read_reviews(text, "writer/reviews.jsonl")
    assert caught.value.message.startswith("writer/reviews.jsonl line 3: ")
    assert why in caught.value.message


def test_not_json_is_an_error_naming_the_line() -> None:
    with pytest.raises(InvalidFeedback, match=r"line 1: not valid JSON"):
        read_reviews('{"id": \n')


def test_a_line_twice_counts_once_but_one_id_twice_differently_is_refused() -> None:
    line = json.dumps(GOOD)
    assert len(read_reviews(f"{line}\n{line}\n")) == 1
    other = json.dumps({**GOOD, "notes": "yes"})
    with pytest.raises(InvalidFeedback, match="line 2: a second, different review"):
        read_reviews(f"{line}\n{other}\n")


def test_the_reviews_of_an_item_in_its_current_round() -> None:
    old = new_review("qi-1", ADA, "reject", "no", NOW, lambda a, n: "aaaaaa")
    later = NOW.replace(hour=12)
    new = new_review("qi-1", BO, "reject", "no", later, lambda a, n: "bbbbbb")
    other = new_review("qi-2", BO, "reject", "no", later, lambda a, n: "cccccc")
    assert reviews_of([new, other, old], "qi-1") == [old, new]
    assert reviews_of([new, other, old], "qi-1", after="2026-04-08T11:00:00.000Z") == [new]


def test_two_clones_reviews_merge_by_id_as_decisions_do() -> None:
    """Each clone recorded a review of qi-1 (and the merge driver takes every *.jsonl)."""
    base = new_review("qi-0", ADA, "reject", "x", NOW, lambda a, n: "000000").line() + "\n"
    ours = (
        base
        + new_review("qi-1", BO, "reject", "x", NOW.replace(minute=2), lambda a, n: "111111").line()
        + "\n"
    )
    theirs = (
        base
        + new_review(
            "qi-1", ADA, "reject", "y", NOW.replace(minute=1), lambda a, n: "222222"
        ).line()
        + "\n"
    )
    kind = kind_of("_data/agents/writer/reviews.jsonl")
    assert kind == "jsonl"
    merged = merge_bytes(kind, base.encode(), ours.encode(), theirs.encode(), 200)
    assert merged == merge_bytes(kind, base.encode(), theirs.encode(), ours.encode(), 200)
    reviews = read_reviews(merged.decode())
    assert [(r.item, r.curator.name) for r in reviews] == [
        ("qi-0", "Ada"),
        ("qi-1", "Ada"),
        ("qi-1", "Bo"),
    ]
