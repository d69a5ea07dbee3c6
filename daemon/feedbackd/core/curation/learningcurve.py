"""Is the agent learning? The decisions a ledger holds, counted per day, week or month
(`feedbackd stats`, SPEC section 13).

Two steps, both pure:
- `decision_table`: one agent's counted decisions, in time order, as columns (a decision's time,
  approved or rejected, its corrections and their fields, the seconds from its draft's first
  commit to it). Each ledger line once (by id); a decision whose line a `git revert` removed is
  not there to count; a correction whose entry `forget` took back is left out (the decision
  stands: it was approved, and that lesson was a slip). The table is what the command line
  keeps between calls, so it is plain JSON.
- `learning_stats`: the tables of one or many agents summed up per period and in total: the
  object `stats --json` prints. Periods are cut by bisecting the sorted times and sums over
  slices, so 100,000 decisions cost a few list sums, not a loop of date arithmetic per line.
"""

from __future__ import annotations

import statistics
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from feedbackd.core.curation.decisions import DecisionRecord
from feedbackd.core.curation.forgetting import forgotten_records
from feedbackd.core.errors import UsageError
from feedbackd.core.timeutil import from_unix_ms, parse_iso, stored_ms, unix_ms

PERIODS = ("day", "week", "month")
DEFAULT_PERIOD = "week"
# The most periods one answer lists (ten years of days): a wider span is refused, so that no
# request can make an answer of any size (a since of 0001-01-01 by day was 130 MB).
MAX_PERIODS = 3660
TABLE_VERSION = 1  # bumped when the columns change: older kept tables are computed again
STAT_KEYS = (
    "decided",
    "approved",
    "approved_unedited",
    "rejected",
    "corrections",
    "unedited_rate",
    "corrections_per_approval",
    "median_decision_s",
)


def check_period(by: str) -> str:
    if by not in PERIODS:
        raise UsageError(
            f"--by {by!r} is not a period", hint="use day, week or month; week is the default"
        )
    return by


