"""Finishing what a killed pass left: ledger lines written to disk but never committed.

Every writer appends its ledger line (a decision, a rating, a price change) before it commits,
so a pass killed in between leaves lines that HEAD lacks. The next pass compares the ledger with
HEAD's version of it and commits what is missing, once:

- `not_in_head`: the records of a ledger whose id HEAD's version lacks (ledgers whose lines a
  merge may reorder: decisions, prices);
- `appended_since_head`: the lines appended to an append-only log since HEAD (ratings, memory),
  nothing when a person edited it otherwise;
- `commit_uncommitted`: one commit for every ledger that holds such lines, built by the caller.

`CommittedLedgers` remembers which ledgers this process committed, as they were then, so a pass
over a ledger nobody else touched need not read HEAD's version back from git. What it remembers
holds only while HEAD still has that version: a `git reset` may drop the commit while the file
stays as it was. It is kept in `.feedbackd/committed-files` from one process to the next (an
idle `run --once` then asks git nothing about the decided files of a long history).
"""

from __future__ import annotations

import hashlib
import os
import struct
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from feedbackd.app.commits.recording import CommitRequest, Event, commit_change
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.workspacepaths import Workspace
from feedbackd.edges.files import FileState, atomic_write_bytes, file_state, read_file_bytes
from feedbackd.edges.git.repo import GitRepo

R = TypeVar("R")


COMMITTED_FILE = "committed-files"  # in .feedbackd/: CommittedLedgers.kept_in
_MAGIC = b"feedbackd committed files 1\n"
_ENTRY = struct.Struct("<QQ")  # a path's hash, its fingerprint's


class CommittedLedgers:
    """Each ledger as this process last committed it, by path: its (inode, size, mtime in ns)
    then, and the object id of the version committed; and so each decided item file (edited
    since its decision?).

    A ledger whose state is unchanged since then, while HEAD still holds that version, holds
    nothing uncommitted. Any other writer (a killed pass of another process, a pull, a
    checkout) changes its size, inode or time; a `git reset` that dropped the commit changes
    HEAD's version. The daemon keeps one for its life; a command or `run --once` starts with an
    empty one.

    It remembers every decided file for the daemon's life, so each is kept as two numbers: a
    hash of its path and a hash of its state and object id (about 100 bytes, where the path,
    the state and the id as objects took 800: 8 MB after 10,000 decisions). Two paths with
    the same hash only cost a question to git; a file that changed is taken for unchanged only
    if its new state and id hash as the old ones did, one chance in 2**64.

    Each remembered state vouches for itself (it names HEAD's object id of the file), so what
    another process remembered holds as well: `kept_in` reads what the last process left in
    `.feedbackd/`, and `save` writes it back (the hashes are stable from one process to the
    next). A lost or damaged file only costs questions to git.
    """

    def __init__(self, store: Path | None = None) -> None:
        self._states: dict[int, int] = {}
        self._store = store  # where save() writes them
        self._changed = False  # since they were read or saved
        self._saved_at = float("-inf")  # time.monotonic() of the last write

    @classmethod
    def kept_in(cls, state_dir: Path) -> CommittedLedgers:
        """The files the last process left remembered in `state_dir` (none when the file is
        missing or damaged)."""
        kept = cls(state_dir / COMMITTED_FILE)
        try:
            data = read_file_bytes(state_dir / COMMITTED_FILE)
        except OSError:
            return kept
        body = data[len(_MAGIC) :]
        if data.startswith(_MAGIC) and len(body) % _ENTRY.size == 0:
            kept._states = dict(_ENTRY.iter_unpack(body))
        return kept

    def save(self, at_most_every_s: float = 0.0) -> None:
        """Write what is remembered for the next process, when it changed (and the last write
        was at least `at_most_every_s` ago: a burst's passes need not each rewrite it)."""
        if self._store is None or not self._changed:
            return
        if time.monotonic() - self._saved_at < at_most_every_s:
            return
        self._saved_at = time.monotonic()
        body = b"".join(_ENTRY.pack(key, value) for key, value in self._states.items())
        try:
            atomic_write_bytes(self._store, _MAGIC + body, durable=False)
        except OSError:
            return  # a full disk: the next process asks git again
        self._changed = False

    def unchanged(self, runtime: Runtime, repo: GitRepo | None, ledger: Path) -> bool:
        """True when the ledger is as this process last committed it, and HEAD holds that
        version: nothing to recover."""
        return ledger in self.unchanged_among(runtime, repo, [ledger])

    def unchanged_among(
        self, runtime: Runtime, repo: GitRepo | None, paths: Sequence[Path]
    ) -> set[Path]:
        """Those of `paths` that are as this process last committed (or git vouched for)
        them, while HEAD still holds that version; HEAD read once."""
        if repo is None:
            return set()
        keys = {path: key for path in paths if (key := _key(path)) in self._states}
        known = {path: file_state(path) for path in keys}
        rels = {path: runtime.workspace.relative(path) for path in known}
        at_head = repo.file_ids_at_head(list(rels.values())) if rels else {}
        return {
            path
            for path, state in known.items()
            if state is not None
            and self._states[keys[path]] == _fingerprint(state, at_head[rels[path]])
        }

    def remember(
        self,
        runtime: Runtime,
        repo: GitRepo,
        path: Path,
        state: FileState,
        committed: str | None = None,
    ) -> None:
        """Remember a file in a state git said is as HEAD holds it (a decided item): until it
        changes, or HEAD does, nobody need ask git again. `committed`: HEAD's object id of it,
        when known already."""
        committed = committed or repo.file_id_at_head(runtime.workspace.relative(path))
        key, value = _key(path), _fingerprint(state, committed)
        if self._states.get(key) != value:
            self._states[key] = value
            self._changed = True

    def remember_all(
        self, runtime: Runtime, repo: GitRepo, files: Iterable[tuple[Path, FileState | None]]
    ) -> None:
        """remember() each file that has a state, HEAD read once for all of them."""
        states = {path: state for path, state in files if state is not None}
        rels = {path: runtime.workspace.relative(path) for path in states}
        ids = repo.file_ids_at_head(list(rels.values())) if rels else {}
        for path, state in states.items():
            self.remember(runtime, repo, path, state, ids[rels[path]])

    def differs_from_head(self, runtime: Runtime, repo: GitRepo | None, path: Path) -> bool:
        """True when the file on disk and HEAD's version of it differ (a pass killed after
        writing it, before its commit); False when either has none. Git is asked once while
        the file stays as HEAD holds it."""
        if repo is None or self.unchanged(runtime, repo, path):
            return False
        state = file_state(path)
        if state is None:
            return False  # git need not be asked about a file that is not there
        at_head = repo.object_at_head(runtime.workspace.relative(path))
        if at_head is None:
            return False
        if read_file_bytes(path) != at_head.content:
            return True
        self.remember(runtime, repo, path, state, at_head.sha)
        return False

    def commit(
        self, runtime: Runtime, repo: GitRepo | None, change: CommitRequest, ledgers: Iterable[Path]
    ) -> Event | None:
        """commit_change, then remember those of `ledgers` that the change holds as committed.

        Their state is taken before the commit: a line appended meanwhile is then noticed.
        """
        paths = set(change.paths)
        states = {path: file_state(path) for path in ledgers if path in paths}
        event = commit_change(runtime, repo, change)
        kept = {path: state for path, state in states.items() if state is not None}
        if repo is not None and kept:
            rels = {path: runtime.workspace.relative(path) for path in kept}
            committed = repo.file_ids_at_head(list(rels.values()))  # HEAD read once
            for path, state in kept.items():
                self.remember(runtime, repo, path, state, committed[rels[path]])
        return event

    @property
    def files_remembered(self) -> int:
        return len(self._states)


