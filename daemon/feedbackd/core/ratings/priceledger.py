"""The price ledger `_data/agents/{agent}/pricing.jsonl`: one line per price change of a skill.

A price change writes its ledger line before anything else, so a pass killed before its commit
leaves a line that the next pass completes instead of changing the price a second time. A
change's id says which change it is (`new_price_record`), so one cut made by several machines
before they sync is one line. Together with git (the `Price-Old` trailer and commit time of each
`pricing` commit) the ledger tells a skill's base price and when its price last changed, so the
rules hold when git is disabled or a clone's history is shallow. Pure: app/ reads and appends
the file.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from feedbackd.core.formats.jsonl import CACHE_KEYS_ONLY, parse_jsonl
from feedbackd.core.ids import PRICE_CHANGE, derived_id
from feedbackd.core.ratings.skillrules import PriceHistory
from feedbackd.core.timeutil import iso_ms, parse_iso

log = logging.getLogger("feedbackd")


class PriceRecord(BaseModel):
    """One line of the price ledger."""

    model_config = ConfigDict(extra="allow", frozen=True, cache_strings=CACHE_KEYS_ONLY)

    id: str
    skill: str
    priceOld: str  # as SOUL.md writes prices; camelCase like the other stored records
    priceNew: str
    reason: str
    createdAt: str

    def line(self) -> str:
        return json.dumps(self.model_dump(), ensure_ascii=False)

    @property
    def summary(self) -> str:
        """`20 → 19 (3 of 3 buyers said overpriced)`: the summary of its commit."""
        return f"{self.priceOld} → {self.priceNew} ({self.reason})"

    @property
    def memory_text(self) -> str:
        """What the provider remembers of the change (a `patterns` record)."""
        verb = "raised" if float(self.priceNew) > float(self.priceOld) else "cut"
        return (
            f"Price of {self.skill} {verb} from {self.priceOld} to {self.priceNew} "
            f"because {self.reason}"
        )


def new_price_record(
    skill: str, old: str, new: str, reason: str, now: datetime, *, after: str | None = None
) -> PriceRecord:
    """A price change of `skill` from `old` to `new`, made by the rules after the skill's change
    `after` (the id of the ledger's last one; None when it has none).

    Its id is what the change is: this skill, this move, on the ratings since that earlier
    change. Machines that cut the price on their own before they sync make the same record
    (but for its time), and the merge keeps it once; a later change of the same prices follows
    another change, so it is a new one."""
    return PriceRecord(
        id=derived_id(PRICE_CHANGE, skill, old, new, after or ""),
        skill=skill,
        priceOld=old,
        priceNew=new,
        reason=reason,
        createdAt=iso_ms(now),
    )


def parse_price_ledger(text: str, source: str = "pricing.jsonl") -> list[PriceRecord]:
    """Every readable line; a damaged one is skipped with a warning naming it."""

    def bad(number: int, _reason: str) -> None:
        log.warning("%s, line %d: not a price change record; ignored", source, number)

    return [record for _, record in parse_jsonl(text, _price_record, bad)]


def price_history(changes: Iterable[tuple[datetime, str]]) -> PriceHistory:
    """Base price and last change from (time, old price) of each known change, in any order.

    The base is the old price of the first change (None when that is not a usable price).
    """
    ordered = sorted(changes, key=lambda change: change[0])
    if not ordered:
        return PriceHistory()
    return PriceHistory(_price_or_none(ordered[0][1]), ordered[-1][0])


def _price_record(line: str) -> PriceRecord:
    record = PriceRecord.model_validate_json(line)
    parse_iso(record.createdAt)  # a ValueError when it is no time
    return record


def _price_or_none(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value >= 0 and value != float("inf") else None
