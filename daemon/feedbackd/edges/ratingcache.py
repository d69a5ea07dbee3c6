"""Month files' ratings kept in memory between reads, for a process that reads them again and again.

The daemon records each rating and then applies the provider's rules, and both ask for the
provider's ratings window: a busy provider's window holds tens of thousands of ratings. Reading
the window anew each time makes every rating cost as much as all before it, in time and in
memory. Here each month file is read once; afterwards only what was appended to it is read.

Another process appends to these files too (a `feedback submit` beside the daemon), and a pull,
a merge or a hand edit rewrites them. A file whose size and modification time are unchanged is
taken as read. Otherwise the part read before is fingerprinted again from the file: when it is
unchanged, only the new lines are read; when it changed, the file is read whole again.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from feedbackd.core.lru import BoundedLRU
from feedbackd.core.ratings.storedratings import RatingRows
from feedbackd.edges.monthfiles import digest, read_appended, read_bytes

# Reads the valid rows of some bytes of a month file, given the line number of their first line
# (warnings about bad lines name it).
Parse = Callable[[bytes, int], RatingRows]
DEFAULT_MAX_ROWS = 200_000  # about 10 MB; files used least recently are dropped beyond it


@dataclass
class _Read:
    """What was read of one month file."""

    size: int
    mtime_ns: int
    digest: bytes | None  # of the bytes read; None when they did not end a line
    rows: RatingRows


class RatingCache:
    """The rows of the month files read so far, oldest used first."""

    def __init__(self, max_rows: int = DEFAULT_MAX_ROWS) -> None:
        # Weighed by rows when put: the rows of a read grow only once it is taken out again.
        self._files: BoundedLRU[Path, _Read] = BoundedLRU(
            max_weight=max_rows, weigh=lambda _, read: len(read.rows)
        )

    def rows(self, path: Path, parse: Parse) -> RatingRows:
        """The valid rows of the month file as it is now, in file order."""
        earlier = self._files.pop(path)
        try:
            stat = path.stat()
        except FileNotFoundError:
            return parse(b"", 1)  # no rows
        if earlier is not None and (earlier.size, earlier.mtime_ns) == _size_time(stat):
            read = earlier
        else:
            read = _appended(path, stat, earlier, parse) or _whole(path, stat, parse)
        self._files.put(path, read)
        return read.rows


def _size_time(stat: os.stat_result) -> tuple[int, int]:
    return stat.st_size, stat.st_mtime_ns


def _appended(
    path: Path, stat: os.stat_result, earlier: _Read | None, parse: Parse
) -> _Read | None:
    """The earlier read with the lines appended since; None when the file was not only appended."""
    if earlier is None or earlier.digest is None or stat.st_size <= earlier.size:
        return None
    appended = read_appended(path, earlier.size, earlier.digest)
    if appended is None:
        return None
    ends_a_line = appended.data.endswith(b"\n")
    # The earlier rows grow in place: a row handed out before still reads the same rating.
    earlier.rows.extend(parse(appended.data, appended.first_line))
    return _Read(
        earlier.size + len(appended.data),
        stat.st_mtime_ns,
        appended.digest if ends_a_line else None,
        earlier.rows,
    )


def _whole(path: Path, stat: os.stat_result, parse: Parse) -> _Read:
    data = read_bytes(path)
    ends_a_line = data.endswith(b"\n") or not data
    return _Read(len(data), stat.st_mtime_ns, digest(data) if ends_a_line else None, parse(data, 1))
