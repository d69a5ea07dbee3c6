"""What each hook is owed, as a value: the events not yet delivered, in commit order, and how
the last attempts went. app/events/ keeps it in `.feedbackd/` and lets the clock and the network
act on it; every change here is a pure step from one state to the next.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from feedbackd.core.events.messages import Event
from feedbackd.core.timeutil import iso_ms, parse_iso

FORMAT = 1
FIRST_RETRY_S = 1.0
LAST_RETRY_S = 600.0  # 10 minutes: the longest wait between two attempts
ERROR_LIMIT = 300  # a receiver's answer, as kept and shown: never a whole page


def retry_delay(attempts: int) -> float:
    """Seconds before the next attempt after `attempts` failed ones: 1 s, doubling, at most
    10 minutes."""
    return min(FIRST_RETRY_S * 2.0 ** max(attempts - 1, 0), LAST_RETRY_S)


@dataclass(frozen=True)
class HookState:
    """One hook (known by its url): where it began, what it is owed, how it answered."""

    url: str
    start: str | None  # HEAD when the hook was first configured: what it holds is never sent
    configured_at: str
    owed: tuple[Event, ...] = ()
    attempts: int = 0  # failed attempts at the first owed event
    failing_since: str | None = None
    next_at: str | None = None
    last_error: str | None = None
    last_delivery: dict[str, Any] | None = None  # {commit, at, status}
    delivered: int = 0
    given_up: int = 0  # events dropped after events.retry_hours of failures

    def due(self, now: datetime) -> bool:
        return bool(self.owed) and (self.next_at is None or parse_iso(self.next_at) <= now)

    def seconds_until_due(self, now: datetime) -> float | None:
        if not self.owed:
            return None
        if self.next_at is None:
            return 0.0
        return max((parse_iso(self.next_at) - now).total_seconds(), 0.0)

    def owing(self, events: Iterable[Event]) -> HookState:
        """With `events` (oldest first) owed after what is owed already; an event owed already
        (a commit found twice) is not owed twice."""
        held = {event.commit for event in self.owed}
        more = []
        for event in events:
            if event.commit not in held:
                held.add(event.commit)
                more.append(event)
        return replace(self, owed=self.owed + tuple(more)) if more else self

    def replaying(self, events: Sequence[Event]) -> HookState:
        """With `events` (oldest first, older than what is owed: a replay) owed before what is
        owed already, tried at once."""
        held = {event.commit for event in self.owed}
        again = tuple(event for event in events if event.commit not in held)
        return replace(self, owed=again + self.owed, attempts=0, failing_since=None, next_at=None)

    def succeeded(self, now: datetime, status: int) -> HookState:
        """The first owed event was delivered."""
        sent = self.owed[0]
        return replace(
            self,
            owed=self.owed[1:],
            attempts=0,
            failing_since=None,
            next_at=None,
            last_delivery={"commit": sent.commit, "at": iso_ms(now), "status": status},
            delivered=self.delivered + 1,
        )

    def failed(self, now: datetime, error: str, retry_hours: float) -> HookState:
        """An attempt at the first owed event failed: try again after the backoff, or give it
        up once it has failed for `retry_hours` (the next event is tried at once)."""
        since = parse_iso(self.failing_since) if self.failing_since else now
        error = error[:ERROR_LIMIT]
        if now - since >= timedelta(hours=retry_hours):
            dropped = self.owed[0].commit[:12]
            return replace(
                self,
                owed=self.owed[1:],
                attempts=0,
                failing_since=None,
                next_at=None,
                last_error=f"gave up on {dropped} after {retry_hours:g} h: {error}",
                given_up=self.given_up + 1,
            )
        attempts = self.attempts + 1
        return replace(
            self,
            attempts=attempts,
            failing_since=iso_ms(since),
            next_at=iso_ms(now + timedelta(seconds=retry_delay(attempts))),
            last_error=error,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "start": self.start,
            "configured_at": self.configured_at,
            "owed": [event.to_json() for event in self.owed],
            "attempts": self.attempts,
            "failing_since": self.failing_since,
            "next_at": self.next_at,
            "last_error": self.last_error,
            "last_delivery": self.last_delivery,
            "delivered": self.delivered,
            "given_up": self.given_up,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> HookState:
        return cls(
            url=str(doc["url"]),
            start=doc.get("start"),
            configured_at=str(doc["configured_at"]),
            owed=tuple(Event.from_json(event) for event in doc.get("owed", [])),
            attempts=int(doc.get("attempts", 0)),
            failing_since=doc.get("failing_since"),
            next_at=doc.get("next_at"),
            last_error=doc.get("last_error"),
            last_delivery=doc.get("last_delivery"),
            delivered=int(doc.get("delivered", 0)),
            given_up=int(doc.get("given_up", 0)),
        )


@dataclass(frozen=True)
class Outbox:
    """Every hook's state, and the commit the history was read up to (None: never read)."""

    head: str | None = None
    hooks: dict[str, HookState] = field(default_factory=dict)

    def configured(self, urls: Sequence[str], now: datetime) -> Outbox:
        """Hooks new to the configuration start at `head`: what it holds is older than them.
        Hooks no longer configured are forgotten (configured again, they start afresh)."""
        hooks = {url: self.hooks.get(url) or HookState(url, self.head, iso_ms(now)) for url in urls}
        return replace(self, hooks=hooks)

    def with_hook(self, hook: HookState) -> Outbox:
        return replace(self, hooks={**self.hooks, hook.url: hook})

    def owed_count(self) -> int:
        return sum(len(hook.owed) for hook in self.hooks.values())

    def to_json(self) -> dict[str, Any]:
        hooks = [hook.to_json() for hook in self.hooks.values()]
        return {"format": FORMAT, "head": self.head, "hooks": hooks}

    @classmethod
    def from_json(cls, doc: Any) -> Outbox:
        """The state as written; ValueError for anything else (then it is rebuilt)."""
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ValueError("not an events state of this version")
        try:
            hooks = [HookState.from_json(hook) for hook in doc.get("hooks", [])]
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise ValueError(f"damaged events state: {error!r}") from None
        head = doc.get("head")
        return cls(head if isinstance(head, str) else None, {hook.url: hook for hook in hooks})
