"""Wrong tokens, counted per client address (SPEC section 12): past 10 in a minute, an address
may not try again until the oldest of them is a minute old. Both ways of presenting the token
count (the login form and `Authorization: Bearer`), so guessing cannot move from one to the other.

Kept in memory: a restart forgets the count, which costs a guesser a minute at most.
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections import deque
from collections.abc import Callable

LIMIT = 10
WINDOW_S = 60.0
MAX_ADDRESSES = 10_000  # beyond this many guessing addresses, the longest quiet is forgotten


class FailedAttempts:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        # In the order the addresses were last seen: the first is the one quiet the longest.
        self._failures: dict[str, deque[float]] = {}

    def __len__(self) -> int:
        """How many addresses are remembered."""
        return len(self._failures)

    def wait_s(self, address: str) -> int | None:
        """Whole seconds until `address` may present a token again; None when it may now."""
        recent = self._recent(address)
        if len(recent) < LIMIT:
            return None
        return max(1, math.ceil(recent[0] + WINDOW_S - self._clock()))

    def failed(self, address: str) -> None:
        recent = self._recent(address)
        recent.append(self._clock())
        self._failures[client_key(address)] = recent
        if len(self._failures) > MAX_ADDRESSES:  # a flood of addresses: memory stays bounded
            del self._failures[next(iter(self._failures))]

    def _recent(self, address: str) -> deque[float]:
        address = client_key(address)
        recent = self._failures.pop(address, deque())
        since = self._clock() - WINDOW_S
        while recent and recent[0] <= since:
            recent.popleft()
        if recent:  # back in, as the most recently active address
            self._failures[address] = recent
        return recent


def client_key(address: str) -> str:
    """Whom the count is kept for: an IPv4 address, or an IPv6 address's /64 (one machine is
    usually given a whole /64, and could otherwise try from a new address each time)."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:  # an IPv4 client of a dual-stack listen
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed)
