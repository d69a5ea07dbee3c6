"""What a commit tells a receiver: its event type and the body of the POST (SPEC section 17).

The body is made from the commit alone, so every attempt, a replay and a clone rebuilding what
it owes all send the same bytes for the same commit; only `webhook-timestamp` and the signature
change from one attempt to the next.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from feedbackd.core.commitmsg import log_entry
from feedbackd.core.curation.reverts import revert_commit
from feedbackd.core.events.signing import EVENT_NAMES

# What a revert's subject (`Revert "approve(writer): qi-1"`) says it undid: a learning event's
# own subject, `{event}({agent}[/{skill}]): …`, maybe inside the quotes of a revert of a revert.
_UNDONE = re.compile(r'"(?P<event>[a-z]+)\((?P<agent>[^)/]+)(?:/(?P<skill>[^)]+))?\): ')


@dataclass(frozen=True)
class Event:
    """One commit as an event: `webhook-id` is its sha."""

    commit: str
    type: str
    date: str  # the author's time: the moment of the act, kept by a rebase
    data: dict[str, Any]

    def body(self) -> bytes:
        """The POST's body, compact JSON in a fixed key order."""
        doc = {"type": f"feedbackd.{self.type}", "timestamp": self.date, "data": self.data}
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def to_json(self) -> dict[str, Any]:
        return {"commit": self.commit, "type": self.type, "date": self.date, "data": self.data}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Event:
        return cls(str(doc["commit"]), str(doc["type"]), str(doc["date"]), dict(doc["data"]))


def event_of(commit: str, date: str, author: str, message: str) -> Event | None:
    """The event a commit is, or None for a commit no receiver hears of (a draft, a sync, a
    commit of the user's that records nothing)."""
    entry = log_entry(commit, date, author, message)
    if entry is not None and entry.event in EVENT_NAMES:
        data = {
            "commit": commit,
            "agent": entry.agent,
            "item": entry.item,
            "skill": entry.skill,
            "curator": entry.curator,
            "fields": list(entry.fields) if entry.fields is not None else None,
            "price_old": entry.price_old,
            "price_new": entry.price_new,
            "subject": entry.subject,
        }
        return Event(commit, entry.event, entry.date, data)
    revert = revert_commit(commit, date, author, message) if entry is None else None
    undone = _UNDONE.search(revert.subject) if revert is not None else None
    if revert is None or undone is None or undone["event"] not in EVENT_NAMES:
        return None  # a revert of a commit that recorded nothing (a user's own change)
    data = {
        "commit": commit,
        "agent": undone["agent"],
        "item": None,
        "skill": undone["skill"],
        "curator": revert.curator,
        "fields": None,
        "price_old": None,
        "price_new": None,
        "subject": revert.subject,
        "reverts": list(revert.targets),
    }
    return Event(commit, "revert", revert.date, data)
