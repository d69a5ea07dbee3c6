"""The decision ledger: `decisions.jsonl`, committed beside feedback.json in each agent folder.

It is how a decision is recorded exactly once across restarts, crashes, re-runs, fresh clones and
other machines: an item in approved/ or rejected/ is decided when the ledger's latest line for it
says so. An item moved back to queue/ gets a `queued` line and is a draft again. Append-only lines
merge across machines by id (the merge driver sorts them by `at`); a line that a `git revert`
of its decision commit removes is gone, and the item is a draft again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal

from pydantic import ConfigDict, TypeAdapter
from pydantic.dataclasses import dataclass

from feedbackd.core.formats.jsonl import CACHE_KEYS_ONLY, parse_jsonl
from feedbackd.core.ids import DECISION, Draw, new_id
from feedbackd.core.timeutil import iso_ms

log = logging.getLogger("feedbackd")

State = Literal["approved", "rejected", "queued"]


@dataclass(frozen=True, slots=True, config=ConfigDict(cache_strings=CACHE_KEYS_ONLY))
class DecisionRecord:
    """One line of the ledger: what happened to an item, and what the commit should say.

    Each pass reads the agent's whole ledger, so a record is kept small: a validated dataclass
    with slots is about 700 bytes with its strings, where a model object was 1,750 (its set of
    fields given, its dict). Keys that no field names are read past: lines are only ever
    appended, never written back.
    """

    id: str
    item: str
    state: State
    at: str
    file: str | None = None
    curator: str | None = None
    fields: list[str] | None = None
    entries: list[str] | None = None

    def line(self) -> str:
        return json.dumps(_RECORD.dump_python(self, exclude_none=True), ensure_ascii=False)


_RECORD = TypeAdapter(DecisionRecord)


def parse_record(line: str) -> DecisionRecord:
    """One ledger line; ValueError (pydantic's ValidationError) when it is not a record."""
    return _RECORD.validate_json(line)


def new_record(item: str, state: State, now: datetime, draw: Draw, **extra: Any) -> DecisionRecord:
    record_id = new_id(DECISION, now, draw)
    return DecisionRecord(id=record_id, item=item, state=state, at=iso_ms(now), **extra)


def parse_ledger(text: str, source: str = "decisions.jsonl") -> list[DecisionRecord]:
    """Every readable line; a damaged line is skipped with a warning, not blocking the agent."""

    def bad(number: int, _reason: str) -> None:
        log.warning("%s line %d is not a decision record; ignored", source, number)

    return [record for _, record in parse_jsonl(text, parse_record, bad)]


def latest_states(records: Iterable[DecisionRecord]) -> dict[str, DecisionRecord]:
    """The latest record per item (file order, which the merge driver keeps sorted by time)."""
    latest: dict[str, DecisionRecord] = {}
    for record in records:
        latest[record.item] = record
    return latest
