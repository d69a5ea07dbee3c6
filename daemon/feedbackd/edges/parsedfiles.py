"""Files parsed once while they hold the same bytes.

Every pass over an agent reads its feedback.json, and most passes find it as the pass before
left it: the pass that records a decision follows the one the curator's edit woke, and parsing
a full feedback.json (200 entries, each checked against the contract) is most of what a pass
with little to do costs. What was parsed is kept for the few files read last, with a digest of
their bytes: a file is still read each time (tens of microseconds), and parsed again only when
its bytes changed. The bytes, not the file's inode, size and times, decide: a `git reset` or
`stash` can rewrite a file with another of the same size, on a reused inode, within one tick of
the file system's clock.

Parsed, a file takes about six times its size in memory, so what is kept is bounded in bytes
too: a file that only grows (a ledger, thousands of decisions) is no candidate, as the daemon
would keep more of it the longer it runs.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from feedbackd.core.lru import BoundedLRU
from feedbackd.edges.files import read_file_bytes

T = TypeVar("T")


class ParsedFiles(Generic[T]):
    """What `parse` made of each of the `keep` files read last, by path, as long as they hold
    `max_bytes` in all (a larger file is parsed each time, and not kept)."""

    def __init__(self, keep: int, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        # By path: the digest of the bytes parsed, how many they were, and what they parsed to.
        self._files: BoundedLRU[Path, tuple[bytes, int, T]] = BoundedLRU(
            max_items=keep, max_weight=max_bytes, weigh=lambda _, kept: kept[1]
        )
        self._lock = threading.Lock()  # the web panel's threads read agent files too

    def read(self, path: Path, parse: Callable[[bytes], T]) -> T:
        """`parse` of the file's bytes, parsed again only when they changed since. OSError as
        reading raises it; whatever `parse` raises is not kept."""
        data = read_file_bytes(path)
        digest = hashlib.blake2b(data, digest_size=16).digest()
        with self._lock:
            kept = self._files.peek(path)
            if kept is not None and kept[0] == digest:
                self._files.get(path)  # now the most recently used
                return kept[2]
        value = parse(data)
        with self._lock:
            self._files.pop(path)
            if len(data) <= self.max_bytes:
                self._files.put(path, (digest, len(data), value))
        return value
