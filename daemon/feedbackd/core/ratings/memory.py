"""Agent memory (SPEC §7): `_data/agents/{agent}/memory/{category}.jsonl`, one record a line.

What an agent remembers about its rentals (`cases`), the providers it rented from (`entities`,
one line per update, the latest line per subject wins) and its own adjustments (`patterns`).
Records are appended, never rewritten, so two machines' memories merge as a union of lines.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictStr,
    ValidationError,
    field_validator,
)

from feedbackd.core.errors import InvalidMemory
from feedbackd.core.formats.jsonl import CACHE_KEYS_ONLY
from feedbackd.core.ids import is_valid_id, validate_id
from feedbackd.core.ratings.records import Rating
from feedbackd.core.ratings.storedratings import AnyRating, is_failed
from feedbackd.core.timeutil import canonical_iso_ms, iso_ms
from feedbackd.core.workspacepaths import Workspace

log = logging.getLogger(__name__)

# Importance of each kind of memory (SPEC §7).
PROVIDER_PROFILE = 0.7
RENTAL = 0.8
FAILED_RENTAL = 0.9
PRICING_ADJUSTMENT = 0.6
SELF_OPTIMISATION = 0.85
ENTITIES, CASES, PATTERNS = "entities", "cases", "patterns"
MAX_CONTENT_CHARS = 4000


class MemoryRecord(BaseModel):
    """One remembered fact; `subject` names what it is about (e.g. a provider's agent id)."""

    model_config = ConfigDict(extra="forbid", frozen=True, cache_strings=CACHE_KEYS_ONLY)

    id: StrictStr = Field(min_length=1, max_length=200)
    category: StrictStr
    importance: StrictFloat = Field(ge=0, le=1)
    content: StrictStr = Field(min_length=1, max_length=MAX_CONTENT_CHARS)
    subject: StrictStr | None = None
    source: StrictStr = Field(min_length=1)
    createdAt: StrictStr  # camelCase: the field name of the stored format

    @field_validator("category")
    @classmethod
    def _category_is_an_id(cls, value: str) -> str:
        if not is_valid_id(value):
            raise ValueError("a category is a name like cases, entities or patterns")
        return value

    @field_validator("createdAt")
    @classmethod
    def _utc_ms(cls, value: str) -> str:
        return canonical_iso_ms(value)

    def line(self) -> str:
        """The stored JSON line (keys in the order of SPEC §7, no subject when there is none)."""
        return json.dumps(self.model_dump(exclude_none=True), ensure_ascii=False)


def new_record(
    category: str,
    importance: float,
    content: str,
    *,
    subject: str | None,
    source: str,
    now: datetime,
    record_id: str,
) -> MemoryRecord:
    """Validate a record; refusals name the problem (InvalidMemory). A record that is not
    derived from something else gets a fresh `ids.new_id(MEMORY_RECORD, …)`."""
    try:
        return MemoryRecord(
            id=record_id,
            category=validate_id(category, "memory category"),
            importance=float(importance),
            content=content,
            subject=subject,
            source=source,
            createdAt=iso_ms(now),
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        raise InvalidMemory(f"memory {field}: {error['msg']}", hint="fix the record") from None


def memory_file(workspace: Workspace, agent: str, category: str) -> Path:
    return workspace.agent(agent).memory / f"{validate_id(category, 'memory category')}.jsonl"


def rental_memories(
    r: Rating, now: datetime, earlier: Sequence[AnyRating] = ()
) -> list[tuple[str, MemoryRecord]]:
    """The requester's records of one rental: the case, and its updated profile of the provider.

    `earlier` are the requester's previous ratings of the same provider, when known; the profile
    then sums up all of them. Ids derive from the transaction, so a retry writes the same lines.
    """
    case = new_record(
        CASES,
        FAILED_RENTAL if is_failed(r) else RENTAL,
        _case_text(r),
        subject=r.provider_agent,
        source=f"rating:{r.transaction_id}",
        now=now,
        record_id=f"case-{r.transaction_id}",
    )
    profile = new_record(
        ENTITIES,
        PROVIDER_PROFILE,
        _profile_text(r, [x for x in earlier if x.transaction_id != r.transaction_id]),
        subject=r.provider_agent,
        source=f"rating:{r.transaction_id}",
        now=now,
        record_id=f"profile-{r.transaction_id}",
    )
    return [(r.requester_agent, case), (r.requester_agent, profile)]


def latest_per_subject(records: list[MemoryRecord]) -> list[MemoryRecord]:
    """Later lines replace earlier ones about the same subject (newest createdAt wins)."""
    latest: dict[str, MemoryRecord] = {}
    loose = []
    for record in records:
        if record.subject is None:
            loose.append(record)
        elif record.subject not in latest or record.createdAt >= latest[record.subject].createdAt:
            latest[record.subject] = record
    return [*latest.values(), *loose]


def _case_text(r: Rating) -> str:
    outcome = "Failed rental" if is_failed(r) else "Rental"
    parts = [
        f"{outcome} of {r.skill_id} from {r.provider_agent} on {r.timestamp[:10]}:",
        f"rating {r.rating}/5, quality {r.result_quality}",
    ]
    if r.quality_details:
        parts[-1] += f" ({r.quality_details})"
    parts.append(f"cost/value {r.cost_value_ratio}")
    parts.append("would reuse" if r.would_reuse else "would not reuse")
    if r.latency_ms is not None:
        parts.append(f"latency {r.latency_ms} ms")
    return parts[0] + " " + ", ".join(parts[1:]) + "."


def _profile_text(r: Rating, earlier: Sequence[AnyRating]) -> str:
    rentals = [*earlier, r]
    average = sum(x.rating for x in rentals) / len(rentals)
    reuse = sum(x.would_reuse for x in rentals)
    failed = sum(is_failed(x) for x in rentals)
    overpriced = sum(x.cost_value_ratio == "overpriced" for x in rentals)
    skills = ", ".join(sorted({x.skill_id for x in rentals}))
    count = "1 rental" if len(rentals) == 1 else f"{len(rentals)} rentals"
    return (
        f"Provider {r.provider_agent}: {count} ({skills}), average rating {average:.1f}/5, "
        f"would reuse {reuse} of {len(rentals)}, failed {failed}, overpriced {overpriced}. "
        f"Last: {r.skill_id} on {r.timestamp[:10]}, rating {r.rating}/5, {r.result_quality}, "
        f"cost/value {r.cost_value_ratio}."
    )
