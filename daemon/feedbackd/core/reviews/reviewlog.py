"""`reviews.jsonl`: the reviews of items that need several curators (SPEC section 15).

One line per review: `{"id", "item", "curator", "verdict", "content" (an approval's version of
the content fields), "notes" (a rejection's), "at"}`. The file is committed beside
`decisions.jsonl` and, like it, merges across clones by `id`, lines sorted by `at` (the merge
driver's rule for every `*.jsonl`, core/curation/merging.py): an item reviewed in two clones at
once keeps both reviews, once each.

It is read strictly: a review decides who may review an item next and what is decided, so a
damaged line is an error naming its line, never a review quietly lost.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from feedbackd.core.errors import InvalidFeedback
from feedbackd.core.formats.jsonl import parse_jsonl
from feedbackd.core.ids import LOWER_HEX, Draw, IdKind, is_valid_id, new_id
from feedbackd.core.people import Person
from feedbackd.core.timeutil import iso_ms, parse_iso

Verdict = Literal["approve", "reject"]
VERDICTS: tuple[Verdict, ...] = ("approve", "reject")
REVIEW = IdKind("rv", LOWER_HEX)
FILE_NAME = "reviews.jsonl"
_KEYS = {"id", "item", "curator", "verdict", "content", "notes", "at"}


@dataclass(frozen=True)
class ReviewRecord:
    """One curator's review of one item: a verdict, and the version or the note behind it."""

    id: str
    item: str
    curator: Person
    verdict: Verdict
    at: str
    content: dict[str, Any] | None = None
    notes: str | None = None

    def to_json(self) -> dict[str, Any]:
        value: dict[str, Any] = {
            "id": self.id,
            "item": self.item,
            "curator": str(self.curator),
            "verdict": self.verdict,
        }
        if self.verdict == "approve":
            value["content"] = self.content or {}
        else:
            value["notes"] = self.notes or ""
        value["at"] = self.at
        return value

    def line(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False, separators=(", ", ": "))


def new_review(
    item: str,
    curator: Person,
    verdict: Verdict,
    version: dict[str, Any] | str,
    now: datetime,
    draw: Draw,
) -> ReviewRecord:
    """A review made now: `version` is the content of an approval, the note of a rejection."""
    content = version if verdict == "approve" and isinstance(version, dict) else None
    notes = version if verdict == "reject" and isinstance(version, str) else None
    if (content is None) == (notes is None):
        raise ValueError(f"an {verdict} review needs {'content' if content is None else 'notes'}")
    record_id = new_id(REVIEW, now, draw)
    return ReviewRecord(record_id, item, curator, verdict, iso_ms(now), content, notes)


def parse_review(line: str) -> ReviewRecord:
    """One line; ValueError saying what is wrong with it."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON ({error.msg}, column {error.colno})") from None
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    unknown = sorted(set(value) - _KEYS)
    if unknown:
        raise ValueError(f"unknown key `{unknown[0]}`")
    return _record(value)


def _record(value: dict[str, Any]) -> ReviewRecord:
    for key in ("id", "item", "curator", "verdict", "at"):
        if not isinstance(value.get(key), str) or not value[key]:
            raise ValueError(f"`{key}` must be a non-empty string")
    if not is_valid_id(value["item"]):
        raise ValueError(f"`item` {value['item']!r} is not an item id")
    curator = Person.parse(value["curator"])
    parse_iso(value["at"])  # ValueError when it is no time
    verdict = value["verdict"]
    if verdict == "approve" and isinstance(value.get("content"), dict) and "notes" not in value:
        return ReviewRecord(
            value["id"], value["item"], curator, "approve", value["at"], value["content"]
        )
    if verdict == "reject" and isinstance(value.get("notes"), str) and "content" not in value:
        return ReviewRecord(
            value["id"], value["item"], curator, "reject", value["at"], None, value["notes"]
        )
    raise ValueError(
        "a review is `approve` with a `content` object or `reject` with `notes` text"
        f" (got `{verdict}`)"
    )


def read_reviews(text: str, source: str = FILE_NAME) -> list[ReviewRecord]:
    """Every review in file order; InvalidFeedback naming the first bad line. A line that
    appears twice (the same id and text, as a hand merge may leave it) counts once; one id with
    two different reviews is refused."""

    def refuse(number: int, why: str) -> None:
        raise _bad_line(source, number, why)

    reviews: dict[str, ReviewRecord] = {}
    for number, record in parse_jsonl(text, parse_review, refuse):
        earlier = reviews.setdefault(record.id, record)
        if earlier != record:
            raise _bad_line(source, number, f"a second, different review with id {record.id}")
    return list(reviews.values())


def _bad_line(source: str, number: int, why: str) -> InvalidFeedback:
    return InvalidFeedback(
        f"{source} line {number}: {why}",
        hint="restore the line from git (git log -p on the file), or correct it by hand",
    )


def reviews_of(
    records: Iterable[ReviewRecord], item: str, after: str | None = None
) -> list[ReviewRecord]:
    """The reviews of one item, oldest first; with `after` (the time the item last became a
    draft again), only those of its current round."""
    start = parse_iso(after) if after else None
    found = [r for r in records if r.item == item and (start is None or parse_iso(r.at) > start)]
    return sorted(found, key=lambda r: parse_iso(r.at))
