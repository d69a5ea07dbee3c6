"""Crash-safe writes: whole files atomically (temporary file in the same folder, fsync, rename),
and lines appended to logs; safe reads, and a file's state to tell whether it changed since;
and what the disk holds of a workspace: its agent folders, and whether a path, symbolic links
followed, stays inside it.

A crash at any instant leaves either the old file or the new one, never half of either; leftovers
carry TMP_SUFFIX, which `init` git-ignores and start-up removes. An appended line cut short by a
crash is ended before the next one is written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, NamedTuple

from feedbackd.core.formats.jsontext import dumps_json
from feedbackd.core.ids import is_valid_id
from feedbackd.core.workspacepaths import Workspace

TMP_SUFFIX = ".feedbackd-tmp"


def atomic_write_bytes(
    path: Path, data: bytes, *, durable: bool = True, within: Path | None = None
) -> None:
    """Replace path with data in one step. durable=False skips the two fsyncs, for a copy of
    what is kept elsewhere (a crash may then leave the old file, or an empty one): thousands of
    such files cost seconds instead of minutes. `within`: see make_folders."""
    atomic_write_chunks(path, (data,), durable=durable, within=within)


NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})
# How the system, and git where it words it itself (an index it cannot write), say so.
NO_SPACE_WORDS = ("No space left on device", "Disk quota exceeded", "Out of diskspace")


def write_in_reserved_room(path: Path, data: bytes, room: int) -> None:
    """Replace `path` with `data` atomically, padded with spaces to `room` bytes; when the disk
    is full, overwrite the file in place instead. Its blocks exist already, so that needs no
    space: a report of a full disk can still be written (a reader may catch it half-written,
    and reads it again). OSError when even that fails, or `data` is larger than the file."""
    padded = data + b" " * max(0, room - len(data))
    try:
        atomic_write_bytes(path, padded, durable=False)
    except OSError as error:
        if error.errno not in NO_SPACE:
            raise
        with open(path, "r+b") as handle:
            size = os.fstat(handle.fileno()).st_size
            if len(data) > size:
                raise
            handle.write(data + b" " * (size - len(data)))


def _mode_of(path: Path) -> int | None:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None


def atomic_write_text(
    path: Path, text: str, *, durable: bool = True, within: Path | None = None
) -> None:
    """Write text; non-empty text always ends with a newline (an empty file stays zero bytes)."""
    if text and not text.endswith("\n"):
        text += "\n"
    atomic_write_bytes(path, text.encode("utf-8"), durable=durable, within=within)


def make_folders(folder: Path, within: Path | None = None) -> None:
    """Make `folder` and the folders on its way. With `within`, only those below it: a folder
    moved away meanwhile (an agent folder renamed) raises FileNotFoundError instead of being
    made again with only what this write holds."""
    if within is None:
        folder.mkdir(parents=True, exist_ok=True)
        return
    missing = []
    while folder != within and folder != folder.parent and not folder.is_dir():
        missing.append(folder)
        folder = folder.parent
    for each in reversed(missing):
        each.mkdir(exist_ok=True)


def atomic_write_chunks(
    path: Path, chunks: Iterable[bytes], *, durable: bool = True, within: Path | None = None
) -> None:
    """Replace path with the chunks written one after another, in one step: a file too big to
    hold in memory (an export) is never seen half written, nor left half written by a failure.
    `durable` and `within` as for atomic_write_bytes."""
    make_folders(path.parent, within)
    # Cut a long name so the temporary one stays within the file system's 255-byte limit.
    tmp = path.with_name(f".{path.name[:200]}.{secrets.token_hex(4)}{TMP_SUFFIX}")
    mode = _mode_of(path)
    try:
        with open(tmp, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
            handle.flush()
            if mode is not None:  # the user's chmod of the file outlives its rewrites
                os.fchmod(handle.fileno(), mode)
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    if durable:
        _fsync_dir(path.parent)


def atomic_write_json(path: Path, value: Any) -> None:
    atomic_write_text(path, dumps_json(value))


def append_line(path: Path, line: str, *, within: Path | None = None) -> None:
    """Append one line with a single O_APPEND write and fsync (`within`: see make_folders).

    Append-only logs can grow large, so they are not rewritten; a line cut short by a crash is
    terminated first, so the new line always starts on a line of its own.
    """
    make_folders(path.parent, within)
    data = line.rstrip("\n").encode("utf-8") + b"\n"
    # Read access too: a cut-short last line is found by reading its final byte.
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if _ends_without_newline(fd):
            data = b"\n" + data
        _write_whole(fd, data)
    finally:
        os.close(fd)


def _write_whole(fd: int, data: bytes) -> None:
    """Append data whole or not at all: a full disk may take only part of a write, and a line
    cut short would be read as a bad line (or glued to the next one). Shrinking the file back
    needs no space."""
    size = os.fstat(fd).st_size
    try:
        written = os.write(fd, data)
        if written < len(data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        os.fsync(fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
        raise


def _ends_without_newline(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def child_path(directory: Path, name: str) -> Path:
    """`directory / name`, for a name that a listing of `directory` gave, made the way
    `Path.iterdir` makes its paths.

    Parsing a path (`/`, `Path(...)`) adds each of its parts to the interpreter's table of
    interned strings. The names die with the paths, but the table keeps the size it grew to:
    a pass holding the paths of an agent's thousands of decided files doubled it, about 2 MB
    for the daemon's life. A child made from its parent's parts parses nothing.
    """
    make_child = getattr(directory, "_make_child_relpath", None)  # pathlib's, for iterdir()
    return make_child(name) if callable(make_child) else directory / name


NOT_A_PLAIN_FILE = "not a plain file (a pipe, socket or device)"


class NotAPlainFile(OSError):
    """A pipe, a socket or a device where a file was to be read."""


def open_plain_file(path: Path) -> BinaryIO:
    """path opened for reading, when it is a plain file; every reader of the workspace's files
    opens them here, so none of them hangs on what a user or a tool left in a file's place.

    Whatever else stands at path raises OSError: a folder, a socket, and a named pipe, which is
    opened without waiting (a plain open waits for a writer forever, and the daemon with it).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise NotAPlainFile(errno.EINVAL, NOT_A_PLAIN_FILE, str(path))
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_file_bytes(path: Path, limit: int | None = None) -> bytes:
    """The bytes of a plain file (at most limit + 1 of them, so a caller sees it is too large);
    OSError for anything else (open_plain_file)."""
    with open_plain_file(path) as handle:
        return handle.read() if limit is None else handle.read(limit + 1)


