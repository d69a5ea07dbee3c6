"""feedback.json: the curator feedback of one agent, oldest first, capped, written atomically;
and the rules for an entry a program records (`feedbackd record`, the webhouse CMS route).

Reading accepts the legacy `{original, corrected}` shape (see core/curation/feedbackjson.py, which
holds the rules of the file); a file that is not valid JSON is never overwritten (the caller leaves
the decision waiting and explains in `feedback.json.error`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from operator import attrgetter
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field

from feedbackd.core.curation.feedbackjson import ENTRY_TYPES, EntryType, read_entries
from feedbackd.core.errors import InvalidFeedback
from feedbackd.core.formats.jsontext import dumps_json, refuse_unknown_keys
from feedbackd.core.ids import FEEDBACK_ENTRY, Draw, new_id, validate_id
from feedbackd.core.timeutil import iso_ms

# What makes two entries one lesson (the same decision's), in feedback.json as in the
# forgotten.jsonl lines that keep a lesson from coming back: these fields, in this order.
IDENTITY_KEYS = ("queueItemId", "type", "field", "corrected", "notes")
Identity = tuple[str | None, str, str | None, str | None, str | None]
_identity_fields = attrgetter(*IDENTITY_KEYS)
# What a program may give for a new entry: the id and the time are feedbackd's.
# In the order a refusal checks them, so the same input is always refused for the same field.
RECORD_FIELDS = ("type", "queueItemId", "field", "original", "corrected", "notes")


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

    def to_json(self) -> dict[str, Any]:
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


def new_entry(now: datetime, draw: Draw, **fields: Any) -> FeedbackEntry:
    return FeedbackEntry(id=new_id(FEEDBACK_ENTRY, now, draw), createdAt=iso_ms(now), **fields)


def check_record(data: dict[str, Any]) -> dict[str, Any]:
    """A record payload already parsed: only known fields, strings, the type's needed fields."""
    _check_type(data.get("type"))
    refuse_unknown_keys(data, RECORD_FIELDS)
    _check_record_shape(data)
    return data


def _check_type(kind: Any) -> None:
    if kind not in ENTRY_TYPES:
        given = "missing" if kind is None else json.dumps(kind)
        raise InvalidFeedback(
            f"type must be one of {', '.join(ENTRY_TYPES)} ({given})",
            hint="correction and edit need original and corrected; rejection needs notes",
        )


def _check_record_shape(data: dict[str, Any]) -> None:
    kind = data["type"]
    for key in RECORD_FIELDS[1:]:
        if key in data and not isinstance(data[key], str):
            raise InvalidFeedback(f"{key}: must be a string, not {json.dumps(data[key])}")
    if "queueItemId" in data:
        validate_id(data["queueItemId"], "queueItemId")
    needed = ("notes",) if kind == "rejection" else ("original", "corrected")
    missing = [key for key in needed if key not in data]
    if missing:
        raise InvalidFeedback(f"a {kind} needs `{missing[0]}`")


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
    return dumps_json([entry.to_json() for entry in entries])
