"""What a process has logged about the files it cannot use, so that each is told once per change.

The daemon passes over an agent at every event in its folder (a curator's save, its own commit):
a broken draft left there would be logged again at each pass, a dozen times a minute. A problem is
logged when it is new, when its file changed since it was told (still broken, maybe otherwise),
or when it comes back after it went away; `status`, `doctor` and the `.error` file beside it say
it all along.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path

# A file as its inode, size and modification time show it; None when it is gone.
FileKey = tuple[int, int, int] | None


def file_key(path: Path) -> FileKey:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


class Told:
    """Per agent, what its passes logged last: each line with the state of its file."""

    def __init__(self) -> None:
        self._said: dict[str, dict[str, FileKey]] = {}
        self._lock = threading.Lock()  # the HTTP server's passes run in worker threads

    def news(self, agent: str, lines: Iterable[tuple[str, FileKey]], *, whole: bool) -> list[str]:
        """The lines not told yet as they are (same line, same file state); all of `lines` are
        told from now on. `whole`: these are all the agent's problems now (a full pass), so
        those no longer among them are forgotten and, should they come back, told again."""
        lines = list(lines)
        with self._lock:
            before = self._said.get(agent, {})
            new = [line for line, key in lines if line not in before or before[line] != key]
            now = dict(lines) if whole else {**before, **dict(lines)}
            self._said[agent] = now
        return new
