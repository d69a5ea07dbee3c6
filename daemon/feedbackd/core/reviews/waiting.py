"""What waits for whom when several curators review a draft (SPEC section 15), as the panel and
`GET /api/agents/{id}/queue` show it: a draft in queue/ or review/ waits for every curator who
has not reviewed it in its current round; a disputed one, for whoever settles it, with each
curator's version beside the others.

Pure: the ledger's records, the reviews and a disputed file's `reviews` key in; values out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from feedbackd.core.curation.decisions import DecisionRecord
from feedbackd.core.curation.items import flatten_strings, normalised
from feedbackd.core.people import Person
from feedbackd.core.reviews.reviewlog import ReviewRecord, reviews_of


def round_starts(ledger: Iterable[DecisionRecord]) -> dict[str, str]:
    """item → the time of its latest `queued` line: the reviews before it belong to an earlier
    round (a decision later moved back to queue/ is reviewed afresh)."""
    return {record.item: record.at for record in ledger if record.state == "queued"}


def current_rounds(
    reviews: Sequence[ReviewRecord], starts: dict[str, str]
) -> dict[str, list[ReviewRecord]]:
    """item → its reviews in its current round, oldest first."""
    items = dict.fromkeys(review.item for review in reviews)
    return {item: reviews_of(reviews, item, starts.get(item)) for item in items}


def reviewed_by(reviews: Iterable[ReviewRecord], curator: Person) -> bool:
    """Whether `curator` is among the reviewers (a curator is their email, in any case)."""
    email = curator.email.lower()
    return any(review.curator.email.lower() == email for review in reviews)


def reviewers(reviews: Iterable[ReviewRecord]) -> list[str]:
    """Each reviewer once, in the order they reviewed."""
    return list(dict.fromkeys(str(review.curator) for review in reviews))


def dispute_versions(first: dict[str, Any], reviews_key: object) -> list[dict[str, Any]]:
    """Each curator's version of a disputed draft: their verdict, the text fields their
    approval changed from the draft as first drafted (`edits`, what approving that version
    writes), or the notes of their rejection. Entries that are not a review are left out: the
    file is a curator's to edit."""
    drafted = flatten_strings(first)
    versions = []
    for entry in reviews_key if isinstance(reviews_key, list) else []:
        if not isinstance(entry, dict) or entry.get("verdict") not in ("approve", "reject"):
            continue
        version: dict[str, Any] = {
            "curator": str(entry.get("curator") or ""),
            "verdict": entry["verdict"],
            "at": str(entry.get("at") or ""),
        }
        if entry["verdict"] == "approve":
            content = entry.get("content")
            version["edits"] = _edits(drafted, content if isinstance(content, dict) else {})
        else:
            version["notes"] = str(entry.get("notes") or "")
        versions.append(version)
    return versions


def _edits(drafted: dict[str, str], content: dict[str, Any]) -> dict[str, str]:
    """The text fields of `content` that differ from the draft's (as curators read text)."""
    return {
        field: value
        for field, value in flatten_strings(content).items()
        if field not in drafted or normalised(drafted[field]) != normalised(value)
    }
