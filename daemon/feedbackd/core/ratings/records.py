"""Rating records: one requester's feedback on one rental of a provider's skill (SPEC §6).

Everything here is pure: parse and validate what a requester submits, refuse anything doubtful
with a message that names the field, the value given and what is allowed, and render the one
JSON line that the rating store appends.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
)
from pydantic_core import ErrorDetails

from feedbackd.core.errors import InvalidFeedback
from feedbackd.core.formats.jsontext import json_kind, load_strict_json
from feedbackd.core.ids import ID_RULE, is_valid_id
from feedbackd.core.ratingwords import COST_VALUES as COST_VALUES
from feedbackd.core.ratingwords import FAILED_QUALITIES as FAILED_QUALITIES
from feedbackd.core.ratingwords import QUALITIES as QUALITIES
from feedbackd.core.ratingwords import CostValue as CostValue
from feedbackd.core.ratingwords import Quality as Quality
from feedbackd.core.timeutil import canonical_iso_ms, iso_ms, parse_iso, unix_ms

# One submitted rating is a few hundred bytes; an inbox file may hold many of them.
MAX_RATING_CHARS = 64 * 1024
MAX_INBOX_CHARS = 8 * 1024 * 1024

# What each field accepts, in words, for error messages (and the field order of SPEC §6).
ALLOWED: dict[str, str] = {
    "transaction_id": "a UUID such as 123e4567-e89b-12d3-a456-426614174000",
    "provider_agent": f"the provider's agent id: {ID_RULE}",
    "skill_id": f"a skill id: {ID_RULE}",
    "requester_agent": f"your agent id: {ID_RULE}",
    "rating": "an integer from 1 to 5",
    "latency_ms": "an integer of 0 or more (milliseconds), or leave it out",
    "result_quality": "one of " + ", ".join(QUALITIES),
    "quality_details": "text of at most 500 characters, or leave it out",
    "would_reuse": "true or false",
    "cost_value_ratio": "one of " + ", ".join(COST_VALUES),
    "timestamp": "an ISO 8601 time such as 2026-04-08T10:00:00Z, or leave it out for now",
}
# Optional fields where an explicit JSON null means "not given".
_NULL_MEANS_ABSENT = ("latency_ms", "quality_details", "timestamp", "requester_agent")

# How to say who rented the skill, by where the rating comes from: `--as` is an option of the
# command; a file dropped in the inbox can only carry the field (or rely on the setting).
ASK_COMMAND = "pass --as AGENT, set agent_id in feedbackd.yaml, or add requester_agent"
ASK_FILE = "add requester_agent to the rating, or set agent_id in feedbackd.yaml"
REQUESTER_MISSING = "requester_agent is missing: who rented the skill?"
_FIX_FIELDS = "fix the named fields (see `feedbackd feedback submit --help`)"


class InvalidRating(InvalidFeedback):
    """A rating refused for one or more problems, all named at once: `issues` lists them (the
    HTTP API answers with that list), the message joins them."""

    def __init__(self, issues: Sequence[str], *, hint: str) -> None:
        super().__init__("; ".join(issues), hint=hint)
        self.issues = tuple(issues)


class Rating(BaseModel):
    """One stored rating; field order is the order of SPEC §6 and of the stored JSON line."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    transaction_id: StrictStr
    provider_agent: StrictStr
    skill_id: StrictStr
    requester_agent: StrictStr
    rating: StrictInt = Field(ge=1, le=5)
    latency_ms: StrictInt | None = Field(default=None, ge=0)
    result_quality: Quality
    quality_details: StrictStr | None = Field(default=None, max_length=500)
    would_reuse: StrictBool
    cost_value_ratio: CostValue
    timestamp: StrictStr  # a submitted rating without one is given the time it arrives

    @field_validator("transaction_id")
    @classmethod
    def _canonical_uuid(cls, value: str) -> str:
        try:
            return str(uuid.UUID(value))
        except ValueError:
            raise ValueError("not a UUID") from None

    @field_validator("provider_agent", "skill_id", "requester_agent")
    @classmethod
    def _safe_id(cls, value: str) -> str:
        if not is_valid_id(value):
            raise ValueError("not a valid id")
        return value

    @field_validator("timestamp")
    @classmethod
    def _utc_ms(cls, value: str) -> str:
        return canonical_iso_ms(value)

    @property
    def moment(self) -> datetime:
        return parse_iso(self.timestamp)

    @property
    def unix_ms(self) -> int:
        return unix_ms(self.moment)

    @property
    def month(self) -> str:
        """`YYYY-MM` of the rating's time: the month file it is stored in."""
        return self.timestamp[:7]


