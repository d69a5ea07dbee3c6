"""feedback.json: the curator feedback of one agent, oldest first, capped, written atomically.

Reading accepts the legacy `{original, corrected}` shape; a file that is not valid JSON is never
overwritten (the caller leaves the decision waiting and explains in `feedback.json.error`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from feedbackd.core.errors import InvalidFeedback
from feedbackd.core.ids import FEEDBACK_ENTRY, new_id
from feedbackd.core.jsontext import dumps_json, half_character
from feedbackd.core.timeutil import iso_ms

EntryType = Literal["correction", "rejection", "edit"]
LEGACY_CREATED_AT = "1970-01-01T00:00:00.000Z"


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
        """Usable as a prompt example: a correction or edit with both values."""
        return (
            self.type in ("correction", "edit")
            and self.original is not None
            and self.corrected is not None
        )


def new_entry(now: datetime, **fields: Any) -> FeedbackEntry:
    return FeedbackEntry(id=new_id(FEEDBACK_ENTRY, now), createdAt=iso_ms(now), **fields)


def legacy_id(original: str, corrected: str) -> str:
    digest = hashlib.sha256(f"{original}\0{corrected}".encode()).hexdigest()
    return f"legacy-{digest[:12]}"


def parse_feedback(text: str) -> list[FeedbackEntry]:
    """Parse feedback.json text; raise InvalidFeedback naming the line or entry that is wrong."""
    if not text.strip():
        return []
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidFeedback(
            f"feedback.json is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
            hint="repair it by hand or restore the last good version from git",
        ) from None
    if not isinstance(raw, list):
        raise InvalidFeedback(
            "feedback.json must hold a JSON array of entries",
            hint="restore the last good version from git",
        )
    half = half_character(raw)
    if half is not None:  # it could never be written back
        raise InvalidFeedback(
            f"feedback.json holds {half}, half of a character pair",
            hint="write the character itself, or restore the last good version from git",
        )
    return [_parse_entry(value, index) for index, value in enumerate(raw)]


def _parse_entry(value: Any, index: int) -> FeedbackEntry:
    if not isinstance(value, dict):
        raise InvalidFeedback(f"feedback.json entry {index + 1} is not an object")
    if _is_legacy(value):
        value = _upgrade_legacy(value)
    try:
        return FeedbackEntry.model_validate(value)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise InvalidFeedback(
            f"feedback.json entry {index + 1}: `{where}`: {problem['msg']}",
            hint="fix that entry or restore the last good version from git",
        ) from None


def _is_legacy(value: dict[str, Any]) -> bool:
    return ("type" not in value or "id" not in value) and "original" in value


def _upgrade_legacy(value: dict[str, Any]) -> dict[str, Any]:
    upgraded = {"type": "correction", "createdAt": LEGACY_CREATED_AT, **value}
    if "id" not in upgraded:
        upgraded["id"] = legacy_id(str(value.get("original")), str(value.get("corrected")))
    return upgraded


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
