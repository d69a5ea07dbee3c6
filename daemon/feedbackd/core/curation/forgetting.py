"""Lessons a curator took back: `feedbackd forget AGENT ENTRY_ID` and `forgotten.jsonl`.

Forgetting removes one entry from feedback.json without undoing its decision. The agent's
`forgotten.jsonl` keeps what was forgotten (one line each, merged across machines like every
ledger), so that neither a decision replayed after a crash nor a merge that brings the entry back
from another clone makes it a lesson again: entries whose identity is listed there are dropped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime

from feedbackd.core.curation.feedback import IDENTITY_KEYS, FeedbackEntry, Identity, identity_of
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


def forgotten_identities(text: str) -> frozenset[Identity]:
    """The identities listed in `forgotten.jsonl` text; lines that do not read are skipped
    (doctor reports them), so one bad line never brings a lesson back."""
    found: set[Identity] = set()
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("type"), str):
            found.add(identity_of(record))
    return frozenset(found)


def without_forgotten(
    entries: Iterable[FeedbackEntry], forgotten: frozenset[Identity]
) -> list[FeedbackEntry]:
    return [entry for entry in entries if entry.identity() not in forgotten]


def find_entry(entries: Sequence[FeedbackEntry], entry_id: str) -> FeedbackEntry | None:
    return next((entry for entry in entries if entry.id == entry_id), None)
