"""The system clock: what time it is now, in UTC.

The core reads no clock: whatever needs the time takes it as an argument (`now`), read here
by the caller, so a pass uses one time throughout and a test can give any time it likes.
"""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)
