"""A bounded cache that forgets what was used least recently: the one shape of every cache of
the package (parsed trees, git objects, month files' rows, parsed files, agents' prompts).

Each cache bounds what it keeps by a count, by a weight (rows, entries, bytes) or by both; once
over, the least recently used values go first. The value just put always stays, so a single
value heavier than the bound is kept until the next one comes. No lock: a cache that threads
share holds its own around each call, as it often guards more than the cache with it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def _one(key: object, value: object) -> int:
    return 1


class BoundedLRU(Generic[K, V]):
    """Values by key, at most `max_items` of them weighing at most `max_weight` in all (each
    weighs `weigh(key, value)`, as it weighed when put; 1 unless told). None: no such bound."""

    def __init__(
        self,
        *,
        max_items: int | None = None,
        max_weight: int | None = None,
        weigh: Callable[[K, V], int] = _one,
    ) -> None:
        self.max_items = max_items
        self.max_weight = max_weight
        self._weigh = weigh
        self._values: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._weight = 0

    @property
    def weight(self) -> int:
        """What the values kept weigh in all."""
        return self._weight

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def get(self, key: K) -> V | None:
        """The value kept for `key`, now the most recently used; None when none is kept."""
        kept = self._values.get(key)
        if kept is None:
            return None
        self._values.move_to_end(key)
        return kept[0]

    def peek(self, key: K) -> V | None:
        """The value kept for `key`, leaving the order of use as it is."""
        kept = self._values.get(key)
        return None if kept is None else kept[0]

    def put(self, key: K, value: V) -> None:
        """Keep `value` for `key` (in place of any before), as the most recently used; then
        forget the least recently used values until the bounds hold or only this one is left."""
        self.pop(key)
        weight = self._weigh(key, value)
        self._values[key] = (value, weight)
        self._weight += weight
        while len(self._values) > 1 and self._over():
            _, (_, oldest) = self._values.popitem(last=False)
            self._weight -= oldest

    def pop(self, key: K) -> V | None:
        """Forget the value kept for `key`, and return it (None when none was kept)."""
        kept = self._values.pop(key, None)
        if kept is None:
            return None
        self._weight -= kept[1]
        return kept[0]

    def _over(self) -> bool:
        too_many = self.max_items is not None and len(self._values) > self.max_items
        return too_many or (self.max_weight is not None and self._weight > self.max_weight)
