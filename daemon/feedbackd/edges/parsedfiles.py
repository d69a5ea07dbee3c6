"""Files parsed once while they stay as they were read.

Every pass over an agent reads its feedback.json and its ledger, and most passes find them as
the pass before left them: the pass that records a decision follows the one the curator's edit
woke, and parsing a full feedback.json (200 entries, each checked against the contract) and a
long ledger is most of what a pass with little to do costs. What was parsed is kept for the few
files read last, and used again while the file's inode, size, modification and change times are
those it had when it was read: a rewrite (a new inode), an append, a pull or an edit in place
changes one of them.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from feedbackd.edges.files import read_file_and_state

T = TypeVar("T")
_State = tuple[int, int, int, int]


class ParsedFiles(Generic[T]):
    """What `parse` made of each of the `keep` files read last, by path."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._files: OrderedDict[Path, tuple[_State, T]] = OrderedDict()
        self._lock = threading.Lock()  # the web panel's threads read agent files too

    def read(self, path: Path, parse: Callable[[bytes], T]) -> T:
        """`parse` of the file's bytes, parsed again only when the file changed since. OSError
        as reading raises it; whatever `parse` raises is not kept."""
        state = _state(os.stat(path))
        with self._lock:
            kept = self._files.get(path)
            if kept is not None and kept[0] == state:
                self._files.move_to_end(path)
                return kept[1]
        data, info = read_file_and_state(path)
        value = parse(data)
        with self._lock:
            self._files[path] = (_state(info), value)
            self._files.move_to_end(path)
            while len(self._files) > self.keep:
                self._files.popitem(last=False)
        return value


def _state(info: os.stat_result) -> _State:
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
