"""Append-only JSONL logs read tolerantly: every line that reads, and a report of each bad one.

The decisions ledger, the price ledger and memory files are appended to by feedbackd, merged by
git and sometimes edited by hand. One damaged line must never hide the others, so readers take
what they can and name what they skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final, Literal, TypeVar

from pydantic import ValidationError

T = TypeVar("T")

# pydantic keeps the strings it parses from JSON in one cache for the whole process (16,384
# strings, about 1.4 MB once full). A record's values (ids, times, notes) are read once and then
# dropped, so caching them only holds memory that a long-running daemon never gets back. Models
# read from JSONL lines cache their field names alone.
CACHE_KEYS_ONLY: Final[Literal["keys"]] = "keys"


def parse_jsonl(
    text: str, parse: Callable[[str], T], on_bad: Callable[[int, str], None]
) -> Iterator[tuple[int, T]]:
    """(line number, record) for each line `parse` accepts, in file order.

    Blank lines are passed over. A line that `parse` refuses with a ValueError (pydantic's
    ValidationError is one) is skipped after `on_bad(line number, reason)`. Lines end at `\\n`
    only: JSON writes other line breaks (`\\u2028`, `\\x85`) raw inside strings.
    """
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = parse(line)
        except ValueError as exc:
            on_bad(number, _reason(exc))
            continue
        yield number, record


def _reason(error: ValueError) -> str:
    if isinstance(error, ValidationError):
        return str(error.errors()[0]["msg"])
    return str(error)
