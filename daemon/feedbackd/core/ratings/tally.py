"""Decay tallies: the decay-weighted sums of some ratings that a reputation is made from.

A `DecaySums` holds the decay-weighted sums of a set of ratings measured from that set's newest
rating. Because `exp(−(now−t)/τ) = exp(−(now−ref)/τ)·exp(−(ref−t)/τ)`, tallies computed once
(per month file, say) turn into a score for any later `now` without reading the ratings again.
Pure arithmetic on plain values, light enough for the worker processes that read month files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from feedbackd.core.ratingwords import COST_VALUES, QUALITIES, CostValue, Quality

DAY_S = 86400.0


class Point(NamedTuple):
    """What the formula needs from one rating; `seconds` is its time as a Unix timestamp."""

    seconds: float
    timestamp: str
    rating: int
    quality: Quality
    would_reuse: bool
    cost_value: CostValue


@dataclass(frozen=True)
class DecaySums:
    """Decay-weighted sums of some ratings, each weighted exp(−(ref − t)/decay) from `ref`."""

    decay_days: float
    count: int = 0
    ref: float = 0.0  # Unix seconds of the newest rating (capped at the time it was tallied)
    newest: str | None = None
    weight: float = 0.0
    rating: float = 0.0  # Σ weight·(rating − 1)/4
    would_reuse: float = 0.0
    quality: tuple[float, ...] = (0.0,) * len(QUALITIES)
    cost_value: tuple[float, ...] = (0.0,) * len(COST_VALUES)


def tally(points: Sequence[Point], decay_days: float, cap: float | None = None) -> DecaySums:
    """Sum points, measuring ages from the newest; times after `cap` (now) count as `cap`."""
    if not points:
        return DecaySums(decay_days)
    times = [p.seconds if cap is None else min(p.seconds, cap) for p in points]
    ref = max(times)
    tau = decay_days * DAY_S
    weight = rating = reuse = 0.0
    quality: dict[Quality, float] = dict.fromkeys(QUALITIES, 0.0)
    cost_value: dict[CostValue, float] = dict.fromkeys(COST_VALUES, 0.0)
    for p, seconds in zip(points, times, strict=True):
        w = math.exp((seconds - ref) / tau)
        weight += w
        rating += w * (p.rating - 1) / 4
        reuse += w if p.would_reuse else 0.0
        quality[p.quality] += w
        cost_value[p.cost_value] += w
    newest = max(p.timestamp for p in points)
    return DecaySums(
        decay_days,
        len(points),
        ref,
        newest,
        weight,
        rating,
        reuse,
        tuple(quality.values()),
        tuple(cost_value.values()),
    )


def merge(a: DecaySums, b: DecaySums) -> DecaySums:
    """One tally of the ratings of both (same decay), measured from the newer reference."""
    if not b.count:
        return a
    if not a.count:
        return b
    ref = max(a.ref, b.ref)
    tau = a.decay_days * DAY_S
    fa, fb = math.exp((a.ref - ref) / tau), math.exp((b.ref - ref) / tau)
    return DecaySums(
        a.decay_days,
        a.count + b.count,
        ref,
        max(a.newest or "", b.newest or "") or None,
        fa * a.weight + fb * b.weight,
        fa * a.rating + fb * b.rating,
        fa * a.would_reuse + fb * b.would_reuse,
        tuple(fa * x + fb * y for x, y in zip(a.quality, b.quality, strict=True)),
        tuple(fa * x + fb * y for x, y in zip(a.cost_value, b.cost_value, strict=True)),
    )
