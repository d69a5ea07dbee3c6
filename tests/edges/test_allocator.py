"""Memory a pass freed goes back to the system (edges/allocator.py), on this machine's glibc."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

from feedbackd.edges.allocator import release_free_memory

BLOCK = 4096
BLOCKS = 20_000  # 80 MB in blocks small enough for the heap (not mmap'd one by one)


def rss_kb() -> int:
    for line in Path(f"/proc/{os.getpid()}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


def test_freed_heap_pages_go_back_to_the_system() -> None:
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    blocks = [libc.malloc(BLOCK) for _ in range(BLOCKS)]
    for block in blocks:
        ctypes.memset(block, 1, BLOCK)  # touched: now part of the RSS
    above = libc.malloc(BLOCK)  # keeps the freed blocks from being the heap's top, given back alone
    try:
        for block in blocks:
            libc.free(block)
        held = rss_kb()
        assert release_free_memory()
        assert held - rss_kb() > 40_000, "the freed 80 MB stayed with the process"
    finally:
        libc.free(above)
