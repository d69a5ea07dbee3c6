"""Stored ratings as read back from a month file: kept field by field, handed out as rows.

A busy provider's ratings window holds tens of thousands of ratings, and the daemon keeps the
windows it has read from one rating to the next. As objects (a tuple of eleven fields, its
transaction id, time and latency each an object of its own) a rating took about 460 bytes, and
a daemon's memory grew with every rating it kept. Here one month file's ratings are columns:
the transaction id as its 16 bytes, the time as milliseconds, the words as small numbers; about
96 bytes a rating. A `StoredRating` is a view of one row, made when it is asked for.

Rows hold what `stored_fields` has validated: canonical UUIDs and `2026-04-08T10:00:00.000Z`
times, so what a row gives back is exactly what its line says.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from feedbackd.core.ratings.records import (
    COST_VALUES,
    FAILED_QUALITIES,
    QUALITIES,
    CostValue,
    Quality,
    Rating,
)
from feedbackd.core.timeutil import from_unix_ms, iso_ms, stored_ms

_KEY = 16  # bytes of a transaction id
_NOT_GIVEN = -1  # a latency left out
_TOO_BIG = -2  # a latency beyond 64 bits, kept aside
_INT64_MAX = 2**63 - 1
# The stored JSON object's keys, in the order of SPEC §6.
FIELDS = tuple(Rating.model_fields)
# (time in milliseconds, transaction id's bytes): sorts like the stored spellings of the two.
NewestFirst = tuple[int, bytes]
_QUALITY_AT = {quality: place for place, quality in enumerate(QUALITIES)}
_VALUE_AT = {value: place for place, value in enumerate(COST_VALUES)}


class RatingRows:
    """The valid ratings of one month file (one provider's skill), column by column."""

    def __init__(self, provider: str, skill: str) -> None:
        self.provider = sys.intern(provider)
        self.skill = sys.intern(skill)
        self._keys = bytearray()  # transaction ids, 16 bytes each
        self._times = array("q")  # milliseconds since 1970
        self._requesters = array("I")  # places in _names
        self._names: list[str] = []
        self._name_at: dict[str, int] = {}
        self._scores = array("b")  # the rating, 1 to 5
        self._qualities = array("b")  # places in QUALITIES
        self._values = array("b")  # places in COST_VALUES
        self._reuse = array("b")
        self._latencies = array("q")  # _NOT_GIVEN, _TOO_BIG or the latency
        self._big_latencies: dict[int, int] = {}
        self._details: list[str | None] = []

    def __len__(self) -> int:
        return len(self._times)

    def __getitem__(self, row: int) -> StoredRating:
        if not 0 <= row < len(self):
            raise IndexError(row)
        return StoredRating(self, row)

    def __iter__(self) -> Iterator[StoredRating]:
        return (StoredRating(self, row) for row in range(len(self)))

    def add(self, fields: Mapping[str, Any]) -> None:
        """Keep one rating, given the fields `stored_fields` returned for its line."""
        row = len(self)
        self._keys += bytes.fromhex(fields["transaction_id"].replace("-", ""))  # canonical
        self._times.append(stored_ms(fields["timestamp"]))
        self._requesters.append(self._name(fields["requester_agent"]))
        self._scores.append(fields["rating"])
        self._qualities.append(_QUALITY_AT[fields["result_quality"]])
        self._values.append(_VALUE_AT[fields["cost_value_ratio"]])
        self._reuse.append(fields["would_reuse"])
        self._latencies.append(self._latency(row, fields.get("latency_ms")))
        self._details.append(fields.get("quality_details"))

    def extend(self, more: RatingRows) -> None:
        """Add the rows of `more` (read from the same file's appended lines) after these."""
        first = len(self)
        self._keys += more._keys
        self._times += more._times
        self._requesters.extend(self._name(more._names[place]) for place in more._requesters)
        self._scores += more._scores
        self._qualities += more._qualities
        self._values += more._values
        self._reuse += more._reuse
        self._latencies += more._latencies
        self._big_latencies.update({first + row: big for row, big in more._big_latencies.items()})
        self._details += more._details

    def select(
        self, since_ms: int | None, requester: str | None
    ) -> Iterator[tuple[NewestFirst, StoredRating]]:
        """The rows at or after `since_ms` (from `requester` only, when given), in file order,
        each with what sorts it newest first."""
        wanted = self._name_at.get(requester, -1) if requester is not None else None
        if wanted == -1:
            return
        for row, time in enumerate(self._times):
            if since_ms is not None and time < since_ms:
                continue
            if wanted is None or self._requesters[row] == wanted:
                yield (time, self.key_at(row)), StoredRating(self, row)

    def key_at(self, row: int) -> bytes:
        """The transaction id of a row, as its 16 bytes."""
        return bytes(self._keys[row * _KEY : (row + 1) * _KEY])

    def _name(self, name: str) -> int:
        place = self._name_at.get(name)
        if place is None:
            place = self._name_at[name] = len(self._names)
            self._names.append(sys.intern(name))
        return place

    def _latency(self, row: int, latency: int | None) -> int:
        if latency is None:
            return _NOT_GIVEN
        if latency > _INT64_MAX:
            self._big_latencies[row] = latency
            return _TOO_BIG
        return latency


class StoredRating:
    """One stored rating: the fields of `Rating`, already validated, read from its columns."""

    # The two spellings are made when first asked for and kept while the row is: a listing
    # sorts by them and then writes them out.
    __slots__ = ("_row", "_rows", "_timestamp", "_transaction_id")

    def __init__(self, rows: RatingRows, row: int) -> None:
        self._rows = rows
        self._row = row
        self._transaction_id: str | None = None
        self._timestamp: str | None = None

    @property
    def transaction_id(self) -> str:
        if self._transaction_id is None:
            digits = self.key.hex()
            self._transaction_id = (
                f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"
            )
        return self._transaction_id

    @property
    def key(self) -> bytes:
        """The transaction id's 16 bytes: what tells two ratings apart."""
        return self._rows.key_at(self._row)

    @property
    def provider_agent(self) -> str:
        return self._rows.provider

    @property
    def skill_id(self) -> str:
        return self._rows.skill

    @property
    def requester_agent(self) -> str:
        return self._rows._names[self._rows._requesters[self._row]]

    @property
    def rating(self) -> int:
        return self._rows._scores[self._row]

    @property
    def latency_ms(self) -> int | None:
        latency = self._rows._latencies[self._row]
        if latency == _TOO_BIG:
            return self._rows._big_latencies[self._row]
        return None if latency == _NOT_GIVEN else latency

    @property
    def result_quality(self) -> Quality:
        return QUALITIES[self._rows._qualities[self._row]]

    @property
    def quality_details(self) -> str | None:
        return self._rows._details[self._row]

    @property
    def would_reuse(self) -> bool:
        return bool(self._rows._reuse[self._row])

    @property
    def cost_value_ratio(self) -> CostValue:
        return COST_VALUES[self._rows._values[self._row]]

    @property
    def unix_ms(self) -> int:
        return self._rows._times[self._row]

    @property
    def moment(self) -> datetime:
        return from_unix_ms(self.unix_ms)

    @property
    def timestamp(self) -> str:
        if self._timestamp is None:
            self._timestamp = iso_ms(self.moment)
        return self._timestamp

    @property
    def month(self) -> str:
        return self.timestamp[:7]

    def fields(self) -> dict[str, Any]:
        """As `Rating.model_dump(exclude_none=True)`: the stored JSON object."""
        values = {name: getattr(self, name) for name in FIELDS}
        return {name: value for name, value in values.items() if value is not None}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StoredRating):
            return NotImplemented
        return self.fields() == other.fields()

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"StoredRating({self.fields()!r})"


# What reads a rating's fields takes either: one just submitted, or those stored before it.
AnyRating = Rating | StoredRating


def as_stored(r: Rating) -> StoredRating:
    rows = RatingRows(r.provider_agent, r.skill_id)
    rows.add(r.model_dump())
    return rows[0]


def rating_fields(r: AnyRating) -> dict[str, Any]:
    """The stored JSON object of a rating: optional fields that are not given left out."""
    return r.fields() if isinstance(r, StoredRating) else r.model_dump(exclude_none=True)


def is_failed(r: AnyRating) -> bool:
    """A failed rental (SPEC §7): quality poor or failed, or a rating of 2 or less."""
    return r.result_quality in FAILED_QUALITIES or r.rating <= 2
