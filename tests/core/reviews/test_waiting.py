"""What waits for whom: an item's current round of reviews, who reviewed it, and each curator's
version of a disputed draft."""

from __future__ import annotations

from feedbackd.core.curation.decisions import DecisionRecord
from feedbackd.core.people import Person
from feedbackd.core.reviews.reviewlog import ReviewRecord
from feedbackd.core.reviews.waiting import (
    current_rounds,
    dispute_versions,
    reviewed_by,
    reviewers,
    round_starts,
)

ADA = Person("Ada", "ada@example.org")
BO = Person("Bo", "bo@example.org")


def review(item: str, curator: Person, at: str) -> ReviewRecord:
    return ReviewRecord(f"rv-{item}-{at}", item, curator, "reject", at, notes="no")


def test_a_round_starts_at_the_items_latest_queued_line() -> None:
    ledger = [
        DecisionRecord("d1", "qi-1", "approved", "2026-01-01T00:00:00Z"),
        DecisionRecord("d2", "qi-1", "queued", "2026-01-02T00:00:00Z"),
        DecisionRecord("d3", "qi-2", "rejected", "2026-01-02T00:00:00Z"),
        DecisionRecord("d4", "qi-1", "queued", "2026-01-03T00:00:00Z"),
    ]
    starts = round_starts(ledger)
    assert starts == {"qi-1": "2026-01-03T00:00:00Z"}
    old, new = (
        review("qi-1", ADA, "2026-01-02T12:00:00Z"),
        review("qi-1", BO, "2026-01-04T00:00:00Z"),
    )
    other = review("qi-2", ADA, "2026-01-01T00:00:00Z")
    rounds = current_rounds([new, other, old], starts)
    assert rounds == {"qi-1": [new], "qi-2": [other]}


def test_a_curator_is_their_address_in_any_case() -> None:
    reviews = [
        review("qi-1", ADA, "2026-01-01T00:00:00Z"),
        review("qi-1", BO, "2026-01-02T00:00:00Z"),
    ]
    assert reviewed_by(reviews, Person("A. Other Name", "ADA@Example.org"))
    assert not reviewed_by(reviews[1:], ADA)
    assert reviewers([*reviews, reviews[0]]) == [str(ADA), str(BO)]


def test_each_version_says_what_it_changed_or_why_it_was_rejected() -> None:
    first = {"title": "Draft", "seo": {"metaTitle": "M"}, "body": "Text.\n", "n": 3}
    key = [
        {"curator": str(ADA), "verdict": "approve", "at": "t1",
         "content": {"title": "Better", "seo": {"metaTitle": "M"}, "body": "Text.", "n": 4}},
        {"curator": str(BO), "verdict": "reject", "notes": "Too long.", "at": "t2"},
        "not a review", {"verdict": "maybe"},
    ]  # fmt: skip
    assert dispute_versions(first, key) == [
        # the body differs by its trailing newline only: the same text to a curator
        {"curator": str(ADA), "verdict": "approve", "at": "t1", "edits": {"title": "Better"}},
        {"curator": str(BO), "verdict": "reject", "at": "t2", "notes": "Too long."},
    ]
    assert dispute_versions(first, None) == [] and dispute_versions(first, {"a": 1}) == []
