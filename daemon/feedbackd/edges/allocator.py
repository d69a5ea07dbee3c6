"""Handing the memory a pass freed back to the system.

Python frees what a pass allocated, but the C library's allocator keeps freed pages of its heap
for later: a daemon that ran for thousands of decisions held on to what its biggest pass ever
needed. A soak measured 2.5 MB more RSS for every 1,000 decisions while its Python objects
stayed flat. glibc's `malloc_trim(0)` gives every free page back; a C library without it (musl)
is left alone.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim  # this process's C library
    except (OSError, AttributeError):
        return None
    return trim


_TRIM = _malloc_trim()


def release_free_memory() -> bool:
    """Give the allocator's free pages back to the system; True when some were."""
    return _TRIM is not None and bool(_TRIM(0))