# --- one agent's decisions --------------------------------------------------------------------
@dataclass
class DecisionTable:
    """An agent's counted decisions as columns, oldest first. `fields[offsets[i]:offsets[i+1]]`
    are the fields decision i corrected; `waited[i]` the seconds from its draft's first commit
    to it (None when no commit of the draft in queue/ came before it)."""

    at: list[int] = field(default_factory=list)  # unix ms
    approved: list[int] = field(default_factory=list)  # 1 approved, 0 rejected
    corrections: list[int] = field(default_factory=list)
    waited: list[float | None] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)
    offsets: list[int] = field(default_factory=lambda: [0])

    def append(self, at: int, approved: bool, fields: Sequence[str], waited: float | None) -> None:
        self.at.append(at)
        self.approved.append(int(approved))
        self.corrections.append(len(fields))
        self.waited.append(waited)
        self.fields.extend(fields)
        self.offsets.append(len(self.fields))

    def to_json(self) -> dict[str, Any]:
        columns = ("at", "approved", "corrections", "waited", "fields", "offsets")
        return {"version": TABLE_VERSION, **{name: getattr(self, name) for name in columns}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DecisionTable | None:
        """A kept table; None when it is of another version or not a table at all."""
        if not isinstance(data, Mapping) or data.get("version") != TABLE_VERSION:
            return None
        try:
            table = cls(*(list(data[name]) for name in ("at", "approved", "corrections")))
            table.waited, table.fields = list(data["waited"]), list(data["fields"])
            table.offsets = list(data["offsets"])
        except (KeyError, TypeError):
            return None
        sizes = {len(table.at), len(table.approved), len(table.corrections), len(table.waited)}
        return table if sizes == {len(table.offsets) - 1} else None


@dataclass(frozen=True)
class Forgotten:
    """The corrections `forget` took back (forgotten.jsonl): by entry id, and by (item, field)
    for a decision whose correction repeated a lesson and so added no entry of its own."""

    fields_by_entry: Mapping[str, str]
    item_fields: frozenset[tuple[str, str]]


def parse_forgotten(text: str) -> Forgotten:
    """The forgotten corrections of forgotten.jsonl text; lines that do not read are skipped,
    as every reader of that file skips them (doctor reports them)."""
    by_entry: dict[str, str] = {}
    pairs: set[tuple[str, str]] = set()
    for record in forgotten_records(text):
        if record["type"] != "correction":
            continue
        entry, item, name = record.get("id"), record.get("queueItemId"), record.get("field")
        if isinstance(name, str) and isinstance(entry, str):
            by_entry[entry] = name
        if isinstance(name, str) and isinstance(item, str):
            pairs.add((item, name))
    return Forgotten(by_entry, frozenset(pairs))


NOTHING_FORGOTTEN = Forgotten({}, frozenset())


def decision_table(
    records: Iterable[DecisionRecord],
    forgotten: Forgotten = NOTHING_FORGOTTEN,
    drafted: Mapping[str, Sequence[int]] | None = None,
) -> DecisionTable:
    """The counted decisions of one agent's ledger (as HEAD holds it: a reverted decision's line
    is gone). `drafted`: item id → the times (unix seconds, ascending) of the commits that added
    it to queue/. A decision waited from the first of them after the item's previous decision
    (a draft moved back to queue/ is a new draft; a reverted decision is no previous one)."""
    table = DecisionTable()
    previous: dict[str, int] = {}  # item → time of its last counted decision (ms)
    for at, record in _decisions(records):
        times = (drafted or {}).get(record.item, ())
        table.append(
            at,
            record.state == "approved",
            _kept_fields(record, forgotten),
            _waited(times, previous.get(record.item), at),
        )
        previous[record.item] = at
    return table


def _decisions(records: Iterable[DecisionRecord]) -> list[tuple[int, DecisionRecord]]:
    """Each approval and rejection once (a line repeated by a merge counts once), by time."""
    seen: set[str] = set()
    found = []
    for record in records:
        if record.state == "queued" or record.id in seen:
            continue
        seen.add(record.id)
        at = _ms(record.at)
        if at is not None:
            found.append((at, record))
    found.sort(key=lambda pair: pair[0])  # stable: the ledger's order within a millisecond
    return found


def _ms(text: str) -> int | None:
    try:
        return stored_ms(text) if text.endswith("Z") and len(text) == 24 else _parsed_ms(text)
    except (ValueError, OverflowError):
        return _parsed_ms(text)


def _parsed_ms(text: str) -> int | None:
    try:
        return unix_ms(parse_iso(text))
    except (ValueError, OverflowError):
        return None  # a hand-written line with no readable time: not placed in any period


def _kept_fields(record: DecisionRecord, forgotten: Forgotten) -> list[str]:
    """The fields an approval corrected, less the corrections taken back since."""
    if record.state != "approved" or not record.fields:
        return []
    entries = record.entries or []
    gone = Counter(
        forgotten.fields_by_entry[entry] for entry in entries if entry in forgotten.fields_by_entry
    )
    # Fewer entries than corrections: some repeated an earlier lesson of the item (or one
    # forgotten already), whose entry is not this decision's; those go by (item, field).
    repeated = len(entries) < len(record.fields)
    kept = []
    for name in record.fields:
        if gone[name]:
            gone[name] -= 1
        elif not (repeated and (record.item, name) in forgotten.item_fields):
            kept.append(name)
    return kept


def _waited(times: Sequence[int], previous: int | None, at: int) -> float | None:
    """Seconds from the first draft commit after `previous` (ms) up to the decision `at` (ms).
    Git keeps whole seconds: a commit in the same second as the previous decision is not taken
    for after it (no time rather than a wrong one)."""
    start = 0 if previous is None else bisect_right(times, previous // 1000)
    if start < len(times) and times[start] * 1000 <= at:
        return (at - times[start] * 1000) / 1000
    return None


# --- periods and sums -------------------------------------------------------------------------
@dataclass
class Tally:
    """Decisions counted: the sums of a period of `stats` (or of all), or the rows of an
    export (its dataset card). An approval is unedited when it corrected no field; `fields`
    counts the corrections by field, `waits` the seconds decisions waited for (those known)."""

    decided: int = 0
    approved: int = 0
    unedited: int = 0
    corrections: int = 0
    waits: list[float] = field(default_factory=list)
    fields: Counter[str] = field(default_factory=Counter)

    @property
    def rejected(self) -> int:
        return self.decided - self.approved

    @property
    def corrected(self) -> int:
        """The approvals that corrected a field or more."""
        return self.approved - self.unedited

    def add(self, approved: bool, fields: Sequence[str], waited: float | None = None) -> None:
        """One decision, and the fields it corrected (a rejection corrects none)."""
        fields = fields if approved else ()
        self.decided += 1
        self.approved += approved
        self.unedited += approved and not fields
        self.corrections += len(fields)
        self.fields.update(fields)
        if waited is not None:
            self.waits.append(waited)

    def add_rows(self, table: DecisionTable, low: int, high: int) -> None:
        """Decisions low to high (excluded) of a table, a few list sums for any number."""
        if high <= low:
            return
        approved, corrections = table.approved[low:high], table.corrections[low:high]
        self.decided += high - low
        self.approved += sum(approved)
        self.corrections += sum(corrections)
        self.unedited += sum(1 for a, c in zip(approved, corrections, strict=True) if a and not c)
        self.waits.extend(w for w in table.waited[low:high] if w is not None)
        self.fields.update(table.fields[table.offsets[low] : table.offsets[high]])

    def to_json(self) -> dict[str, Any]:
        approved = self.approved
        median = statistics.median(self.waits) if self.waits else None
        values = (
            self.decided,
            approved,
            self.unedited,
            self.decided - approved,
            self.corrections,
            round(self.unedited / approved, 4) if approved else None,
            round(self.corrections / approved, 4) if approved else None,
            None if median is None else int(median + 0.5),  # whole seconds
        )
        return dict(zip(STAT_KEYS, values, strict=True))


def period_start(moment: datetime, by: str) -> datetime:
    """The start (UTC midnight) of the day, week (from Monday) or month holding `moment`."""
    day = moment.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if by == "week":
        return day - timedelta(days=day.weekday())
    return day.replace(day=1) if by == "month" else day


def next_start(start: datetime, by: str) -> datetime:
    if by == "month":
        return start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
    return start + timedelta(days=7 if by == "week" else 1)


def learning_stats(
    tables: Sequence[DecisionTable],
    by: str,
    now: datetime,
    since: datetime | None = None,
    agent: str | None = None,
) -> dict[str, Any]:
    """`stats --json`: per period (from the one holding `since` or the first decision,
    whichever is later, to the one holding `now` or the last decision) and in total, with the
    fields most corrected first. Periods with no decision are listed too: a gap in the curve is
    news. More than MAX_PERIODS periods are refused (UsageError)."""
    check_period(by)
    low = None if since is None else unix_ms(since)
    cuts = [0 if low is None else bisect_left(t.at, low) for t in tables]
    first = min((t.at[0] for t in tables if t.at), default=None)
    periods = []
    if first is not None:  # no decision, no period: an early since adds none before the first
        origin = first if low is None else max(low, first)
        last = max([unix_ms(now), *(t.at[-1] for t in tables if t.at)])
        start = period_start(from_unix_ms(origin), by)
        check_span(start, from_unix_ms(last), by)
        periods = _periods(tables, cuts, start, last, by)
    total = Tally()
    for table, cut in zip(tables, cuts, strict=True):
        total.add_rows(table, cut, len(table.at))
    ranked = sorted(total.fields.items(), key=lambda pair: (-pair[1], pair[0]))
    return {
        "agent": agent,
        "by": by,
        "periods": periods,
        "total": total.to_json(),
        "fields": dict(ranked),
    }


def check_span(start: datetime, last: datetime, by: str) -> None:
    """A usage error when the periods from `start` to the one holding `last` are too many."""
    count = period_count(start, last, by)
    if count > MAX_PERIODS:
        raise UsageError(
            f"by {by} from {start.date()} to {last.date()} is {count:,} periods; "
            f"at most {MAX_PERIODS:,} are counted at once",
            hint="count by a longer period (week or month) or since a later date",
        )


def period_count(start: datetime, last: datetime, by: str) -> int:
    """How many periods run from the one starting at `start` to the one holding `last`."""
    end = period_start(last, by)
    if by == "month":
        return (end.year - start.year) * 12 + end.month - start.month + 1
    return (end - start).days // (7 if by == "week" else 1) + 1


def _periods(
    tables: Sequence[DecisionTable], cuts: Sequence[int], start: datetime, last: int, by: str
) -> list[dict[str, Any]]:
    periods = []
    lows = list(cuts)
    while unix_ms(start) <= last:
        end = next_start(start, by)
        tally, edge = Tally(), unix_ms(end)
        for index, table in enumerate(tables):
            high = bisect_left(table.at, edge, lows[index])
            tally.add_rows(table, lows[index], high)
            lows[index] = high
        periods.append({"start": start.date().isoformat(), **tally.to_json()})
        start = end
    return periods
