"""webhouse CMS's curation queue read as items and decisions (pure: bytes in, items out).

A webhouse site keeps its drafts in one file, `_data/curation-queue.json`: a JSON array, newest
first, that webhouse's admin app rewrites on every action. Each entry is an item as SPEC section 3
has them (`contentData`, `originalContentData`, `rejectionFeedback`) plus webhouse's own fields;
its `status` says where it stands: approving sets `published` (`in_review` when saved as a draft),
rejecting sets `rejected` and `rejectionFeedback`. Old decided entries are purged after a while.

An entry whose status says decided is decided exactly once, like a file in approved/ or
rejected/: the decision ledger (keyed by item id) says which ones are recorded already, so a
purged entry, a restart or another machine changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from feedbackd.core.curation import decisions, items
from feedbackd.core.curation.decisions import DecisionRecord, State
from feedbackd.core.curation.items import Item, ItemError
from feedbackd.core.errors import FeedbackdError
from feedbackd.core.ids import is_valid_id

DEFAULT_QUEUE_FILE = "curation-queue.json"  # in the data folder, where webhouse keeps it
# A queue holds whole drafts, many of them; far past any real site, short of exhausting memory.
MAX_QUEUE_BYTES = 64 * 1024 * 1024
# webhouse's statuses and what each means for a decision (None: still a draft).
STATES: dict[str, State | None] = {
    "ready": None,
    "in_review": "approved",  # approved and saved as a draft document
    "approved": "approved",
    "published": "approved",
    "rejected": "rejected",
}
_STATUS_HINT = "webhouse writes one of: " + ", ".join(STATES)


@dataclass(frozen=True)
class QueueEntry:
    """One decided entry of the queue: its agent, its status, and the item it holds."""

    agent_id: str
    status: str
    state: State
    item: Item


@dataclass(frozen=True)
class Skipped:
    """An entry that cannot be decided, and why (its agent, when the entry names a valid one)."""

    agent_id: str | None
    reason: str


@dataclass(frozen=True)
class CurationQueue:
    """The decided entries of the queue, and the entries skipped."""

    decided: tuple[QueueEntry, ...] = ()
    skipped: tuple[Skipped, ...] = ()

    def agents(self) -> list[str]:
        """The agents with a decided entry, sorted."""
        return sorted({entry.agent_id for entry in self.decided})

    def warnings_for(self, agent_id: str) -> list[str]:
        """What a pass over this agent says about the queue: its own skipped entries, and
        those that name no agent."""
        return [s.reason for s in self.skipped if s.agent_id in (agent_id, None)]


def parse_queue(data: bytes, path: Path | None = None) -> CurationQueue:
    """The queue file's bytes as entries; ItemError when the file as a whole cannot be read
    (webhouse may be writing it: the caller waits before saying so)."""
    _check_queue_size(len(data))
    text = items.decode_text(data)
    if not text.strip():
        raise ItemError(
            "the curation queue is empty",
            hint="if webhouse is still writing it, wait; otherwise write [] (no items)",
        )
    value = items.load_json_value(text, extra_nesting=1)
    if not isinstance(value, list):
        raise ItemError(
            "the curation queue must be a JSON array of items",
            hint="restore the last good version from git (`git log -- <the file>`)",
        )
    return _entries(value, path)


def _check_queue_size(size: int) -> None:
    if size > MAX_QUEUE_BYTES:
        raise ItemError(
            f"the curation queue is {size:,} bytes, over the limit of {MAX_QUEUE_BYTES:,}",
            hint="let webhouse purge old decided items (its retention period), then it is read",
        )


def _entries(values: Sequence[Any], path: Path | None) -> CurationQueue:
    decided: list[QueueEntry] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for number, value in enumerate(values, start=1):
        try:
            entry = _entry(value, number, path)
        except _Skip as skip:
            skipped.append(Skipped(skip.agent_id, skip.reason))
            continue
        if entry is None:
            continue
        if entry.item.item_id in seen:  # newest first: the first one is the one webhouse shows
            reason = f"curation queue item {entry.item.item_id} appears twice; the first counts"
            skipped.append(Skipped(entry.agent_id, reason))
            continue
        seen.add(entry.item.item_id)
        decided.append(entry)
    return CurationQueue(tuple(decided), tuple(skipped))


class _Skip(Exception):
    def __init__(self, agent_id: str | None, reason: str) -> None:
        super().__init__(reason)
        self.agent_id = agent_id
        self.reason = reason


def _entry(value: Any, number: int, path: Path | None) -> QueueEntry | None:
    """The decided entry `value` (the queue's `number`th), None for a draft; _Skip says why
    an entry cannot be used."""
    where = f"curation queue entry {number}"
    if not isinstance(value, dict):
        raise _Skip(None, f"{where} is not an object; ignored")
    item_id, agent_id, status = value.get("id"), value.get("agentId"), value.get("status")
    if not isinstance(item_id, str) or not is_valid_id(item_id):
        raise _Skip(None, f"{where}: id {item_id!r} is not a valid item id; ignored")
    where = f"curation queue item {item_id}"
    if not isinstance(agent_id, str) or not is_valid_id(agent_id):
        raise _Skip(None, f"{where}: agentId {agent_id!r} is not a valid agent id; ignored")
    if not isinstance(status, str) or status not in STATES:
        raise _Skip(agent_id, f"{where}: unknown status {status!r} ({_STATUS_HINT}); ignored")
    state = STATES[status]
    if state is None:
        return None
    try:
        item = items.item_from_object(value, item_id, path)
    except FeedbackdError as error:
        raise _Skip(agent_id, f"{where}: {error.message}; it waits until fixed") from None
    return QueueEntry(agent_id, status, state, item)


def to_decide(
    queue: CurationQueue, agent_id: str, ledger: Iterable[DecisionRecord]
) -> list[QueueEntry]:
    """The agent's decided entries that the ledger does not record as such yet (a rejected
    item approved later is a new decision, as when a file moves from rejected/ to approved/),
    oldest first: the queue lists the newest first."""
    latest = decisions.latest_states(ledger)
    return [
        entry
        for entry in reversed(queue.decided)
        if entry.agent_id == agent_id
        and (entry.item.item_id not in latest or latest[entry.item.item_id].state != entry.state)
    ]
