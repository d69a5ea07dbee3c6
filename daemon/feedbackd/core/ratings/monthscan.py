"""A whole month file of ratings summed up at once: one regular expression, no object per line.

A fresh clone's first command builds the rating index from every month file: a million lines.
Lines as `rating_line` writes them (its key order and spacing, canonical values) are matched in
one pass by a pattern made for the file's provider and skill; the transaction ids and the
decay tally of the file then come from the matched columns by operations that run in C.

Only a file whose every line is such a line is summed up here, and the result is what reading
it line by line gives (the tally up to the rounding of its sums). Anything else (a blank or bad
line, a hand-written spelling, a rating of another skill, a transaction twice, a day
that does not exist) returns None: the caller reads that file line by line, which validates each
line and names the ones it skips.
"""

from __future__ import annotations

import functools
import math
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from itertools import repeat
from operator import itemgetter, sub, truediv

from feedbackd.core.ids import is_valid_id
from feedbackd.core.ratings.tally import DAY_S, DecaySums
from feedbackd.core.ratingwords import COST_VALUES, QUALITIES

_UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_ID = "[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
# The groups of a match, in this order.
_TX, _REQUESTER, _STAMP = itemgetter(0), itemgetter(1), itemgetter(6)
_CATEGORIES = itemgetter(2, 3, 4, 5)  # rating, result_quality, would_reuse, cost_value_ratio


@dataclass(frozen=True)
class Summary:
    """What the index keeps about a month file's ratings."""

    keys: bytes  # the transaction ids, 16 bytes each, sorted
    tally: DecaySums


@functools.lru_cache(maxsize=512)
def line_pattern(provider: str, skill: str) -> re.Pattern[str]:
    """A stored rating of this provider's skill, as `rating_line` writes it, with its whole line.

    Groups: transaction id, requester, rating, quality, would_reuse, cost value, timestamp.
    """
    return re.compile(
        r'^\{"transaction_id": "(' + _UUID + r')", '
        r'"provider_agent": "' + re.escape(provider) + r'", '
        r'"skill_id": "' + re.escape(skill) + r'", '
        r'"requester_agent": "(' + _ID + r')", '
        r'"rating": ([1-5]), '
        r'(?:"latency_ms": (?:0|[1-9][0-9]{0,17}), )?'
        r'"result_quality": "(' + "|".join(QUALITIES) + r')", '
        # Text without escapes or control characters: its length in JSON is its length.
        r'(?:"quality_details": "[^"\\\x00-\x1f]{0,500}", )?'
        r'"would_reuse": (true|false), '
        r'"cost_value_ratio": "(' + "|".join(COST_VALUES) + r')", '
        r'"timestamp": "([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z)"'
        r"\}(?:\n|\Z)",
        re.MULTILINE,
    )


def summarise(
    text: str, provider: str, skill: str, decay_days: float, cap: float | None = None
) -> Summary | None:
    """The month file's sorted transaction ids and decay tally (times after `cap` count as
    `cap`), or None when one of its lines is not a canonical rating of this file."""
    if not text:
        return Summary(b"", DecaySums(decay_days))
    rows = line_pattern(provider, skill).findall(text)
    lines = text.count("\n") + (not text.endswith("\n"))
    if len(rows) != lines or not all(map(is_valid_id, set(map(_REQUESTER, rows)))):
        return None
    keys = _sorted_keys(list(map(_TX, rows)))
    stamps = list(map(_STAMP, rows))
    try:
        seconds = list(map(datetime.timestamp, map(datetime.fromisoformat, stamps)))
    except ValueError:
        return None  # e.g. the 30th of February
    if keys is None:
        return None
    if cap is not None:
        seconds = list(map(min, seconds, repeat(cap)))
    return Summary(keys, _tally(rows, max(stamps), seconds, decay_days))


def _sorted_keys(ids: list[str]) -> bytes | None:
    """The 16 bytes of each id, sorted (canonical ids sort as their bytes); None on a repeat."""
    ids.sort()
    if len(set(ids)) != len(ids):
        return None
    return bytes.fromhex("".join(ids).replace("-", ""))


def _tally(
    rows: list[tuple[str, ...]], newest: str, seconds: list[float], decay: float
) -> DecaySums:
    """`reputation.tally` of the matched rows: weights summed per combination of the
    categorical fields (at most 150 of them), then folded into the tally's sums."""
    ref = max(seconds)
    tau = decay * DAY_S
    weights = list(map(math.exp, map(truediv, map(sub, seconds, repeat(ref)), repeat(tau))))
    by_kind: defaultdict[tuple[str, ...], float] = defaultdict(float)
    for kind, weight in zip(map(_CATEGORIES, rows), weights, strict=True):
        by_kind[kind] += weight
    rating = reuse = 0.0
    quality: dict[str, float] = dict.fromkeys(QUALITIES, 0.0)
    cost_value: dict[str, float] = dict.fromkeys(COST_VALUES, 0.0)
    for (stars, level, reused, cost), weight in by_kind.items():
        rating += weight * (int(stars) - 1) / 4
        reuse += weight if reused == "true" else 0.0
        quality[level] += weight
        cost_value[cost] += weight
    return DecaySums(
        decay,
        len(rows),
        ref,
        newest,
        math.fsum(weights),
        rating,
        reuse,
        tuple(quality.values()),
        tuple(cost_value.values()),
    )
