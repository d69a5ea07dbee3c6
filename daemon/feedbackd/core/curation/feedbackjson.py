"""feedback.json as plain JSON values: reading the array, the legacy shape, the rules for each
entry, and the shape entries are stored in.

This is the whole contract of the file (SPEC section 4) without a model class, so that the merge
driver, which git starts once for every merged file, reads and writes feedback without importing
pydantic. `core/curation/feedback.py` builds its FeedbackEntry model on the same reading; the
messages here are worded as pydantic words them, so both tell a curator the same thing.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal, get_args

from feedbackd.core.errors import InvalidFeedback
from feedbackd.core.formats.jsontext import MalformedJson, half_character, load_strict_json
from feedbackd.core.ids import is_utf8

EntryType = Literal["correction", "rejection", "edit"]
ENTRY_TYPES: tuple[str, ...] = get_args(EntryType)
LEGACY_CREATED_AT = "1970-01-01T00:00:00.000Z"
# The contract's fields in the order they are stored; any other field follows them, kept as is.
FIELDS = ("id", "type", "queueItemId", "field", "original", "corrected", "notes", "createdAt")
OPTIONAL_FIELDS = frozenset({"queueItemId", "field", "original", "corrected", "notes"})
_QUOTED_TYPES = [f"'{kind}'" for kind in ENTRY_TYPES]
_TYPE_MESSAGE = f"Input should be {', '.join(_QUOTED_TYPES[:-1])} or {_QUOTED_TYPES[-1]}"


def legacy_id(original: str, corrected: str) -> str:
    digest = hashlib.sha256(f"{original}\0{corrected}".encode()).hexdigest()
    return f"legacy-{digest[:12]}"


def read_entries(text: str) -> list[dict[str, Any]]:
    """The entries of feedback.json text, legacy ones in the full shape, each checked against
    the contract; raise InvalidFeedback naming the line or entry that is wrong."""
    if not text.strip():
        return []
    try:
        raw = load_strict_json(text)
    except MalformedJson as exc:
        raise InvalidFeedback(
            f"feedback.json is not valid JSON: {exc.message}",
            hint="repair it by hand or restore the last good version from git",
        ) from None
    if not isinstance(raw, list):
        raise InvalidFeedback(
            "feedback.json must hold a JSON array of entries",
            hint="restore the last good version from git",
        )
    # Only an escape spells half of a character pair in UTF-8 text: most files hold none.
    half = half_character(raw) if "\\u" in text or not is_utf8(text) else None
    if half is not None:  # it could never be written back
        raise InvalidFeedback(
            f"feedback.json holds {half}, half of a character pair",
            hint="write the character itself, or restore the last good version from git",
        )
    return [_checked_entry(value, index) for index, value in enumerate(raw)]


def stored_shape(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry as it is written: the contract's fields in their order, then the others; fields
    without a value (null) are left out."""
    fields = [*(name for name in FIELDS if name in entry), *(k for k in entry if k not in FIELDS)]
    return {name: entry[name] for name in fields if entry[name] is not None}


def _checked_entry(value: Any, index: int) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidFeedback(f"feedback.json entry {index + 1} is not an object")
    entry: dict[str, Any] = _upgrade_legacy(value) if _is_legacy(value) else value
    problem = entry_problem(entry)
    if problem is not None:
        field, message = problem
        raise InvalidFeedback(
            f"feedback.json entry {index + 1}: `{field}`: {message}",
            hint="fix that entry or restore the last good version from git",
        )
    return entry


def entry_problem(entry: dict[str, Any]) -> tuple[str, str] | None:
    """The first field (in stored order) that breaks the contract, and what is wrong with it."""
    for name in FIELDS:
        if name not in entry:
            if name in OPTIONAL_FIELDS:
                continue
            return name, "Field required"
        value = entry[name]
        if name == "type":
            if value not in ENTRY_TYPES:
                return name, _TYPE_MESSAGE
        elif value is None and name in OPTIONAL_FIELDS:
            continue
        elif not isinstance(value, str):
            return name, "Input should be a valid string"
        elif name == "id" and not value:
            return name, "String should have at least 1 character"
    return None


def _is_legacy(value: dict[str, Any]) -> bool:
    return ("type" not in value or "id" not in value) and "original" in value


def _upgrade_legacy(value: dict[str, Any]) -> dict[str, Any]:
    upgraded = {"type": "correction", "createdAt": LEGACY_CREATED_AT, **value}
    if "id" not in upgraded:
        upgraded["id"] = legacy_id(str(value.get("original")), str(value.get("corrected")))
    return upgraded