def read_file_text(path: Path, errors: str = "strict") -> str:
    """A plain file's text, as UTF-8 (`errors` as for bytes.decode); OSError as above."""
    return read_file_bytes(path).decode("utf-8", errors)


class FileState(NamedTuple):
    """A file as its inode, size and modification time (ns) show it: a writer that replaces the
    file changes the inode, one that rewrites it in place its size or time. Compared only while
    this process runs; a plain tuple of the three compares equal."""

    ino: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, info: os.stat_result) -> FileState:
        return cls(info.st_ino, info.st_size, info.st_mtime_ns)


def file_state(path: Path) -> FileState | None:
    """The file's state now; None when it cannot be looked at (gone, or no permission)."""
    try:
        return FileState.of(path.stat())
    except OSError:
        return None


class Undo:
    """Files as they are before a change, kept so that the change can be taken back where
    nothing new can be written (a full disk): a second name (a hard link) of each file it will
    replace or remove, and the length of each log it will append to. `undo` puts them back;
    leaving the `with` block drops the second names. They carry TMP_SUFFIX: a crash leaves
    nothing that start-up does not remove."""

    def __init__(self, replaced: Iterable[Path] = (), appended: Iterable[Path] = ()) -> None:
        self._kept: dict[Path, Path | None] = {}  # None: there was no file
        self._sizes: dict[Path, int | None] = {}
        self.whole = True  # False: a file could not be kept (no hard links here), so no undo
        try:
            for path in replaced:
                self._kept[path] = _second_name(path)
            for path in appended:
                self._sizes[path] = os.stat(path).st_size if os.path.lexists(path) else None
        except OSError:
            self.whole = False

    def __enter__(self) -> Undo:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for kept in self._kept.values():
            if kept is not None:
                with contextlib.suppress(OSError):
                    kept.unlink(missing_ok=True)

    def undo(self) -> bool:
        """Put every file back as it was (none of it needs room on the disk); False when that
        could not be done whole."""
        if not self.whole:
            return False
        try:
            for path, size in self._sizes.items():
                if size is None:
                    path.unlink(missing_ok=True)
                else:
                    os.truncate(path, size)
            for path, kept in self._kept.items():
                if kept is None:
                    path.unlink(missing_ok=True)
                else:
                    os.replace(kept, path)
        except OSError:
            return False
        return True


