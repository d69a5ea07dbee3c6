"""Reputation of a provider and of its skills, and the `feedback list` summary (SPEC §6, §10).

Pure functions of ratings, settings and `now`. Each rating is worth
`w_rating·(rating−1)/4 + w_quality·Q + w_reuse·would_reuse + w_cost·C` and weighs
`exp(−age_days/decay_days)` (ages in the future count as 0); the score is the weighted mean,
clamped to [0, 1], or the cold-start value when there are no ratings.

A `DecaySums` (`feedbackd.core.ratings.tally`) holds the decay-weighted sums of a set of ratings
measured from that set's newest rating. Because `exp(−(now−t)/τ) =
exp(−(now−ref)/τ)·exp(−(ref−t)/τ)`, tallies computed once (per month file, say) turn into a score
for any later `now` without reading the ratings again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from feedbackd.core.config import ReputationSettings
from feedbackd.core.ratings.records import COST_VALUES, QUALITIES
from feedbackd.core.ratings.storedratings import AnyRating, rating_fields
from feedbackd.core.ratings.tally import DAY_S as DAY_S
from feedbackd.core.ratings.tally import DecaySums as DecaySums
from feedbackd.core.ratings.tally import Point as Point
from feedbackd.core.ratings.tally import merge as merge
from feedbackd.core.ratings.tally import tally as tally

_DEFAULTS = ReputationSettings()


@dataclass(frozen=True)
class Score:
    """A reputation: score in [0, 1], number of ratings, sum of their weights, newest time."""

    score: float
    count: int
    confidence: float
    last_updated: str | None


def point(r: AnyRating) -> Point:
    return Point(
        r.moment.timestamp(),
        r.timestamp,
        r.rating,
        r.result_quality,
        r.would_reuse,
        r.cost_value_ratio,
    )


def rating_value(r: AnyRating, settings: ReputationSettings) -> float:
    """What one rating is worth, before decay (not clamped)."""
    return _value(
        settings,
        (r.rating - 1) / 4,
        1.0 if r.would_reuse else 0.0,
        [1.0 if level == r.result_quality else 0.0 for level in QUALITIES],
        [1.0 if level == r.cost_value_ratio else 0.0 for level in COST_VALUES],
    )


def score_tallies(
    tallies: Iterable[DecaySums], settings: ReputationSettings, now: datetime
) -> Score:
    """The reputation of all ratings in the tallies, each tallied no later than `now`."""
    counted = [t for t in tallies if t.count]
    if not counted:
        return Score(settings.cold_start, 0, 0.0, None)
    tau = settings.decay_days * DAY_S
    now_s = now.timestamp()
    # Work relative to the newest tally so that very old ratings cannot underflow the mean.
    scales = [(t.ref - now_s) / tau for t in counted]
    top = max(scales)
    value = weight = confidence = 0.0
    for t, scale in zip(counted, scales, strict=True):
        factor = math.exp(scale - top)
        value += factor * _value(settings, t.rating, t.would_reuse, t.quality, t.cost_value)
        weight += factor * t.weight
        confidence += math.exp(scale) * t.weight
    newest = max(t.newest or "" for t in counted) or None
    mean = value / weight if weight > 0 else settings.cold_start
    return Score(min(1.0, max(0.0, mean)), sum(t.count for t in counted), confidence, newest)


def score(ratings: Iterable[AnyRating], settings: ReputationSettings, now: datetime) -> Score:
    """The reputation of these ratings at `now`."""
    points = [point(r) for r in ratings]
    return score_tallies([tally(points, settings.decay_days, now.timestamp())], settings, now)


def reputation_report(
    agent_id: str, ratings: Iterable[AnyRating], settings: ReputationSettings, now: datetime
) -> dict[str, Any]:
    """`reputation --json` (SPEC §10) from the ratings themselves."""
    by_skill: dict[str, list[Point]] = {}
    for r in ratings:
        by_skill.setdefault(r.skill_id, []).append(point(r))
    cap = now.timestamp()
    tallies = {
        skill: [tally(points, settings.decay_days, cap)] for skill, points in by_skill.items()
    }
    return report_from_tallies(agent_id, tallies, settings, now)


def report_from_tallies(
    agent_id: str,
    tallies: Mapping[str, Sequence[DecaySums]],
    settings: ReputationSettings,
    now: datetime,
) -> dict[str, Any]:
    """`reputation --json` from tallies per skill (each tallied no later than `now`)."""
    everything = [t for skill_tallies in tallies.values() for t in skill_tallies]
    report: dict[str, Any] = {"agent_id": agent_id}
    report.update(_score_fields(score_tallies(everything, settings, now)))
    report["skills"] = {
        skill: _score_fields(score_tallies(tallies[skill], settings, now))
        for skill in sorted(tallies)
    }
    return report


def feedback_list_report(
    skill_id: str,
    agent_id: str | None,
    since: str | None,
    ratings: Iterable[AnyRating],
    settings: ReputationSettings,
    now: datetime,
    limit: int | None = None,
) -> dict[str, Any]:
    """`feedback list --json` (SPEC §10) over ratings already chosen by skill, agent and window."""
    listed = sorted(ratings, key=lambda r: (r.timestamp, r.transaction_id), reverse=True)
    count = len(listed)
    shown = listed if limit is None else listed[: max(0, limit)]
    return {
        "skill_id": skill_id,
        "agent_id": agent_id,
        "since": since,
        "count": count,
        "feedbacks": [rating_fields(r) for r in shown],
        "average_rating": _ratio(sum(r.rating for r in listed), count, digits=2),
        "quality_counts": {q: sum(r.result_quality == q for r in listed) for q in QUALITIES},
        "would_reuse_ratio": _ratio(sum(r.would_reuse for r in listed), count),
        "overpriced_ratio": _ratio(sum(r.cost_value_ratio == "overpriced" for r in listed), count),
        "reputation_score": round(score(listed, settings, now).score, 4),
    }


def _value(
    settings: ReputationSettings,
    rating: float,
    would_reuse: float,
    quality: Sequence[float],
    cost_value: Sequence[float],
) -> float:
    """The weighted value of (sums of) the formula's parts; linear, so it works on tallies too."""
    weights = settings.weights
    # Settings fill in keys left out with their defaults; the fallbacks guard hand-built ones.
    q_map = {**_DEFAULTS.quality_map, **settings.quality_map}
    c_map = {**_DEFAULTS.cost_value_map, **settings.cost_value_map}
    return (
        weights.get("rating", 0.0) * rating
        + weights.get("quality", 0.0)
        * sum(q_map[q] * s for q, s in zip(QUALITIES, quality, strict=True))
        + weights.get("would_reuse", 0.0) * would_reuse
        + weights.get("cost_value", 0.0)
        * sum(c_map[c] * s for c, s in zip(COST_VALUES, cost_value, strict=True))
    )


def _score_fields(result: Score) -> dict[str, Any]:
    return {
        "reputation_score": round(result.score, 4),
        "feedback_count": result.count,
        "last_updated": result.last_updated,
        "confidence": round(result.confidence, 4),
    }


def _ratio(part: float, whole: int, digits: int = 4) -> float | None:
    return round(part / whole, digits) if whole else None
