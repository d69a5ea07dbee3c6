"""The self-optimisation rules of SPEC section 6, as pure decisions from values to values.

Price: enough buyers said a skill is overpriced since its last price change → cut it by a step,
never below the floor; optionally, many delighted buyers → raise it by a step, never above the
cap. Quality: a low average or any poor/failed result in the window → lessons for the skill's
prompt, built from what buyers wrote about their bad rentals.

No disk, no git, no clock: callers pass the ratings, the price history and `now`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any, Literal

from feedbackd.core.commitmsg import one_line
from feedbackd.core.config import OptimizerSettings, PricingSettings
from feedbackd.core.ratings.records import FAILED_QUALITIES
from feedbackd.core.ratings.soul import format_price
from feedbackd.core.ratings.storedratings import AnyRating, is_failed
from feedbackd.core.timeutil import ceil_ms, iso_ms, parse_duration, unix_ms
from feedbackd.core.wording import counted, noun

# SPEC: an increase needs at least this many ratings of 5 from buyers who would reuse the skill.
INCREASE_MIN_TOP_RATINGS = 5
LESSONS_HEADING = "## Lessons from recent ratings"
# Enough digits for any finite price, so rounding never fails.
_WIDE = Context(prec=400)
_CENT = Decimal("0.01")


@dataclass(frozen=True)
class PriceHistory:
    """What a skill's earlier price changes tell: the base price and when it last changed."""

    base: float | None = None  # Price-Old of the first change; None: never changed
    last_change: datetime | None = None


@dataclass(frozen=True)
class PriceChange:
    """A price change to make, and why."""

    old: float
    new: float
    direction: Literal["cut", "increase"]
    why: str
    base: float
    limit: float  # the floor of a cut, the cap of an increase
    samples: int

    @property
    def summary(self) -> str:
        """`20 → 19 (3 of 4 ratings from 2 buyers said overpriced)`, the commit's summary."""
        return f"{format_price(self.old)} → {format_price(self.new)} ({self.why})"


@dataclass(frozen=True)
class NoChange:
    """Why a rule leaves a skill as it is."""

    reason: str


@dataclass(frozen=True)
class Lesson:
    """One distinct problem buyers reported, as first written by its newest reporter."""

    text: str
    count: int


@dataclass(frozen=True)
class QualityFinding:
    """The quality rule fired: the lessons to show and why the skill needs them."""

    why: str
    lessons: tuple[Lesson, ...]
    count: int
    average: float
    low_count: int


# ---------------------------------------------------------------------------------------------
# Price


def decide_price(
    price: float,
    ratings: Sequence[AnyRating],
    history: PriceHistory,
    settings: PricingSettings,
    now: datetime,
    window: timedelta,
) -> PriceChange | NoChange:
    """The price rule for one skill, given its ratings in the window (any order)."""
    if history.last_change is not None:
        ready = history.last_change + parse_duration(settings.cooldown)
        if now < ready:
            return NoChange(
                f"cooldown: the price last changed at {iso_ms(history.last_change)}; "
                f"the next change can come after {iso_ms(ready)}"
            )
    recent = ratings_since_change(ratings, history.last_change, now - window)
    if len(recent) < settings.min_samples:
        return NoChange(
            f"too few ratings since the last price change: {len(recent)} of "
            f"{settings.min_samples} needed"
        )
    base = history.base if history.base is not None else price
    said = [r for r in recent if r.cost_value_ratio == "overpriced"]
    buyers = len({r.requester_agent for r in said})
    why = f"{len(said)} of {counted(len(recent), 'rating')} from {_buyers(buyers)} said overpriced"
    if len(said) >= settings.overpriced_min_count and buyers >= settings.min_requesters:
        return _cut(price, base, recent, why, settings)
    if settings.allow_increase and not said:
        return _increase(price, base, recent, settings)
    needs = (
        f"{counted(settings.overpriced_min_count, 'rating')}"
        f" from {_buyers(settings.min_requesters)}"
    )
    return NoChange(f"{why}; a cut needs {needs}")


def _buyers(count: int) -> str:
    return counted(count, "buyer")


def ratings_since_change(
    ratings: Sequence[AnyRating], last_change: datetime | None, window_start: datetime
) -> list[AnyRating]:
    """Ratings in the window that came after the last price change (by rating time)."""
    # A rating's time is whole milliseconds: compared as integers, with the two bounds rounded
    # so that each comparison says what it would of the times themselves (a window of tens of
    # thousands of ratings costs no datetime for each).
    first = ceil_ms(window_start)
    if last_change is not None:
        first = max(first, unix_ms(last_change) + 1)
    return [r for r in ratings if r.unix_ms >= first]


def price_floor(base: float, settings: PricingSettings) -> float:
    return _cents(max(settings.min_price, settings.floor_ratio * base))


def price_cap(base: float, settings: PricingSettings) -> float:
    return _cents(settings.cap_ratio * base)