def _key(path: Path) -> int:
    return _hash(os.fsencode(path))


def _fingerprint(state: FileState, object_id: str | None) -> int:
    return _hash(f"{state.ino} {state.size} {state.mtime_ns} {object_id}".encode())


def _hash(data: bytes) -> int:
    """Eight bytes of a digest: the same in every process, where Python's hash() of a string
    is not."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def not_in_head(
    repo: GitRepo,
    workspace: Workspace,
    ledger: Path,
    records: Sequence[R],
    *,
    head_ids: Callable[[str], Iterable[str]],
    id_of: Callable[[R], str],
) -> list[R]:
    """Those of `records` (the ledger as read now, in file order) whose id is not among the ids
    of HEAD's version of the ledger (`head_ids` reads them from its text)."""
    committed = repo.file_at_head(workspace.relative(ledger)) or b""
    known = set(head_ids(committed.decode("utf-8", errors="replace")))
    return [record for record in records if id_of(record) not in known]


def appended_since_head(repo: GitRepo, workspace: Workspace, log: Path) -> list[str]:
    """The lines appended to an append-only log since HEAD.

    None when the file cannot be read, was changed otherwise (a person's own edit is theirs), or
    ends in a line still being written.
    """
    try:
        current = read_file_bytes(log)
    except OSError:
        return []
    committed = repo.file_at_head(workspace.relative(log)) or b""
    if not current.startswith(committed) or not current.endswith(b"\n"):
        return []
    return current[len(committed) :].decode("utf-8", errors="replace").splitlines()


def commit_uncommitted(
    runtime: Runtime,
    repo: GitRepo | None,
    pending: Mapping[Path, Sequence[R]],
    build: Callable[[dict[Path, list[R]]], CommitRequest],
    *,
    ledgers: CommittedLedgers | None = None,
) -> Event | None:
    """One commit of the ledgers that hold lines HEAD lacks; None when none does.

    `pending` maps each ledger to those lines (`not_in_head`, `appended_since_head`); `build`
    gets the ledgers that have some and says what the commit holds (the ledgers and whatever
    their lines stand for) and what its message says. With `ledgers`, the committed ledgers are
    remembered there.
    """
    waiting = {path: list(lines) for path, lines in pending.items() if lines}
    if not waiting:
        return None
    change = build(waiting)
    if ledgers is None:
        return commit_change(runtime, repo, change)
    return ledgers.commit(runtime, repo, change, waiting)
