"""Words for people: counts as a person says them ("1 rating", "3 entries"), durations, and
the name a mistyped one most likely meant; and `Progress`, how a long job tells its count as it
goes, for a bar or a status line to say.

A plural made by hand (`f"{n} ratings"`) reads wrong exactly when there is one; every message
that counts goes through here instead.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable

# Hears how far a long job is: (done so far, to do in all), in whatever it counts (bytes read,
# agents passed, decisions recorded).
Progress = Callable[[int, int], None]


def noun(count: int, singular: str, plural: str | None = None) -> str:
    """The noun for `count` things: `plural` (default: `singular` + "s") unless there is one."""
    if count == 1:
        return singular
    return plural if plural is not None else singular + "s"


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """`count` and its noun: counted(1, "rating") is "1 rating", counted(2, "rating") "2
    ratings"; give the plural when it is not made with -s (counted(n, "entry", "entries"))."""
    return f"{count} {noun(count, singular, plural)}"


def duration_text(seconds: int | None) -> str:
    """`45s`, `12m`, `3h 20m`, `2d 4h`: as long as a reader needs, no longer."""
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds}s"
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if hours < 1:
        return f"{minutes}m"
    if days < 1:
        return f"{hours}h {minutes % 60}m" if minutes % 60 else f"{hours}h"
    return f"{days}d {hours % 24}h" if hours % 24 else f"{days}d"


def closest(name: str, known: Iterable[str]) -> str | None:
    """The one of `known` a mistyped `name` most likely meant; None when none is close (the
    "did you mean" of unknown agents, providers and skills)."""
    found = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return found[0] if found else None


def quoted(text: str, limit: int = 40) -> str:
    """A value someone sent, as a message quotes it: cut after `limit` characters, so that a
    request's 100 KB is not sent back in its refusal."""
    return repr(text if len(text) <= limit else text[:limit] + "…")
