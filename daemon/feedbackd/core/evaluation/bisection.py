"""The search of `feedbackd bisect` (SPEC section 14): the first candidate revision whose score
is closer to the bad revision's than to the good one's, found by halving, so that n candidates
cost at most ⌈log2(n + 1)⌉ evaluations besides good and bad. Pure: `score_of` evaluates one
candidate (the application runs the agent command for it)."""

from __future__ import annotations

import math
from collections.abc import Callable


def is_bad(score: float, good: float, bad: float) -> bool:
    """Closer to bad's score than to good's (a tie counts as good)."""
    return abs(score - bad) < abs(score - good)


def most_steps(candidates: int) -> int:
    """The revisions a bisect may evaluate, good and bad included."""
    return math.ceil(math.log2(candidates + 1)) + 2


def first_bad(
    count: int, good: float, bad: float, score_of: Callable[[int], float], last_is_bad: bool
) -> int | None:
    """The index of the first bad one of `count` candidates, in history order. `last_is_bad`:
    the last candidate is the bad revision itself (its score is known). None when every
    candidate evaluated is good: the lessons did not make the difference."""
    low, high = -1, count - 1 if last_is_bad else count  # low: known good; high: known bad
    while high - low > 1:
        middle = (low + high) // 2
        if is_bad(score_of(middle), good, bad):
            high = middle
        else:
            low = middle
    return high if high < count else None
