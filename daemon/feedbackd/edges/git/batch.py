"""Git's object store through three long-lived git processes, so a commit starts almost none.

  `git cat-file --batch`              reads commits and trees (and resolves HEAD, afresh each time)
  `git hash-object -w --stdin-paths`  stores files as blobs, through the repository's filters
  `git mktree --batch -z`             stores trees

Each is started on first use and kept for the next commit: starting git and reading the index
is most of what a small commit costs on a big site. They are restarted when the repository's
configuration or attributes change (they read them once), and after any failure. All are ended
by close(); a process whose owner dies exits on the end of its input. A commit writes its
objects without them where it can, in this process (`native()`, edges/git/native.py), and once
that is open, reads go there too.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import re
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple, TypeVar, cast

from feedbackd.core.errors import GitError
from feedbackd.core.lru import BoundedLRU
from feedbackd.edges.git.headfile import resolved
from feedbackd.edges.git.native import LeftToGit, NativeStore
from feedbackd.edges.git.runner import BASE_ENV
from feedbackd.edges.git.upkeep import PackUpkeep
from feedbackd.edges.process import Coprocess, CoprocessGone

log = logging.getLogger("feedbackd")

# Generous: a helper answers in microseconds, unless the machine is swapping.
_ANSWER_S = 60.0
# hash-object answers a line per path; this many paths are sent before their answers are read.
_PATHS_AT_ONCE = 256

_T = TypeVar("_T")

_CAT_FILE = ("cat-file", "--batch")
_CAT_FILE_BUFFERED = ("cat-file", "--batch", "--buffer")
READ_THROUGH_BYTES = 32 * 1024  # a pipe holds 64 KiB: the names are sent whole, then read
_HASH_OBJECT = ("hash-object", "-w", "--stdin-paths")
_MKTREE = ("mktree", "--batch", "-z")
# A commit object is checked by git as `commit-tree` would, then stored; it is handed over in a
# file because hash-object reads objects of other kinds than blobs only from paths or stdin.
_HASH_COMMIT = ("hash-object", "-w", "-t", "commit", "--no-filters", "--stdin-paths")
COMMIT_FILE_PREFIX = "feedbackd-commit-"
_BATCH_NUMBERS = itertools.count(1)
# A name that only ever names one object: a commit's id, alone or with a path below it.
_FIXED_NAME = re.compile(r"[0-9a-f]{40}(?::.*)?", re.DOTALL)
# git's repacks (upkeep.py) before libgit2 and the helpers start again: each keeps the packs it
# has seen, deleted ones too, and looks through them all for an object it lacks.
_HELPERS_KEEP_REPACKS = 4
_KEPT_BYTES = 4 << 20  # a few big trees (an approved/ of 20,000 files is 1 MB)
# None of them ever takes `.git/index.lock`: edges/git/locks.py counts no such command, whichever
# feedbackd process (the daemon, the web server) runs it, as a holder of a lock.
HELPER_COMMANDS = frozenset({_CAT_FILE, _CAT_FILE_BUFFERED, _HASH_OBJECT, _MKTREE, _HASH_COMMIT})


class GitObject(NamedTuple):
    sha: str
    kind: str  # commit, tree, blob or tag
    content: bytes


class KeptObjects:
    """Trees and commits read by a name that fixes them (`<commit id>:path`: such a name never
    names another object), the most recent few MB, for the next read of the same name: a pass
    over 200 agents asks for `HEAD:_data/agents` 200 times. What a read ahead found is kept
    too, an absent file included. Safe to share between threads."""

    def __init__(self, limit_bytes: int = _KEPT_BYTES) -> None:
        self._kept: BoundedLRU[str, GitObject] = BoundedLRU(max_weight=limit_bytes, weigh=_size)
        self._limit = limit_bytes
        self._lock = threading.Lock()

    def get(self, name: str, read: Callable[[str], GitObject | None]) -> GitObject | None:
        """The object `name` names: kept, or read (and kept when it is a tree or a commit)."""
        if not _FIXED_NAME.fullmatch(name):
            return read(name)
        with self._lock:
            found = self._kept.get(name)
            if found is not None:
                return None if found is _ABSENT else found
        found = read(name)
        if found is not None and found.kind in ("tree", "commit"):
            self._keep(name, found)
        return found

    def keep(self, name: str, found: GitObject | None) -> None:
        """Keep what a read of the fixed name `name` found (None: nothing there)."""
        if _FIXED_NAME.fullmatch(name):
            self._keep(name, found if found is not None else _ABSENT)

    def _keep(self, name: str, found: GitObject) -> None:
        if _size(name, found) > self._limit // 4:
            return
        with self._lock:
            if name not in self._kept:
                self._kept.put(name, found)


_ABSENT = GitObject("", "missing", b"")  # kept for a name that names nothing


def _size(name: str, found: GitObject) -> int:
    """The bytes an entry counts for: its content, or its name when nothing is there."""
    return len(name) if found is _ABSENT else len(found.content)


class GitBatch:
    """The long-lived helpers of one repository; safe to share between threads."""

    def __init__(self, work_tree: Path, git_dir: Path, executable: str = "git") -> None:
        self.work_tree = work_tree
        self.git_dir = git_dir
        self._executable = executable
        self._env = {
            **BASE_ENV,
            "GIT_DIR": str(git_dir),
            "GIT_WORK_TREE": str(work_tree),
            "GIT_INDEX_FILE": str(git_dir / "index"),
        }
        self._helpers: dict[tuple[str, ...], Coprocess] = {}
        self._name = f"{os.getpid()}-{next(_BATCH_NUMBERS)}"
        self._settings = _settings_stamp(work_tree, git_dir)
        self._remembered: dict[str, object] = {}
        self._handovers: set[Path] = set()
        self._native: NativeStore | None = None
        self._kept_objects = KeptObjects()
        self._native_tried = False
        self._upkeep = PackUpkeep(work_tree, git_dir, executable, self._env)
        self._repacks_seen = 0  # since the helpers started: they may hold the old packs open
        self._lock = threading.Lock()

    def serves(self, work_tree: Path, git_dir: Path) -> bool:
        return (work_tree, git_dir) == (self.work_tree, self.git_dir)

    # --- reading ------------------------------------------------------------------------------
    def read(self, name: str) -> GitObject | None:
        """The object `name` (a sha, `HEAD`, `sha:path`) names; None when there is none."""
        if "\n" in name:
            raise GitError(f"not an object name: {name!r}")
        return self._kept_objects.get(resolved(name, self.git_dir), self._read)

    def _read(self, name: str) -> GitObject | None:
        native = self._native  # open once a commit used it: then reads need no round trip
        if native is not None:
            with contextlib.suppress(LeftToGit):
                found = native.read(name)
                return GitObject(*found) if found is not None else None

        def ask(helper: Coprocess) -> GitObject | None:
            helper.send(batch_name(name) + b"\n", _ANSWER_S)
            return _answer(helper)

        return self._ask(_CAT_FILE, ask)

    def read_ahead(self, names: Sequence[str]) -> None:
        """Read the objects `names` name (as read() takes them) together, for read() to answer
        from memory while the commit they name stays the same: a pass over many agents asks
        each for a file that most of them lack, and a request each is a round trip to git."""
        fixed = [resolved(name, self.git_dir) for name in names if "\n" not in name]
        fixed = [name for name in fixed if _FIXED_NAME.fullmatch(name)]
        for chunk in within_a_pipe(fixed):
            for name, found in zip(chunk, self.read_through(chunk), strict=True):
                self._kept_objects.keep(name, found)

    def read_through(self, names: Sequence[str]) -> Iterator[GitObject | None]:
        """read() of each name, by a `cat-file` of its own that takes them all at once and
        answers as a stream (its output buffered, not flushed after each object): many objects
        cost one process and no round trip each, and one object is held at a time. The names
        must fit in a pipe at once (READ_THROUGH_BYTES), as they are sent before any answer is
        read."""
        request = b"".join(batch_name(name) + b"\n" for name in names)
        if (
            b"\n" in b"".join(batch_name(name) for name in names)
            or len(request) > READ_THROUGH_BYTES
        ):
            raise GitError("object names with a line break, or more than a pipe holds")
        helper = self._start(_CAT_FILE_BUFFERED)
        try:
            helper.send(request, _ANSWER_S)
            helper.end_input()  # it writes out what it holds once its input ends
            for _ in names:
                yield _answer(helper)
        except CoprocessGone as gone:
            raise GitError(f"git cat-file failed: {gone}") from gone
        finally:
            helper.close()

    # --- writing ------------------------------------------------------------------------------
    def store_files(self, rels: Sequence[str]) -> list[str]:
        """Store the work-tree files `rels` as blobs, as `git add` would; their object ids."""
        if any("\n" in rel for rel in rels):
            raise GitError("a path with a line break cannot be stored through hash-object")
        ids: list[str] = []
        for start in range(0, len(rels), _PATHS_AT_ONCE):
            chunk = rels[start : start + _PATHS_AT_ONCE]

            def ask(helper: Coprocess, chunk: Sequence[str] = chunk) -> list[str]:
                helper.send(b"".join(batch_name(rel) + b"\n" for rel in chunk), _ANSWER_S)
                return [helper.read_line(_ANSWER_S).decode() for _ in chunk]

            ids += self._ask(_HASH_OBJECT, ask)
        return ids

    def store_tree(self, listing: bytes) -> str:
        """Store a tree from `git mktree -z` input (entries, each ending in NUL); its id."""

        def ask(helper: Coprocess) -> str:
            helper.send(listing + b"\0", _ANSWER_S)
            return helper.read_line(_ANSWER_S).decode()

        return self._ask(_MKTREE, ask)

    def store_trees(self, listings: Sequence[bytes]) -> list[str]:
        """Store several trees (each as for store_tree) with one request; their ids in order.
        A tree may name one stored before it in the same request."""

        def ask(helper: Coprocess) -> list[str]:
            helper.send(b"".join(listing + b"\0" for listing in listings), _ANSWER_S)
            return [helper.read_line(_ANSWER_S).decode() for _ in listings]

        return self._ask(_MKTREE, ask) if listings else []

    def store_commit(self, content: bytes) -> str:
        """Store a commit object (`tree ...`, `parent ...`, people, message); its id."""
        # Named for this batch as well as the thread: another batch of the same repository in
        # this thread (one being collected as garbage, say) removes its own file when closed.
        handover = self.git_dir / f"{COMMIT_FILE_PREFIX}{self._name}-{threading.get_ident()}"

        def ask(helper: Coprocess) -> str:
            helper.send(f"{handover}\n".encode(), _ANSWER_S)
            return helper.read_line(_ANSWER_S).decode()

        # The same file is written over for every commit, and removed at close: a new file
        # each time costs an inode allocation, which on a busy ext4 is most of a commit's time.
        handover.write_bytes(content)
        self._handovers.add(handover)
        return self._ask(_HASH_COMMIT, ask)

    def native(self) -> NativeStore | None:
        """The repository open in this process for a commit's objects and HEAD; None when
        libgit2 cannot serve it as git would (see NativeStore.open). Opened once, and again
        after the settings changed, as the helpers are."""
        with self._lock:
            if not self._native_tried:
                self._native_tried = True
                self._native = NativeStore.open(self.work_tree, self.git_dir)
            return self._native

    def _close_native(self) -> None:
        if self._native is not None:
            self._native.close()
        self._native, self._native_tried = None, False

    def close(self) -> None:
        with self._lock:
            self._upkeep.close()
            self._close_native()
            for helper in self._helpers.values():
                helper.close()
            self._helpers.clear()
            for handover in self._handovers:
                handover.unlink(missing_ok=True)
            self._handovers.clear()

    def remembered(self, key: str, compute: Callable[[], _T]) -> _T:
        """A value that comes from git's settings (the user's identity): computed once, and
        again only after one of the files it comes from changed."""
        with self._lock:
            self._restart_on_new_settings()
            if key not in self._remembered:
                self._remembered[key] = compute()
            return cast(_T, self._remembered[key])

    # --- the helpers --------------------------------------------------------------------------
    def _ask(self, command: tuple[str, ...], ask: Callable[[Coprocess], _T]) -> _T:
        """Put one request to the helper running `command`, started (again) when needed.

        Every request is safe to repeat (a read, or storing an object that may already be
        stored), so one that meets a helper gone since its last answer is put to a new one.
        """
        with self._lock:
            for attempt in (1, 2):
                helper = self._helper(command)
                try:
                    return ask(helper)
                except CoprocessGone as gone:
                    self._helpers.pop(command, None)
                    helper.close()
                    if attempt == 2:
                        raise GitError(f"git {command[0]} failed: {gone}") from gone
        raise AssertionError("unreachable")

    def _helper(self, command: tuple[str, ...]) -> Coprocess:
        helper = self._helpers.get(command)
        if helper is not None and helper.alive:
            return helper
        if helper is not None:
            helper.close()  # killed, or ended by itself
        helper = self._helpers[command] = self._start(command)
        return helper

    def _start(self, command: tuple[str, ...]) -> Coprocess:
        try:
            return Coprocess([self._executable, *command], cwd=self.work_tree, env=self._env)
        except CoprocessGone as gone:
            hint = "install git, or put it on the PATH of feedbackd"
            raise GitError(str(gone), hint=hint) from gone

    def look_at_settings(self) -> None:
        """Start the helpers afresh if git's settings or attributes changed since they started.
        Called when a unit of work (a pass, a command) opens the repository: within one, the
        settings are taken as they were at its start."""
        with self._lock:
            self._restart_on_new_settings()

    def _restart_on_new_settings(self) -> None:
        stamp = _settings_stamp(self.work_tree, self.git_dir)
        if stamp != self._settings:
            self._settings = stamp
            self._remembered.clear()
            self._start_afresh()

    def _start_afresh(self) -> None:
        """The helpers and libgit2 are started again on their next use."""
        self._repacks_seen = 0
        self._close_native()
        for helper in self._helpers.values():
            helper.close()
        self._helpers.clear()

    def after_commit(self) -> None:
        """Once a commit is made: git's repack of the small packs, started now and then
        (upkeep.py). libgit2 and the helpers start afresh after a few repacks (a git process;
        libgit2 reads the user's index again, 50 ms at 100,000 files); libgit2 keeps at most a
        few of the packs it has seen open meanwhile (native.py)."""
        with self._lock:
            if self._upkeep.after_commit():
                self._repacks_seen += 1
                if self._repacks_seen >= _HELPERS_KEEP_REPACKS:
                    self._start_afresh()


def _settings_stamp(work_tree: Path, git_dir: Path) -> Mapping[str, tuple[int, int, int]]:
    """When each file that git reads once per process last changed: its settings, attributes
    (filters, line endings), and the object folder (a repository replaced under us)."""
    files = {
        "config": git_dir / "config",
        "attributes": work_tree / ".gitattributes",
        "info": git_dir / "info" / "attributes",
        "objects": git_dir / "objects",
        "global": Path(os.environ.get("GIT_CONFIG_GLOBAL") or Path.home() / ".gitconfig"),
        "xdg": Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "git/config",
        "system": Path(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"),
    }
    stamp = {}
    for name, path in files.items():
        try:
            info = path.stat()
        except OSError:
            continue
        # (new objects change the object folder's time; only its replacement matters here)
        changed = (0, 0) if name == "objects" else (info.st_mtime_ns, info.st_size)
        stamp[name] = (info.st_ino, *changed)
    return stamp


def _answer(helper: Coprocess) -> GitObject | None:
    """The object `cat-file --batch` answers with next; None for its `<name> missing` (or
    `ambiguous`) line."""
    header = batch_header(helper.read_line(_ANSWER_S))
    if header is None:
        return None
    sha, kind, size = header
    content = helper.read_exact(size + 1, _ANSWER_S)
    return GitObject(sha, kind, content[:-1])


def batch_name(name: str) -> bytes:
    """An object name (or a path) as the helpers read it: a path's bytes as they are on disk
    (a name that is not UTF-8 was read with surrogateescape, as os.fsdecode reads it)."""
    return name.encode("utf-8", "surrogateescape")


def batch_header(line: bytes) -> tuple[str, str, int] | None:
    """`<sha> <type> <size>`, the line `cat-file --batch` prints before an object; None for its
    `<name> missing` (or `ambiguous`) answer, whose name may hold spaces of its own."""
    fields = line.split(b" ")
    if len(fields) != 3 or fields[1] not in _KINDS or not fields[2].isdigit():
        return None
    if not _HEX.fullmatch(fields[0]):
        return None
    return fields[0].decode(), fields[1].decode(), int(fields[2])


_KINDS = frozenset({b"blob", b"tree", b"commit", b"tag"})
_HEX = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")


class GitBatchKeeper:
    """The GitBatch of a long-running program (the daemon, the web server, a command), kept
    from one unit of work to the next; its helpers end with it, or at exit."""

    def __init__(self) -> None:
        self._held: list[GitBatch] = []
        self._lock = threading.Lock()
        weakref.finalize(self, _close_all, self._held)

    def batch_for(self, work_tree: Path, git_dir: Path, executable: str) -> GitBatch:
        with self._lock:
            if self._held and self._held[0].serves(work_tree, git_dir):
                self._held[0].look_at_settings()
                return self._held[0]
            _close_all(self._held)
            self._held.append(GitBatch(work_tree, git_dir, executable))
            return self._held[0]

    def close(self) -> None:
        with self._lock:
            _close_all(self._held)


def _close_all(held: list[GitBatch]) -> None:
    for batch in held:
        batch.close()
    held.clear()


def within_a_pipe(names: Sequence[str]) -> Iterator[list[str]]:
    """`names` in runs whose request (a line each) fits READ_THROUGH_BYTES."""
    chunk: list[str] = []
    size = 0
    for name in names:
        length = len(batch_name(name)) + 1
        if chunk and size + length > READ_THROUGH_BYTES:
            yield chunk
            chunk, size = [], 0
        chunk.append(name)
        size += length
    if chunk:
        yield chunk