def parse_rating(
    payload: str | dict[str, Any],
    *,
    requester: str | None,
    now: datetime,
    ask: str = ASK_COMMAND,
) -> Rating:
    """Validate one submitted rating (JSON text or an already parsed object); `ask` says how
    to name the requester when there is none."""
    data = _load_json(payload, MAX_RATING_CHARS) if isinstance(payload, str) else payload
    return _rating_from_object(data, requester=requester, now=now, ask=ask)


def parse_rating_file(text: str, *, requester: str | None, now: datetime) -> list[Rating]:
    """Validate an inbox file: one rating object or a list of them (all or nothing)."""
    data = _load_json(text, MAX_INBOX_CHARS)
    if not isinstance(data, list):
        return [_rating_from_object(data, requester=requester, now=now, ask=ASK_FILE)]
    if not data:
        raise InvalidFeedback("the file holds an empty list", hint="put at least one rating in it")
    ratings = []
    for number, element in enumerate(data, start=1):
        try:
            ratings.append(_rating_from_object(element, requester=requester, now=now, ask=ASK_FILE))
        except InvalidFeedback as exc:
            raise InvalidFeedback(
                f"rating {number} of {len(data)}: {exc.message}", hint=exc.hint
            ) from None
    _refuse_repeated_transactions(ratings)
    return ratings


def rating_line(r: Rating) -> str:
    """The JSON line stored for a rating: keys in SPEC order, optional fields left out."""
    return json.dumps(r.model_dump(exclude_none=True), ensure_ascii=False)


def _load_json(text: str, limit: int) -> Any:
    if len(text) > limit:
        raise InvalidFeedback(
            f"the rating text is too large ({len(text)} characters, at most {limit})",
            hint="submit one rating of a few hundred characters at a time",
        )
    return load_strict_json(text)


def _rating_from_object(data: Any, *, requester: str | None, now: datetime, ask: str) -> Rating:
    if not isinstance(data, dict):
        raise InvalidFeedback(
            f"a rating must be a JSON object, not {json_kind(data)}",
            hint='send {"transaction_id": ..., "provider_agent": ..., ...}',
        )
    fields = {key: value for key, value in data.items() if not _absent(key, value)}
    if "requester_agent" not in fields and requester is not None:
        fields["requester_agent"] = requester
    fields.setdefault("timestamp", iso_ms(now))
    try:
        rating = Rating.model_validate(fields)
    except ValidationError as exc:
        # A missing requester is one problem among the others, all named at once.
        raise _explain(exc, ask) from None
    return _refuse_self_rating(rating)


def _absent(key: str, value: Any) -> bool:
    return value is None and key in _NULL_MEANS_ABSENT


def _refuse_self_rating(rating: Rating) -> Rating:
    # A provider rating its own rental would inflate its reputation and steer its own prices.
    if rating.requester_agent == rating.provider_agent:
        raise InvalidFeedback(
            f"requester_agent: {rating.requester_agent!r} cannot rate its own skill",
            hint="ratings come from the agent that rented the skill; check --as or agent_id",
        )
    return rating


def _refuse_repeated_transactions(ratings: list[Rating]) -> None:
    seen: set[str] = set()
    for rating in ratings:
        if rating.transaction_id in seen:
            raise InvalidFeedback(
                f"transaction_id {rating.transaction_id} appears twice in the file",
                hint="each rental is rated once; remove the repeated rating",
            )
        seen.add(rating.transaction_id)


def _explain(exc: ValidationError, ask: str | None = None) -> InvalidRating:
    """One message for all problems: unknown fields first (a typo explains a missing field).
    With `ask` (a submitted rating, not a stored line), a missing requester is named apart,
    with how to give one."""
    errors = exc.errors()
    unknown = [_unknown(e) for e in errors if e["type"] == "extra_forbidden"]
    wrong = [_wrong(e) for e in errors if e["type"] not in ("extra_forbidden", "missing")]
    missing = [_field(e) for e in errors if e["type"] == "missing"]
    asked = ask is not None and "requester_agent" in missing
    problems = (
        unknown + wrong + _missing([f for f in missing if not asked or f != "requester_agent"])
    )
    hints = [_FIX_FIELDS] if problems else []
    if asked and ask is not None:
        problems.append(REQUESTER_MISSING)
        hints.append(ask)
    return InvalidRating(problems, hint="; ".join(hints))