def room_left(path: Path) -> int | None:
    """Bytes an unprivileged writer may still write on path's file system (None: unknown)."""
    try:
        found = os.statvfs(path)
    except OSError:
        return None
    return found.f_bavail * found.f_frsize


def _second_name(path: Path) -> Path | None:
    if not os.path.lexists(path):
        return None
    kept = path.with_name(f".{path.name[:200]}.{secrets.token_hex(4)}.kept{TMP_SUFFIX}")
    os.link(path, kept, follow_symlinks=False)
    return kept


def remove_leftovers(root: Path) -> list[Path]:
    """Delete temporary files that a killed writer left behind under root.

    The walk keeps its own list of folders to visit (Path.rglob recurses, and a tree a few
    hundred folders deep overflowed Python's stack); it follows no symbolic link and skips a
    folder it cannot list.
    """
    removed = []
    folders = [root]
    while folders:
        try:
            with os.scandir(folders.pop()) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                folders.append(Path(entry.path))
            elif entry.name.endswith(TMP_SUFFIX):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
                    removed.append(Path(entry.path))
    return removed


def _below_without_links(root: str, path: str) -> bool:
    """True when `path` names a place below `root` with no `..` and no symbolic link on the
    way down from it: then it resolves to the same place below the resolved root."""
    top = root.rstrip("/") + "/"
    if not path.startswith(top):
        return False
    parts = path[len(top) :].split("/")
    if any(part in ("", ".", "..") for part in parts):
        return False
    here = top[:-1]
    for part in parts:
        here = f"{here}/{part}"
        if os.path.islink(here):
            return False
    return True


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# --- the workspace as the disk holds it --------------------------------------------------------
def agent_ids(workspace: Workspace) -> list[str]:
    """Agents on disk, sorted; folders with invalid names are skipped (doctor reports them)."""
    if not workspace.agents_dir.is_dir():
        return []
    return sorted(
        entry.name
        for entry in workspace.agents_dir.iterdir()
        if entry.is_dir() and is_valid_id(entry.name) and is_inside(workspace, entry)
    )


def is_inside(workspace: Workspace, path: Path) -> bool:
    """True when path (after resolving symbolic links) stays inside the workspace."""
    return _stays_below(workspace.root, path)


def is_inside_data(workspace: Workspace, path: Path) -> bool:
    """True when path (after resolving symbolic links) stays inside the workspace's `_data/`:
    items, and the folders they are moved to, are read and written nowhere else."""
    return _stays_below(workspace.data, path)


def _stays_below(top: Path, path: Path) -> bool:
    """A symbolic link loop leads nowhere, so it is not below (resolve raises RuntimeError)."""
    if _below_without_links(os.fspath(top), os.fspath(path)):
        return True  # the common case, in a few lstats instead of two resolves
    try:
        path.resolve().relative_to(top.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True
