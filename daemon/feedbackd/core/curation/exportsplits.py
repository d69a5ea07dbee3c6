"""What an export keeps of its rows and where each goes (`feedbackd export --split --dedup
--with-snippet --include-rejections`): pure, on rows already read and shaped.

A split by time keeps the order of the decisions and puts the latest share in `validation`:
the only split that never trains on the future of what it validates. A split by hash puts an
item in `validation` by its id alone, so it stays there in every export. Deduplication keeps
the newest row of each INPUT (rows come oldest first)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from feedbackd.core.errors import UsageError
from feedbackd.core.wording import quoted

SPLIT_KINDS = ("time", "hash")
TRAIN, VALIDATION = "train", "validation"
_HASH_RANGE = 1 << 64


@dataclass(frozen=True)
class Split:
    kind: Literal["time", "hash"]
    share: Fraction  # time: the share of train; hash: the share of validation


@dataclass(frozen=True)
class ExportOptions:
    split: Split | None = None
    dedup: bool = False
    with_snippet: bool = False
    include_rejections: bool = False


def parse_split(text: str | None) -> Split | None:
    """`time:0.9` or `hash:0.1` (a share strictly between 0 and 1); a usage error otherwise."""
    if text is None:
        return None
    kind, _, share = text.partition(":")
    try:
        value = Fraction(share.strip()) if kind in SPLIT_KINDS else None
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or not 0 < value < 1:
        raise UsageError(
            f"--split {quoted(text)} is neither time:SHARE nor hash:SHARE with a share"
            " between 0 and 1",
            hint="e.g. --split time:0.9 (the last 10 % of decisions is validation)"
            " or --split hash:0.1 (a tenth of the items, by id)",
        )
    return Split("time" if kind == "time" else "hash", value)


# A row of the format, with the item, the input and the decision it came from.
Kept = tuple[str, str, dict[str, Any]]  # item id, INPUT, the format's record


def deduplicated(records: Sequence[Kept]) -> tuple[list[Kept], int]:
    """The newest record of each INPUT, in their order, and how many were dropped."""
    newest = {text: index for index, (_, text, _) in enumerate(records)}
    kept = [record for index, record in enumerate(records) if newest[record[1]] == index]
    return kept, len(records) - len(kept)


def split_records(records: Sequence[Kept], split: Split) -> dict[str, list[Kept]]:
    """train and validation, each in the order of the decisions."""
    if split.kind == "time":
        cut = split.share.numerator * len(records) // split.share.denominator
        return {TRAIN: list(records[:cut]), VALIDATION: list(records[cut:])}
    parts: dict[str, list[Kept]] = {TRAIN: [], VALIDATION: []}
    for record in records:
        parts[VALIDATION if in_validation(record[0], split.share) else TRAIN].append(record)
    return parts


def in_validation(item: str, share: Fraction) -> bool:
    """Whether `item` falls in the validation share, by its id alone (stable everywhere)."""
    point = int.from_bytes(hashlib.sha256(item.encode("utf-8")).digest()[:8], "big")
    return point * share.denominator < share.numerator * _HASH_RANGE
