"""How close an agent command's answer is to what a curator approved (SPEC section 14).

A field's score is `1 - indel(a, b) / (len(a) + len(b))` (rapidfuzz's normalised Indel
similarity; 1 when both are empty), over the string fields of the approved content, nested ones
named as corrections name them (`seo.metaTitle`); a field missing from the answer scores 0. An
item's score is the mean of its fields, `exact` when every field is equal. The interval of the
difference between two runs on the same items is a paired bootstrap with a seeded generator of
its own, so the same scores always give the same interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rapidfuzz.distance import Indel

from feedbackd.core.curation.items import flatten_strings

RESAMPLES = 1000
SEED = 0


@dataclass(frozen=True)
class ItemScore:
    score: float
    exact: bool
    fields: dict[str, float]


def field_score(answer: str, approved: str) -> float:
    """1 - indel / (len(a) + len(b)); 1 when both are empty."""
    return float(Indel.normalized_similarity(answer, approved))


def score_item(answer: Mapping[str, Any], approved: Mapping[str, Any]) -> ItemScore:
    """The answer's content against the approved content, field by field. An approved item
    with no string field scores 1 when the answer is the same, else 0."""
    wanted = flatten_strings(dict(approved))
    given = flatten_strings(dict(answer))
    if not wanted:
        same = dict(answer) == dict(approved)
        return ItemScore(1.0 if same else 0.0, same, {})
    fields = {
        name: field_score(given[name], value) if name in given else 0.0
        for name, value in wanted.items()
    }
    exact = all(given.get(name) == value for name, value in wanted.items())
    return ItemScore(sum(fields.values()) / len(fields), exact, fields)


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def field_means(scores: Sequence[ItemScore]) -> dict[str, float]:
    """The mean score of each field over the items that have it, by name."""
    sums: dict[str, list[float]] = {}
    for item in scores:
        for name, value in item.fields.items():
            sums.setdefault(name, []).append(value)
    return {name: sum(values) / len(values) for name, values in sorted(sums.items())}


def totals(scores: Sequence[ItemScore]) -> dict[str, Any]:
    """`score`, `exact_rate` and `fields` of a run (None for a run with no scored item)."""
    return {
        "score": _rounded(mean([s.score for s in scores])),
        "exact_rate": _rounded(mean([1.0 if s.exact else 0.0 for s in scores])),
        "fields": {name: _rounded(value) for name, value in field_means(scores).items()},
    }


def _rounded(value: float | None) -> Any:
    return None if value is None else round(value, 4)


class Draw:
    """splitmix64: a small generator whose numbers depend on the seed alone (the same on every
    machine and Python), so an interval is reproducible."""

    def __init__(self, seed: int) -> None:
        self.state = seed & 0xFFFFFFFFFFFFFFFF

    def next64(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        return z ^ (z >> 31)

    def below(self, bound: int) -> int:
        """An integer in [0, bound), without the bias of a plain modulo."""
        limit = (1 << 64) - ((1 << 64) % bound)
        while True:
            value = self.next64()
            if value < limit:
                return value % bound


def paired_ci95(
    differences: Sequence[float], resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[float, float] | None:
    """The 95 % interval of the mean difference: the 2.5th and 97.5th percentiles of the means
    of `resamples` resamples of the items (with replacement). None with no item."""
    count = len(differences)
    if count == 0:
        return None
    draw = Draw(seed)
    means = sorted(
        sum(differences[draw.below(count)] for _ in range(count)) / count for _ in range(resamples)
    )
    return round(_percentile(means, 0.025), 4), round(_percentile(means, 0.975), 4)


def _percentile(ordered: Sequence[float], share: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default)."""
    position = share * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