def _missing(fields: list[str]) -> list[str]:
    if len(fields) == 1:
        return [f"{fields[0]} is missing ({ALLOWED.get(fields[0], 'required')})"]
    return ["missing fields: " + ", ".join(fields)] if fields else []


def _field(error: ErrorDetails) -> str:
    return ".".join(str(part) for part in error["loc"]) or "rating"


def _unknown(error: ErrorDetails) -> str:
    field = _field(error)
    close = difflib.get_close_matches(field, list(ALLOWED), n=1)
    guess = f"did you mean `{close[0]}`? " if close else ""
    return f"unknown field `{field}` ({guess}allowed: {', '.join(ALLOWED)})"


def _wrong(error: ErrorDetails) -> str:
    field = _field(error)
    allowed = ALLOWED.get(field, error["msg"])
    return f"{field}: {_show(error['input'])} is not allowed ({allowed})"


def _show(value: Any) -> str:
    """The value as the user wrote it in JSON, cut short when long."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) <= 60:
        return text
    size = f" ({len(value)} characters)" if isinstance(value, str) else ""
    return f"{text[:50]}…{size}"


def stored_fields(line: str | bytes) -> dict[str, Any]:
    """Validate one stored JSON line and return its fields (raise InvalidFeedback when bad).

    Lines as `rating_line` writes them take a fast path (the store reads a million of them);
    anything else, e.g. a hand edit, goes through the full model, which has the last word.
    """
    try:
        data = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise InvalidFeedback(f"not valid JSON: {exc}") from None
    if _is_canonical(data):
        return data  # type: ignore[no-any-return]
    if not isinstance(data, dict):
        raise InvalidFeedback(f"a stored rating must be a JSON object, not {json_kind(data)}")
    if data.get("timestamp") is None:
        # A submitted rating is given the time it arrives; a stored one must carry its own.
        raise InvalidFeedback(f"timestamp is missing ({ALLOWED['timestamp']})")
    try:
        return Rating.model_validate(data).model_dump(exclude_none=True)
    except ValidationError as exc:
        raise _explain(exc) from None


_OPTIONAL = frozenset({"latency_ms", "quality_details"})
_REQUIRED = frozenset(ALLOWED) - _OPTIONAL
_ALL_FIELDS = frozenset(ALLOWED)
_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
_CANONICAL_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z\Z")


def _is_canonical(data: Any) -> bool:
    """True when data is exactly what the model would produce (valid, and already canonical)."""
    if type(data) is not dict or not (_REQUIRED <= data.keys() <= _ALL_FIELDS):
        return False
    rating, latency = data["rating"], data.get("latency_ms", 0)
    details = data.get("quality_details", "")
    return (
        type(rating) is int
        and 1 <= rating <= 5
        and type(latency) is int
        and latency >= 0
        and type(details) is str
        and len(details) <= 500
        and type(data["would_reuse"]) is bool
        and _is_one_of(data["result_quality"], QUALITIES)
        and _is_one_of(data["cost_value_ratio"], COST_VALUES)
        and _is_id(data["provider_agent"])
        and _is_id(data["skill_id"])
        and _is_id(data["requester_agent"])
        and _is_canonical_uuid(data["transaction_id"])
        and is_canonical_time(data["timestamp"])
    )


def _is_one_of(value: Any, allowed: tuple[str, ...]) -> bool:
    return type(value) is str and value in allowed


def _is_id(value: Any) -> bool:
    return type(value) is str and _is_valid_id_cached(value)


@functools.lru_cache(maxsize=4096)
def _is_valid_id_cached(value: str) -> bool:
    # A provider's file repeats the same few agent and skill ids on every line.
    return is_valid_id(value)


def _is_canonical_uuid(value: Any) -> bool:
    return type(value) is str and _CANONICAL_UUID.match(value) is not None


def is_canonical_time(value: Any) -> bool:
    """True for a real UTC time written as `2026-04-08T10:00:00.000Z` (the stored form)."""
    if type(value) is not str or _CANONICAL_TIME.match(value) is None:
        return False
    try:
        datetime.fromisoformat(value[:-1])
    except ValueError:
        return False
    return True
