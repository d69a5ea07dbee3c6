"""Reading a file that another program rewrites in place, without a lock or a rename (webhouse's
curation queue): the bytes, and the modification time they belong to.

Such a writer truncates the file and writes it anew, so a read can catch it empty or half
written. A read that a write overlapped (the file's size or time moved meanwhile) is read again;
what is still half written is for the caller to wait for, by the time returned.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from feedbackd.edges.files import FileState, read_file_bytes

_ATTEMPTS = 3


@dataclass(frozen=True)
class SharedRead:
    data: bytes
    changed_at: float  # the file's modification time (time.time scale)


def read_shared(path: Path, limit: int) -> SharedRead | None:
    """The file's bytes (at most limit + 1) and when it last changed; None when there is no
    file. OSError when something else stands there or it cannot be read."""
    for _ in range(_ATTEMPTS):
        try:
            before = os.stat(path)
            data = read_file_bytes(path, limit)
            after = os.stat(path)
        except FileNotFoundError:
            return None
        if FileState.of(before) == FileState.of(after):
            break
    return SharedRead(data, after.st_mtime)
