"""The `optimizer.command` protocol: the JSON context it reads on stdin, the answer it may print.

When the quality rule finds a weak skill, the command gets the skill's description and price, what
the ratings in the window say and the lessons drawn from them. It may answer one JSON object
`{"description": "...", "reason": "..."}`; the new description then replaces the skill's one in
SOUL.md. Pure: the application runs the command and applies the answer.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from feedbackd.core.commitmsg import one_line
from feedbackd.core.formats.jsontext import half_character
from feedbackd.core.ratings.skillrules import QualityFinding, lessons_as_json
from feedbackd.core.ratings.storedratings import AnyRating

# The optimizer's answer is one small JSON object.
MAX_ANSWER_CHARS = 64 * 1024
ANSWER_SHAPE = '{"description": "...", "reason": "..."}'


@dataclass(frozen=True)
class SkillContext:
    """The skill the command is asked about, as SOUL.md and the settings describe it."""

    agent: str
    skill: str
    description: str
    price: float
    window: str  # the ratings window, as configured (`7d`)


@dataclass(frozen=True)
class Answer:
    """A description the command proposes, and why."""

    description: str
    reason: str


class UnusableAnswer(ValueError):
    """An answer that changes nothing; the message says what is wrong with it."""


def command_context(
    skill: SkillContext, finding: QualityFinding, ratings: Sequence[AnyRating]
) -> dict[str, Any]:
    """What optimizer.command reads on stdin."""
    qualities: dict[str, int] = {}
    for r in ratings:
        qualities[r.result_quality] = qualities.get(r.result_quality, 0) + 1
    return {
        "agent": skill.agent,
        "skill": skill.skill,
        "description": skill.description,
        "price": skill.price,
        "why": finding.why,
        "ratings": {
            "window": skill.window,
            "count": finding.count,
            "average_rating": round(finding.average, 2),
            "low_count": finding.low_count,
            "quality_counts": qualities,
            "overpriced_count": sum(r.cost_value_ratio == "overpriced" for r in ratings),
        },
        "lessons": lessons_as_json(finding.lessons),
        "answer": {"description": "the new description (one paragraph)", "reason": "why"},
    }


def parse_answer(stdout: str) -> Answer | None:
    """The command's answer; None when it printed nothing. Raises UnusableAnswer otherwise."""
    text = stdout.strip()
    if not text:
        return None
    try:
        answer = json.loads(text) if len(text) <= MAX_ANSWER_CHARS else None
    except ValueError as exc:
        raise UnusableAnswer(f"answered something that is not JSON ({exc})") from None
    description = answer.get("description") if isinstance(answer, dict) else None
    reason = answer.get("reason", "") if isinstance(answer, dict) else None
    if half_character(answer) is not None:  # SOUL.md and the commit could never hold it
        raise UnusableAnswer("answered half of a character pair")
    if not isinstance(description, str) or not description.strip() or not isinstance(reason, str):
        raise UnusableAnswer(f"must answer {ANSWER_SHAPE}; got {one_line(text, 120)}")
    return Answer(description, reason.strip() or "optimizer.command suggested it")
