"""A disputed draft's file in each format, and the `reviews` key a settled dispute must drop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from feedbackd.core.curation.items import ItemError, parse_item
from feedbackd.core.reviews.disputefiles import (
    agreed_text,
    as_first_drafted,
    reviews_left,
    with_reviews,
    without_reviews,
)

REVIEWS: list[dict[str, Any]] = [
    {
        "curator": "Ada <ada@example.org>",
        "verdict": "approve",
        "content": {"title": "A"},
        "at": "t1",
    },
    {"curator": "Bo <bo@example.org>", "verdict": "reject", "notes": "No.\nToo long.", "at": "t2"},
]
DRAFTS = {
    "qi-1.json": '{"contentData": {"title": "Draft"}, "slug": "s"}',
    "qi-1.yaml": "# the writer's draft\ncontentData:\n  title: Draft\nslug: s",
    "qi-1.md": "---\ntitle: Draft\nslug: s\n---\nThe body.\n",
}


@pytest.mark.parametrize("name", sorted(DRAFTS))
def test_the_first_draft_with_each_curators_review(name: str) -> None:
    path = Path("_data/agents/w/disputed") / name
    first = DRAFTS[name].encode()
    text = with_reviews(first, path, REVIEWS)
    disputed = parse_item(text.encode(), path.suffix, "qi-1", path)
    draft = parse_item(first, path.suffix, "qi-1", path)
    assert disputed.document == {**draft.document, "reviews": REVIEWS}
    assert text.endswith("\n")


def test_yaml_keeps_the_drafts_own_lines() -> None:
    text = with_reviews(DRAFTS["qi-1.yaml"].encode(), Path("qi-1.yaml"), REVIEWS)
    assert text.startswith(DRAFTS["qi-1.yaml"] + "\nreviews:\n")


def test_markdown_keeps_its_body_after_the_front_matter() -> None:
    text = with_reviews(DRAFTS["qi-1.md"].encode(), Path("qi-1.md"), REVIEWS)
    assert text.startswith("---\ntitle: Draft\nslug: s\nreviews:\n")
    assert text.endswith("---\nThe body.\n")


def test_a_file_moved_out_with_its_reviews_key_is_an_error_saying_what_to_do() -> None:
    path = Path("approved/qi-1.json")
    kept = with_reviews(DRAFTS["qi-1.json"].encode(), path, REVIEWS)
    error = reviews_left(parse_item(kept.encode(), ".json", "qi-1", path))
    assert error is not None
    assert error.message == "qi-1 still holds the `reviews` key of its dispute"
    assert "delete the reviews key" in error.hint
    settled = parse_item(DRAFTS["qi-1.json"].encode(), ".json", "qi-1", path)
    assert reviews_left(settled) is None


@pytest.mark.parametrize("name", sorted(DRAFTS))
def test_a_command_that_settles_a_dispute_drops_the_reviews_key_alone(name: str) -> None:
    path = Path("_data/agents/w/disputed") / name
    first = DRAFTS[name].encode()
    settled = without_reviews(with_reviews(first, path, REVIEWS).encode(), path)
    assert parse_item(settled, path.suffix, "qi-1", path).document == (
        parse_item(first, path.suffix, "qi-1", path).document
    )
    if not name.endswith(".json"):  # the draft's own lines, comments included, as they were
        assert settled.decode().rstrip("\n") == DRAFTS[name].rstrip("\n")


def test_a_reviews_key_edited_by_hand_is_left_to_the_curator() -> None:
    path = Path("_data/agents/w/disputed/qi-1.yaml")
    text = with_reviews(DRAFTS["qi-1.yaml"].encode(), path, REVIEWS)
    text = text.replace("reviews:\n", "reviews:  # Ada's first, then Bo's\n")
    with pytest.raises(ItemError, match="changed by hand") as refused:
        without_reviews(text.encode(), path)
    assert "delete the reviews key" in refused.value.hint


def test_a_file_without_the_key_is_left_as_it_is() -> None:
    path = Path("_data/agents/w/disputed/qi-1.json")
    data = DRAFTS["qi-1.json"].encode()
    assert without_reviews(data, path) is data


@pytest.mark.parametrize("name", sorted(DRAFTS))
def test_the_decided_file_of_agreeing_approvals_holds_the_agreed_version(name: str) -> None:
    path = Path("_data/agents/w/approved") / name
    first = DRAFTS[name].encode()
    draft = parse_item(first, path.suffix, "qi-1", path)
    agreed = {**draft.content, "title": "Agreed title"}
    decided = parse_item(agreed_text(first, path, agreed, "").encode(), path.suffix, "qi-1", path)
    assert decided.content == agreed
    assert decided.document["slug"] == "s"  # the draft's other fields stay


@pytest.mark.parametrize("name", sorted(DRAFTS))
def test_the_decided_file_of_agreeing_rejections_holds_their_notes(name: str) -> None:
    path = Path("_data/agents/w/rejected") / name
    first = DRAFTS[name].encode()
    text = agreed_text(first, path, None, "Too long.\n\nOff topic.")
    decided = parse_item(text.encode(), path.suffix, "qi-1", path)
    assert decided.rejection_feedback == "Too long.\n\nOff topic."
    assert decided.content == parse_item(first, path.suffix, "qi-1", path).content


MOVED = {
    "qi-1.json": '{"contentData": {"title": "Edited"}, "originalContentData": {"title": "Draft"},'
    ' "slug": "s", "curator": "Ada <ada@example.org>", "rejectionFeedback": "No."}',
    "qi-1.yaml": "contentData:\n  title: Edited\noriginalContentData:\n  title: Draft\nslug: s\n"
    "curator: Ada <ada@example.org>\nrejectionFeedback: No.\n",
    "qi-1.md": "---\ntitle: Draft\nslug: s\ncurator: Ada <ada@example.org>\n"
    "rejectionFeedback: No.\n---\nThe body.\n",
}


@pytest.mark.parametrize("name", sorted(MOVED))
def test_a_draft_known_only_as_moved_loses_what_its_curator_added(name: str) -> None:
    path = Path("_data/agents/w/approved") / name
    first = as_first_drafted(MOVED[name].encode(), path)
    item = parse_item(first, path.suffix, "qi-1", path)
    assert (item.curator, item.rejection_feedback) == (None, None)
    assert item.content["title"] == "Draft"  # originalContentData, where the draft has one
    assert item.document["slug"] == "s"
