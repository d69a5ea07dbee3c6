"""The output schemas of the MCP tools: the objects the matching commands print with `--json`
(SPEC sections 6, 10 and 13), as TypedDicts the SDK turns into each tool's outputSchema and
checks every answer against. Nested records keep their own keys, described in the SPEC."""

from __future__ import annotations

from typing import Any, NotRequired

# pydantic reads TypedDicts from typing_extensions on Python before 3.12.
from typing_extensions import TypedDict


class Example(TypedDict):
    id: str
    field: str | None
    original: str | None
    corrected: str | None


class Snippet(TypedDict):
    """`prompt AGENT --json` and `prompt AGENT --for - --json`."""

    agent: str
    text: str
    examples: list[Example]


class Recent(TypedDict):
    """`recent AGENT --json`: entries newest first, and how many there are."""

    entries: list[dict[str, Any]]
    total: int


class Unknown(TypedDict):
    """What a report on a provider or skill nobody has adds: a typo told from a newcomer."""

    known: NotRequired[bool]
    closest: NotRequired[str | None]
    closest_skill: NotRequired[str | None]


class Ratings(Unknown):
    """`feedback list --json`."""

    skill_id: str
    agent_id: str | None
    since: str | None
    count: int
    feedbacks: list[dict[str, Any]]
    average_rating: float | None
    quality_counts: dict[str, int]
    would_reuse_ratio: float | None
    overpriced_ratio: float | None
    reputation_score: float


class Reputation(Unknown):
    """`reputation --json`."""

    agent_id: str
    reputation_score: float
    feedback_count: int
    last_updated: str | None
    confidence: float
    skills: dict[str, dict[str, Any]]


class Why(TypedDict):
    """`why --json`: a line per example and note of the snippet."""

    agent: str
    lines: list[dict[str, Any]]


class Stats(TypedDict):
    """`stats AGENT --json`."""

    agent: str | None
    by: str
    periods: list[dict[str, Any]]
    total: dict[str, Any]
    fields: dict[str, int]


class Entry(TypedDict):
    """`record --json`: the feedback entry stored."""

    id: str
    type: str
    createdAt: str
    queueItemId: NotRequired[str]
    field: NotRequired[str]
    original: NotRequired[str]
    corrected: NotRequired[str]
    notes: NotRequired[str]


class Received(TypedDict):
    """`POST /api/feedback`'s answer: the rating's id, when it was received, its commit."""

    feedback_id: str
    received_at: str
    commit: str | None
    warnings: list[str]
