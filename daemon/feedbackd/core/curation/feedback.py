"""feedback.json: the curator feedback of one agent, oldest first, capped, written atomically.

Reading accepts the legacy `{original, corrected}` shape (see core/curation/feedbackjson.py, which
holds the rules of the file); a file that is not valid JSON is never overwritten (the caller leaves
the decision waiting and explains in `feedback.json.error`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from feedbackd.core.curation.feedbackjson import EntryType, read_entries
from feedbackd.core.ids import FEEDBACK_ENTRY, Draw, new_id
from feedbackd.core.jsontext import dumps_json
from feedbackd.core.timeutil import iso_ms


class FeedbackEntry(BaseModel):
    """One entry of feedback.json; unknown fields written by other tools are kept."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str = Field(min_length=1)
    type: EntryType
    queueItemId: str | None = None
    field: str | None = None
    original: str | None = None
    corrected: str | None = None
    notes: str | None = None
    createdAt: str

    def as_json(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)

    def identity(self) -> tuple[str | None, str, str | None, str | None, str | None]:
        """What makes two entries the same decision: (item, type, field, corrected, notes)."""
        return (self.queueItemId, self.type, self.field, self.corrected, self.notes)

    @property
    def is_example(self) -> bool:
        """Usable as a prompt example: a correction or edit with both values non-empty (as
        webhouse's own loader takes them, so both show the agent the same examples)."""
        return self.type in ("correction", "edit") and bool(self.original) and bool(self.corrected)


def new_entry(now: datetime, draw: Draw, **fields: Any) -> FeedbackEntry:
    return FeedbackEntry(id=new_id(FEEDBACK_ENTRY, now, draw), createdAt=iso_ms(now), **fields)


def parse_feedback(text: str) -> list[FeedbackEntry]:
    """Parse feedback.json text; raise InvalidFeedback naming the line or entry that is wrong."""
    # read_entries checks every field against the contract, so the model accepts each entry.
    return [FeedbackEntry.model_validate(value) for value in read_entries(text)]


def merge_new(
    existing: Sequence[FeedbackEntry], new: Iterable[FeedbackEntry], cap: int
) -> tuple[list[FeedbackEntry], list[FeedbackEntry]]:
    """Append the entries not already present (same identity), keep the newest `cap`.

    Returns (all entries to store, entries actually added).
    """
    seen = {entry.identity() for entry in existing}
    added = []
    for entry in new:
        if entry.identity() not in seen:
            seen.add(entry.identity())
            added.append(entry)
    combined = [*existing, *added]
    return combined[-cap:] if cap else combined, added


def dump_feedback(entries: Sequence[FeedbackEntry]) -> str:
    return dumps_json([entry.as_json() for entry in entries])
