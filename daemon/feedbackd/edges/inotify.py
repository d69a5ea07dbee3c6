"""A recursive inotify watch on one folder, read in the caller's thread (Linux).

The kernel pushes events onto a file descriptor; the watcher sleeps in poll() until one comes,
so an idle daemon does not wake to look. Events are turned into watchfiles' (Change, path)
pairs (as numbers), the shape the rest of the watcher reads.

Every folder gets its own inotify watch. A folder's watch is added before it is listed, so a
subfolder made at any moment is either in the listing or reported by an event of its parent
(then watched in turn): a tree still being made (`mkdir -p`) while the watch starts is covered
whole. Symbolic links to folders are followed as watchfiles follows them; a folder reached a
second way (a link loop) is watched once.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import select
import struct
from collections.abc import Iterator

# watchfiles' Change values (the watcher reads these pairs and watchfiles' alike; only the watcher
# imports watchfiles).
ADDED, MODIFIED, DELETED = 1, 2, 3
_IN_MODIFY = 0x2
_IN_ATTRIB = 0x4
_IN_CLOSE_WRITE = 0x8
_IN_MOVED_FROM = 0x40
_IN_MOVED_TO = 0x80
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_UNMOUNT = 0x2000
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ONLYDIR = 0x1000000
_IN_EXCL_UNLINK = 0x4000000
_IN_ISDIR = 0x40000000
_IN_CLOEXEC = os.O_CLOEXEC
_IN_NONBLOCK = os.O_NONBLOCK

# What watchfiles (notify) asks for, so the same changes are seen.
_MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
    | _IN_ONLYDIR
    | _IN_EXCL_UNLINK
)
_ADDED = _IN_CREATE | _IN_MOVED_TO
_DELETED = _IN_DELETE | _IN_MOVED_FROM
_ROOT_GONE = _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_UNMOUNT | _IN_IGNORED
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, length of the name that follows
_READ_SIZE = 64 * 1024
# A folder that cannot be watched is skipped (it vanished, or may not be read); reconcile
# reports what it cannot read. Any other error (ENOSPC: the watch limit) is the caller's.
_SKIPPED = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.EPERM, errno.ELOOP})


def _load_libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name, use_errno=True)
    except OSError:
        return None
    return libc if hasattr(libc, "inotify_init1") else None


_LIBC = _load_libc()


def available() -> bool:
    """Whether this system has inotify (Linux); elsewhere the watcher uses watchfiles' own."""
    return _LIBC is not None


class TreeWatch:
    """inotify watches on `root` and every folder below it, kept as folders come and go.

    `changes()` returns what happened since the last call; `lost` says why events may have been
    lost since (the kernel's queue overflowed, a new folder could not be watched): watch anew.
    Raises FileNotFoundError when root is missing, OSError when inotify is exhausted (instances
    or watches).
    """

    def __init__(self, root: str) -> None:
        if _LIBC is None:
            raise OSError(errno.ENOSYS, "inotify is not available")
        self._libc = _LIBC
        self._fd: int = self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if self._fd < 0:
            raise _os_error(root)
        self.root = root
        self.lost: str | None = None
        self._folders: dict[int, str] = {}  # watch descriptor → folder path
        self._poll = select.poll()
        self._poll.register(self._fd, select.POLLIN)
        try:
            root_wd = self._add(root)
            if root_wd is None:
                raise FileNotFoundError(errno.ENOENT, "no such folder", root)
            self._root_wd = root_wd
            self._watch_below(root)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> TreeWatch:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def watched(self) -> set[str]:
        """The folders watched now."""
        return set(self._folders.values())

    def wait(self, timeout_s: float) -> bool:
        """Sleep until an event is there to read (True) or timeout_s passed (False)."""
        return bool(self._poll.poll(max(0, round(timeout_s * 1000))))

    def changes(self) -> set[tuple[int, str]]:
        """Every event waiting, as (Change, path) pairs; new folders are watched before this
        returns, so a pass that reads them afterwards misses nothing made inside them."""
        found: set[tuple[int, str]] = set()
        for wd, mask, name in self._events():
            self._take(wd, mask, name, found)
        return found

    def _events(self) -> Iterator[tuple[int, int, str]]:
        while True:
            try:
                data = os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                return
            offset = 0
            while offset < len(data):
                wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
                offset += _HEADER.size
                raw = data[offset : offset + length].rstrip(b"\0")
                offset += length
                yield wd, mask, os.fsdecode(raw)

    def _take(self, wd: int, mask: int, name: str, found: set[tuple[int, str]]) -> None:
        if mask & _IN_Q_OVERFLOW:
            self.lost = "the kernel's queue of file events overflowed"
            return
        folder = self._folders.get(wd)
        if folder is None:
            return  # a watch removed a moment ago
        if not name:  # about the watched folder itself
            if mask & _IN_IGNORED:
                del self._folders[wd]
            if wd == self._root_wd and mask & _ROOT_GONE:
                found.add((DELETED, folder))
            return
        path = os.path.join(folder, name)
        if mask & _IN_ISDIR and mask & _IN_MOVED_FROM:
            self._forget_below(path)  # its watches would report the old paths
        if mask & _IN_ISDIR and mask & _ADDED:
            self._watch_tree(path)
        found.add((_change_of(mask), path))

    def _watch_tree(self, top: str) -> None:
        try:
            if self._add(top) is not None:
                self._watch_below(top)
        except OSError as error:  # the watch limit reached, say: its events would be missed
            self.lost = f"cannot watch {top}: {error.strerror}"

    def _watch_below(self, top: str) -> None:
        """Watch every folder below top (itself watched already): each before it is listed."""
        pending = [top]
        while pending:
            for sub in _subfolders(pending.pop()):
                if self._add(sub) is not None:
                    pending.append(sub)

    def _add(self, folder: str) -> int | None:
        """Watch one folder; None when it cannot be watched or is watched already (a second
        way to the same folder: not descended into again)."""
        wd: int = self._libc.inotify_add_watch(self._fd, os.fsencode(folder), _MASK)
        if wd < 0:
            error = _os_error(folder)
            if error.errno in _SKIPPED:
                return None
            raise error
        if self._folders.get(wd, folder) != folder:
            return None
        self._folders[wd] = folder
        return wd

    def _forget_below(self, top: str) -> None:
        inside = top + os.sep
        for wd, folder in list(self._folders.items()):
            if folder == top or folder.startswith(inside):
                self._libc.inotify_rm_watch(self._fd, wd)
                del self._folders[wd]


def _subfolders(folder: str) -> list[str]:
    try:
        with os.scandir(folder) as entries:
            return [entry.path for entry in entries if _is_folder(entry)]
    except OSError:  # gone or unreadable: skipped like watchfiles skips it
        return []


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _change_of(mask: int) -> int:
    if mask & _ADDED:
        return ADDED
    if mask & _DELETED:
        return DELETED
    return MODIFIED


def _os_error(path: str) -> OSError:
    number = ctypes.get_errno()
    return OSError(number, os.strerror(number), path)
