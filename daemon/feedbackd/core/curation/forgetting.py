"""Lessons a curator took back: `feedbackd forget AGENT ENTRY_ID` and `forgotten.jsonl`.

Forgetting removes one entry from feedback.json without undoing its decision. The agent's
`forgotten.jsonl` keeps what was forgotten (one line each, merged across machines like every
ledger), so that neither a decision replayed after a crash nor a merge that brings the entry back
from another clone makes it a lesson again: entries whose identity is listed there are dropped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from feedbackd.core.curation.feedback import IDENTITY_KEYS, FeedbackEntry, Identity, identity_of
from feedbackd.core.formats.jsonl import parse_jsonl
from feedbackd.core.timeutil import iso_ms


def forgotten_line(entry: FeedbackEntry, now: datetime, reason: str, curator: str) -> str:
    """The `forgotten.jsonl` line for `entry`: its id and identity, when, who and why."""
    record = {
        "id": entry.id,
        "forgotten_at": iso_ms(now),
        **{key: getattr(entry, key) for key in IDENTITY_KEYS},
        "reason": reason,
        "curator": curator,
    }
    return json.dumps(record, ensure_ascii=False, sort_keys=True)


def forgotten_records(text: str) -> Iterator[dict[str, Any]]:
    """The records of `forgotten.jsonl` text; lines that do not read are skipped (doctor
    reports them), so one bad line never brings a lesson back. Lines end at `\n` only: a
    forgotten text may hold a raw U+2028, which `str.splitlines` would split at."""
    for _, record in parse_jsonl(text, json.loads, _skip):
        if isinstance(record, dict) and isinstance(record.get("type"), str):
            yield record


def forgotten_identities(text: str) -> frozenset[Identity]:
    """The identities listed in `forgotten.jsonl` text."""
    return frozenset(identity_of(record) for record in forgotten_records(text))


def _skip(number: int, reason: str) -> None:
    """A line that does not read: doctor names it; here it is simply not a forgotten entry."""


def without_forgotten(
    entries: Iterable[FeedbackEntry], forgotten: frozenset[Identity]
) -> list[FeedbackEntry]:
    return [entry for entry in entries if entry.identity() not in forgotten]


def find_entry(entries: Sequence[FeedbackEntry], entry_id: str) -> FeedbackEntry | None:
    return next((entry for entry in entries if entry.id == entry_id), None)


def already_forgotten(text: str, entry_id: str) -> str | None:
    """How `forgotten.jsonl` text tells that the entry was forgotten (`on 2026-12-03 at 07:40
    UTC by Ada <ada@example.org> (a slip)`), from its last line for that id; None when it
    holds none."""
    found = [record for record in forgotten_records(text) if record.get("id") == entry_id]
    if not found:
        return None
    record = found[-1]
    when, who, why = (record.get(key) for key in ("forgotten_at", "curator", "reason"))
    said = ""
    if isinstance(when, str) and len(when) >= 16:
        said += f" on {when[:10]} at {when[11:16]} UTC"
    if isinstance(who, str) and who:
        said += f" by {who}"
    if isinstance(why, str) and why.strip():
        said += f" ({' '.join(why.split())})"
    return said
