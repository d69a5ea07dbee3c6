"""The events' state file in `.feedbackd/`: read and written whole, atomically, under a lock
that the daemon's delivery thread and a command (`events replay`) take in turn. The lock is held
for a read and a write, never during a POST."""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from feedbackd.edges.files import atomic_write_json, read_file_bytes

_IN_PROCESS = threading.Lock()  # flock is per open file: threads of one process need this too


@contextmanager
def held(path: Path) -> Iterator[None]:
    """The state at `path` is ours until the block ends."""
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
    with _IN_PROCESS:
        fd = os.open(path.with_name(path.name + ".lock"), flags, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # which lets go of the lock


def read_state(path: Path) -> Any | None:
    """The JSON document at `path`; None when there is none or it does not parse (a state
    that cannot be read is rebuilt, never trusted)."""
    try:
        return json.loads(read_file_bytes(path))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return None


def write_state(path: Path, doc: Any) -> None:
    atomic_write_json(path, doc)