def stepped(price: float, step_pct: float, direction: int) -> float:
    """The price moved by step_pct percent (direction -1 or +1), rounded half-up to cents."""
    factor = (Decimal(100) + direction * Decimal(repr(float(step_pct)))) / Decimal(100)
    return float(
        (Decimal(repr(float(price))) * factor).quantize(
            _CENT, rounding=ROUND_HALF_UP, context=_WIDE
        )
    )


def _cut(
    price: float, base: float, recent: list[AnyRating], why: str, settings: PricingSettings
) -> PriceChange | NoChange:
    floor = price_floor(base, settings)
    new = max(stepped(price, settings.step_pct, -1), floor)
    if new >= price:
        return NoChange(f"{why}, but the price {format_price(price)} is at its floor")
    if new == floor:
        why += f"; floor {format_price(floor)}"
    return PriceChange(price, new, "cut", why, base, floor, len(recent))


def _increase(
    price: float, base: float, recent: list[AnyRating], settings: PricingSettings
) -> PriceChange | NoChange:
    top = sum(r.rating == 5 and r.would_reuse for r in recent)
    if top < INCREASE_MIN_TOP_RATINGS:
        return NoChange(
            f"no buyer said overpriced; an increase needs {INCREASE_MIN_TOP_RATINGS} ratings "
            f"of 5 that would reuse, there are {top}"
        )
    cap = price_cap(base, settings)
    new = min(stepped(price, settings.step_pct, +1), cap)
    why = f"{top} of {len(recent)} buyers rated 5 and would reuse, none said overpriced"
    if new <= price:
        return NoChange(f"{why}, but the price {format_price(price)} is at its cap")
    if new == cap:
        why += f"; cap {format_price(cap)}"
    return PriceChange(price, new, "increase", why, base, cap, len(recent))


def _cents(value: float) -> float:
    return float(Decimal(repr(float(value))).quantize(_CENT, ROUND_HALF_UP, context=_WIDE))


# ---------------------------------------------------------------------------------------------
# Quality


def decide_quality(
    ratings: Sequence[AnyRating], settings: OptimizerSettings, window_label: str
) -> QualityFinding | NoChange:
    """The quality rule over the window's ratings, given newest first."""
    if not ratings:
        return NoChange(f"no ratings in the last {window_label}")
    average = sum(r.rating for r in ratings) / len(ratings)
    bad_results = sum(r.result_quality in FAILED_QUALITIES for r in ratings)
    reasons = []
    if average <= settings.low_rating_threshold:
        reasons.append(
            f"average rating {average:.1f} ≤ {settings.low_rating_threshold:g} over "
            f"{counted(len(ratings), 'rating')} in the last {window_label}"
        )
    if bad_results:
        reasons.append(
            f"{bad_results} of {counted(len(ratings), 'result')} in the last {window_label}"
            f" {noun(len(ratings), 'was', 'were')} poor or failed"
        )
    if not reasons:
        return NoChange(
            f"average rating {average:.1f} above {settings.low_rating_threshold:g}, "
            "no poor or failed result"
        )
    low = [r for r in ratings if is_failed(r)]
    lessons = tuple(distinct_lessons(low)[: settings.max_lessons])
    return QualityFinding("; ".join(reasons), lessons, len(ratings), average, len(low))


def distinct_lessons(low_ratings: Sequence[AnyRating]) -> list[Lesson]:
    """Distinct `quality_details`, newest first, each with how many buyers reported it.

    Details that differ only in case, spacing or a final full stop are the same lesson; the
    newest wording is the one shown.
    """
    order: list[str] = []
    texts: dict[str, str] = {}
    counts: dict[str, int] = {}
    for r in low_ratings:
        text = " ".join((r.quality_details or "").split())
        key = text.rstrip(".!").strip().casefold()
        if not key:
            continue
        if key not in counts:
            order.append(key)
            texts[key] = text
            counts[key] = 0
        counts[key] += 1
    return [Lesson(texts[key], counts[key]) for key in order]


def render_lessons(lessons: Sequence[Lesson]) -> str:
    """`prompt/skills/{skill}.md`: the heading, then one line per lesson; empty when none."""
    if not lessons:
        return ""
    lines = [LESSONS_HEADING, *(f"- {lesson.text} ({lesson.count}×)" for lesson in lessons)]
    return "\n".join(lines) + "\n"


def lessons_as_json(lessons: Sequence[Lesson]) -> list[dict[str, Any]]:
    return [{"text": lesson.text, "count": lesson.count} for lesson in lessons]


def lessons_in_brief(lessons: Sequence[Lesson]) -> str:
    """The first three lessons, each cut short, for a memory record: `a ×3; b ×1, and 2 more`."""
    shown = [f"{one_line(lesson.text, 60)} ×{lesson.count}" for lesson in lessons[:3]]
    more = f", and {len(lessons) - 3} more" if len(lessons) > 3 else ""
    return "; ".join(shown) + more
