"""How far curators agree (SPEC section 15, `feedbackd agreement`), from their reviews and the
decisions that stand.

Over the items with two or more reviews (one per curator: their first): how many agreed (same
verdict, and approving, the same version), disputed (they differ; a dispute settled since is
counted both as disputed and as resolved); the share of items whose verdicts all agree; Cohen's
κ for each pair of curators with at least 10 items in common; Krippendorff's α (nominal) over
every curator's verdicts, each item a unit; per content field, the share of items every
reviewer approved where all gave that field the same value; per curator, their reviews and how
often their verdict is the one that was decided.

The two coefficients are computed here, in plain Python, rather than by the `krippendorff`
package: the core takes no numpy, and `agreement` stays as quick to start as the other
commands. tests/core/reviews/test_agreementfigures.py checks α against that package's value.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import combinations
from typing import Any

from feedbackd.core.curation.items import flatten_strings, normalised
from feedbackd.core.reviews.reviewlog import ReviewRecord, Verdict
from feedbackd.core.reviews.reviewplan import Agreed, Disputed, outcome
from feedbackd.core.timeutil import parse_iso

KAPPA_MIN_ITEMS = 10


@dataclass(frozen=True)
class PairKappa:
    a: str
    b: str
    items: int
    kappa: float | None  # None: both always gave one same verdict (κ is undefined)

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "items": self.items, "kappa": _round(self.kappa)}


@dataclass(frozen=True)
class FieldAgreement:
    field: str
    items: int  # items approved by every reviewer that hold this field
    agreement: float

    def to_json(self) -> dict[str, Any]:
        return {"field": self.field, "items": self.items, "agreement": _round(self.agreement)}


@dataclass(frozen=True)
class CuratorAgreement:
    curator: str
    reviews: int
    decided: int  # their reviews of items decided since
    agreement: float | None  # the share of those whose verdict was decided

    def to_json(self) -> dict[str, Any]:
        return {
            "curator": self.curator,
            "reviews": self.reviews,
            "decided": self.decided,
            "agreement": _round(self.agreement),
        }


@dataclass(frozen=True)
class Agreement:
    items: int
    agreed: int
    disputed: int
    resolved: int
    verdict_agreement: float | None
    kappa: tuple[PairKappa, ...]
    alpha: float | None
    fields: tuple[FieldAgreement, ...]
    curators: tuple[CuratorAgreement, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "agreed": self.agreed,
            "disputed": self.disputed,
            "resolved": self.resolved,
            "verdict_agreement": _round(self.verdict_agreement),
            "kappa": [pair.to_json() for pair in self.kappa],
            "alpha": _round(self.alpha),
            "fields": [field.to_json() for field in self.fields],
            "curators": [curator.to_json() for curator in self.curators],
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def agreement(
    reviews: Iterable[ReviewRecord],
    decided: Mapping[str, Verdict],
    since: datetime | None = None,
) -> Agreement:
    """The figures over `reviews` (one agent's or several's: items are keyed by id, so give
    one agent's at a time), `decided` the verdict that stands for each decided item."""
    units = _units(reviews, since)
    results = {item: outcome(list(rs), 1) for item, rs in units.items()}
    disputed = [item for item, result in results.items() if isinstance(result, Disputed)]
    verdicts = {item: {_who(r): r.verdict for r in rs} for item, rs in units.items()}
    same = [item for item, by in verdicts.items() if len(set(by.values())) == 1]
    return Agreement(
        items=len(units),
        agreed=sum(isinstance(result, Agreed) for result in results.values()),
        disputed=len(disputed),
        resolved=sum(item in decided for item in disputed),
        verdict_agreement=len(same) / len(units) if units else None,
        kappa=tuple(pair_kappas(verdicts)),
        alpha=nominal_alpha(list(by.values()) for by in verdicts.values()),
        fields=tuple(field_agreement(units.values())),
        curators=tuple(_curators(units, decided)),
    )


def _units(
    reviews: Iterable[ReviewRecord], since: datetime | None
) -> dict[str, tuple[ReviewRecord, ...]]:
    """Each item's reviews, one per curator, for the items with two or more."""
    by_item: dict[str, list[ReviewRecord]] = {}
    for review in reviews:
        if since is None or parse_iso(review.at) >= since:
            by_item.setdefault(review.item, []).append(review)
    units = {item: outcome(rs, 1).reviews for item, rs in by_item.items()}
    return {item: rs for item, rs in sorted(units.items()) if len(rs) >= 2}


def _who(review: ReviewRecord) -> str:
    return str(review.curator)


def pair_kappas(verdicts: Mapping[str, Mapping[str, Verdict]]) -> list[PairKappa]:
    """Cohen's κ for each pair of curators with at least KAPPA_MIN_ITEMS items in common."""
    curators = sorted({who for by in verdicts.values() for who in by})
    pairs = []
    for a, b in combinations(curators, 2):
        common = [(by[a], by[b]) for by in verdicts.values() if a in by and b in by]
        if len(common) >= KAPPA_MIN_ITEMS:
            pairs.append(PairKappa(a, b, len(common), cohen_kappa(common)))
    return pairs


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """κ = (p_o − p_e) / (1 − p_e) over two raters' labels of the same units."""
    n = len(pairs)
    observed = sum(x == y for x, y in pairs) / n
    first, second = Counter(x for x, _ in pairs), Counter(y for _, y in pairs)
    expected = sum(first[c] * second[c] for c in first) / (n * n)
    return None if expected == 1 else (observed - expected) / (1 - expected)


def nominal_alpha(units: Iterable[Sequence[str]]) -> float | None:
    """Krippendorff's α for nominal values: 1 − D_o / D_e from the coincidence matrix; units
    with fewer than two values are not pairable and count for nothing. None when every value
    is the same (no disagreement can be expected) or there is nothing to pair."""
    coincidences: defaultdict[tuple[str, str], float] = defaultdict(float)
    for values in units:
        m = len(values)
        if m < 2:
            continue
        counts = Counter(values)
        for c, k in ((c, k) for c in counts for k in counts):
            pairs = counts[c] * (counts[k] - (c == k))
            coincidences[c, k] += pairs / (m - 1)
    totals: defaultdict[str, float] = defaultdict(float)
    for (c, _), weight in coincidences.items():
        totals[c] += weight
    n = sum(totals.values())
    if n <= 1 or len([c for c in totals if totals[c] > 0]) < 2:
        return None
    observed = sum(w for (c, k), w in coincidences.items() if c != k) / n
    expected = sum(totals[c] * totals[k] for c in totals for k in totals if c != k)
    return 1 - observed / (expected / (n * (n - 1)))


def field_agreement(units: Iterable[Sequence[ReviewRecord]]) -> list[FieldAgreement]:
    """Per content field: over the items every reviewer approved that hold it, the share where
    all reviewers gave it the same value (text as curators read it)."""
    held: Counter[str] = Counter()
    same: Counter[str] = Counter()
    for reviews in units:
        if any(r.verdict != "approve" for r in reviews):
            continue
        versions = [flatten_strings(r.content or {}) for r in reviews]
        for name in sorted(set().union(*versions)):
            held[name] += 1
            values = {normalised(v[name]) if name in v else None for v in versions}
            same[name] += len(values) == 1
    return [FieldAgreement(name, held[name], same[name] / held[name]) for name in sorted(held)]


def _curators(
    units: Mapping[str, Sequence[ReviewRecord]], decided: Mapping[str, Verdict]
) -> list[CuratorAgreement]:
    reviews: Counter[str] = Counter()
    judged: Counter[str] = Counter()
    matched: Counter[str] = Counter()
    for item, rs in units.items():
        for review in rs:
            who = _who(review)
            reviews[who] += 1
            if item in decided:
                judged[who] += 1
                matched[who] += review.verdict == decided[item]
    return [
        CuratorAgreement(
            who, reviews[who], judged[who], matched[who] / judged[who] if judged[who] else None
        )
        for who in sorted(reviews)
    ]
