"""The one lock that serialises writers: the daemon's passes and the CLI's writing commands."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from feedbackd.fsutil import remove_leftovers
from feedbackd.instance import WriteLock
from feedbackd.runtime import Runtime


@contextmanager
def pipeline_lock(runtime: Runtime, timeout: float = 60.0) -> Iterator[None]:
    """Hold the workspace's write lock; the daemon takes the same one around each pass."""
    state_dir = runtime.workspace.state_dir
    state_dir.mkdir(parents=True, exist_ok=True)
    with WriteLock(state_dir, timeout=timeout):
        yield


def clean_leftovers(runtime: Runtime) -> None:
    """Remove temporary files that a killed writer left (call with the lock held)."""
    if runtime.workspace.data.is_dir():
        remove_leftovers(runtime.workspace.data)
