"""feedback.json: the curator feedback of one agent, oldest first, capped, written atomically.

Reading accepts the legacy `{original, corrected}` shape (see core/curation/feedbackjson.py, which
holds the rules of the file); a file that is not valid JSON is never overwritten (the caller leaves
the decision waiting and explains in `feedback.json.error`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from operator import attrgetter
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field

from feedbackd.core.curation.feedbackjson import EntryType, read_entries
from feedbackd.core.ids import FEEDBACK_ENTRY, new_id
from feedbackd.core.jsontext import dumps_json
from feedbackd.core.timeutil import iso_ms

# What makes two entries one lesson (the same decision's), in feedback.json as in the
# forgotten.jsonl lines that keep a lesson from coming back: these fields, in this order.
IDENTITY_KEYS = ("queueItemId", "type", "field", "corrected", "notes")
Identity = tuple[str | None, str, str | None, str | None, str | None]
_identity_fields = attrgetter(*IDENTITY_KEYS)


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

    def identity(self) -> Identity:
        # The model checked each field's type: no value needs turning into text.
        return cast(Identity, _identity_fields(self))

    @property
    def is_example(self) -> bool:
        """Usable as a prompt example: a correction or edit with both values non-empty (as
        webhouse's own loader takes them, so both show the agent the same examples)."""
        return self.type in ("correction", "edit") and bool(self.original) and bool(self.corrected)


def identity_of(values: Mapping[str, object]) -> Identity:
    """The identity of an entry given by its fields (IDENTITY_KEYS); a value that is not text
    counts as none."""
    item, kind, field, corrected, notes = (values.get(key) for key in IDENTITY_KEYS)
    return (_text(item), str(kind), _text(field), _text(corrected), _text(notes))


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def new_entry(now: datetime, **fields: Any) -> FeedbackEntry:
    return FeedbackEntry(id=new_id(FEEDBACK_ENTRY, now), createdAt=iso_ms(now), **fields)


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
