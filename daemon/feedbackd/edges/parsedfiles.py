"""Files parsed once while they hold the same bytes.

Every pass over an agent reads its feedback.json and its ledger, and most passes find them as
the pass before left them: the pass that records a decision follows the one the curator's edit
woke, and parsing a full feedback.json (200 entries, each checked against the contract) and a
long ledger is most of what a pass with little to do costs. What was parsed is kept for the few
files read last, with a digest of their bytes: a file is still read each time (tens of
microseconds), and parsed again only when its bytes changed. The bytes, not the file's inode,
size and times, decide: a `git reset` or `stash` can rewrite a ledger with another of the same
size, on a reused inode, within one tick of the file system's clock.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from feedbackd.edges.files import read_file_bytes

T = TypeVar("T")


class ParsedFiles(Generic[T]):
    """What `parse` made of each of the `keep` files read last, by path."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._files: OrderedDict[Path, tuple[bytes, T]] = OrderedDict()
        self._lock = threading.Lock()  # the web panel's threads read agent files too

    def read(self, path: Path, parse: Callable[[bytes], T]) -> T:
        """`parse` of the file's bytes, parsed again only when they changed since. OSError as
        reading raises it; whatever `parse` raises is not kept."""
        data = read_file_bytes(path)
        digest = hashlib.blake2b(data, digest_size=16).digest()
        with self._lock:
            kept = self._files.get(path)
            if kept is not None and kept[0] == digest:
                self._files.move_to_end(path)
                return kept[1]
        value = parse(data)
        with self._lock:
            self._files[path] = (digest, value)
            self._files.move_to_end(path)
            while len(self._files) > self.keep:
                self._files.popitem(last=False)
        return value
