"""Ratings on disk, and a local index that keeps them fast to ask about at a million ratings.

The truth is `_data/agents/{provider}/ratings/{skill}/{YYYY-MM}.jsonl` (month of each rating's
time): committed, merged by other machines, sometimes edited by hand. The index in
`<workspace>/.feedbackd/ratings-index.sqlite3` is git-ignored and rebuildable; it remembers for
each month file its size and mtime, the transaction ids in it (the duplicate check) and a decay
tally of its ratings (reputation without reading old months). A file whose size or mtime changed
is read again: only its new lines when it merely grew (and is one of the two newest months of
its skill, which get a fingerprint), the whole of it otherwise. Listing by `since` needs no
index: file names say which months can hold the window.

A line that cannot be read is skipped with a warning naming the file and line, never fatal.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import json
import logging
import os
import re
import sqlite3
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from feedbackd.core.config import ReputationSettings
from feedbackd.core.errors import AlreadySubmitted, FeedbackdError
from feedbackd.core.ids import is_valid_id, validate_id
from feedbackd.core.ratings.records import Rating, is_canonical_time, rating_line, stored_fields
from feedbackd.core.ratings.reputation import DecaySums, Point, merge, report_from_tallies, tally
from feedbackd.core.ratings.storedratings import NewestFirst, RatingRows, StoredRating
from feedbackd.core.timeutil import iso_ms, unix_ms
from feedbackd.core.wording import Progress
from feedbackd.core.workspacepaths import Workspace
from feedbackd.edges.files import agent_ids, append_line, is_inside
from feedbackd.edges.monthfiles import (
    Appended,
    Job,
    Read,
    digest,
    read_all,
    read_appended,
    read_bytes,
    summary_of,
)
from feedbackd.edges.ratingcache import RatingCache

log = logging.getLogger(__name__)

INDEX_NAME = "ratings-index.sqlite3"
SCHEMA_VERSION = 1
KEY_SIZE = 16
DEFAULT_DECAY_DAYS = 30.0
_MONTH_FILE = re.compile(r"([0-9]{4}-(?:0[1-9]|1[0-2]))\.jsonl\Z")
_TIMESTAMP_KEY = '"timestamp": "'
_SCHEMA = """
CREATE TABLE files (
    id INTEGER PRIMARY KEY, provider TEXT NOT NULL, skill TEXT NOT NULL, month TEXT NOT NULL,
    size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, digest BLOB, tally TEXT NOT NULL,
    keys BLOB NOT NULL, UNIQUE (provider, skill, month));
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

Scope = tuple[str | None, str | None]  # (provider, skill) a refresh looked at; None = all


@dataclass(frozen=True)
class MonthFile:
    """One `{provider}/ratings/{skill}/{YYYY-MM}.jsonl` file."""

    provider: str
    skill: str
    month: str
    path: Path


@dataclass(frozen=True)
class _Entry:
    """What the index remembers about one month file."""

    id: int
    size: int
    mtime_ns: int
    digest: bytes | None
    tally: DecaySums


@dataclass
class _Scan:
    """What one read of (the new part of) a month file found."""

    points: list[Point] = dataclasses.field(default_factory=list)
    keys: list[bytes] = dataclasses.field(default_factory=list)  # transaction ids, 16 bytes each


class RatingStore:
    """The ratings of every provider in a workspace."""

    def __init__(
        self,
        workspace: Workspace,
        *,
        progress: Progress | None = None,  # hears (bytes read, bytes to read) while indexing
        cache: RatingCache | None = None,
    ) -> None:
        self.workspace = workspace
        self.progress = progress
        self.cache = cache  # kept by a process that asks about the same ratings again and again
        self._progress = (0, 0)  # (bytes read, bytes to read) of the refresh under way

    @property
    def index_path(self) -> Path:
        return self.workspace.state_dir / INDEX_NAME

    def path_for(self, r: Rating) -> Path:
        skill = validate_id(r.skill_id, "skill id")
        return self.workspace.agent(r.provider_agent).ratings / skill / f"{r.month}.jsonl"

    def has_transaction(self, transaction_id: str) -> bool:
        return self.where_rated(transaction_id) is not None

    def where_rated(self, transaction_id: str) -> Path | None:
        """The month file that holds a rating of this transaction, if any."""
        try:
            key = uuid.UUID(transaction_id).bytes
        except (ValueError, TypeError):
            return None  # not a UUID, so it cannot have been stored
        with self._index() as db:
            entries = self._refresh(db, self.month_files(), _index_decay(db), (None, None))
            for month_file, entry in sorted(entries.items(), key=lambda pair: pair[0].month):
                if _holds_key(db, entry.id, key):
                    return month_file.path
        return None

    def append(self, r: Rating) -> Path:
        """Store a new rating; a transaction that was already rated is refused."""
        self.refuse_rated(r)
        path = self.path_for(r)
        append_line(path, rating_line(r))
        return path

    def refuse_rated(self, r: Rating) -> None:
        """AlreadySubmitted when the rating's transaction was rated already."""
        earlier = self.where_rated(r.transaction_id)
        if earlier is not None:
            raise AlreadySubmitted(
                f"transaction {r.transaction_id} was already rated"
                f" (in {self.workspace.relative(earlier)})",
                hint="each rental is rated once; a new rental has a new transaction_id",
            )

    def ratings(
        self,
        provider: str,
        skill: str | None = None,
        since: datetime | None = None,
        requester: str | None = None,
    ) -> list[StoredRating]:
        """A provider's ratings (of one skill, from one requester), at or after `since`,
        newest first."""
        since_iso = iso_ms(since) if since is not None else None
        since_ms = unix_ms(since) if since is not None else None
        found: dict[bytes, tuple[NewestFirst, StoredRating]] = {}
        for month_file in self.month_files(provider, skill):
            if since_iso is not None and month_file.month < since_iso[:7]:
                continue  # the whole month lies before the window
            for order, row in self._rows(month_file, since_iso).select(since_ms, requester):
                found.setdefault(order[1], (order, row))  # a transaction counts once
        # Each transaction id is there once, so the orders never tie and rows are not compared.
        return [row for _, row in sorted(found.values(), reverse=True)]

    def _rows(self, month_file: MonthFile, since_iso: str | None) -> RatingRows:
        """The valid ratings of a month file (those at or after `since_iso` at least)."""
        if self.cache is None:
            return _read_rows(self.workspace, month_file, since_iso)
        parse = functools.partial(_parse_rows, self.workspace, month_file)
        return self.cache.rows(month_file.path, parse)

    def skills(self, provider: str) -> list[str]:
        """The skills of a provider that have a ratings folder, sorted."""
        folder = self.workspace.agent(provider).ratings
        return sorted(entry.name for entry in _folders(self.workspace, folder))

    def reputation_report(
        self,
        provider: str,
        settings: ReputationSettings,
        now: datetime,
        skill: str | None = None,
    ) -> dict[str, Any]:
        """`reputation --json` for a provider (or one of its skills), from the index."""
        return report_from_tallies(
            provider, self.tallies(provider, settings, now, skill), settings, now
        )

    def tallies(
        self,
        provider: str,
        settings: ReputationSettings,
        now: datetime,
        skill: str | None = None,
    ) -> dict[str, list[DecaySums]]:
        """Per skill, one decay tally per month file, each measured no later than `now`."""
        files = self.month_files(provider, skill)
        with self._index() as db:
            _set_index_decay(db, settings.decay_days)
            entries = self._refresh(db, files, settings.decay_days, (provider, skill))
        result: dict[str, list[DecaySums]] = {}
        cap = now.timestamp()
        for month_file, entry in entries.items():
            file_tally = entry.tally
            if file_tally.ref > cap:
                # This file holds ratings from after `now`: their age counts as 0, so tally again.
                lines = _lines(read_bytes(month_file.path), 0)
                scan = _scan_lines(self.workspace, month_file, lines, _nothing_known)
                file_tally = tally(scan.points, settings.decay_days, cap)
            result.setdefault(month_file.skill, []).append(file_tally)
        return result

    def month_files(self, provider: str | None = None, skill: str | None = None) -> list[MonthFile]:
        """Month files on disk, of one provider (and skill) or of all, oldest month first."""
        providers = [validate_id(provider, "agent id")] if provider else agent_ids(self.workspace)
        found = []
        for agent in providers:
            ratings_dir = self.workspace.agent(agent).ratings
            skills = [validate_id(skill, "skill id")] if skill else self.skills(agent)
            for skill_id in skills:
                found.extend(_months(self.workspace, agent, skill_id, ratings_dir / skill_id))
        return sorted(found, key=lambda f: (f.month, f.provider, f.skill))

    @contextlib.contextmanager
    def _index(self) -> Iterator[sqlite3.Connection]:
        db = _open_index(self.index_path)
        try:
            with db:
                yield db
        except sqlite3.OperationalError as exc:
            if _disk_full(exc, self.index_path.parent):
                raise _no_space(self.index_path) from exc
            raise
        finally:
            db.close()

    def _refresh(
        self, db: sqlite3.Connection, files: list[MonthFile], decay_days: float, scope: Scope
    ) -> dict[MonthFile, _Entry]:
        """Bring the index up to date for these files; return their entries."""
        known = _entries(db, files)
        entries: dict[MonthFile, _Entry] = {}
        stale: list[tuple[MonthFile, os.stat_result]] = []
        for month_file in files:
            stat = _stat(month_file.path)
            if stat is None:
                continue  # removed since it was listed (a checkout or pull in progress)
            entry = known.get(month_file)
            if entry and _fresh(entry, stat, decay_days):
                entries[month_file] = entry
            else:
                stale.append((month_file, stat))
        self._progress = (0, sum(stat.st_size for _, stat in stale))
        # Files the index has never seen (all of them after a fresh clone) are read in bulk.
        unseen = {month_file: stat for month_file, stat in stale if month_file not in known}
        may_grow = _may_grow(files)
        for month_file, read in _read_unseen(unseen, decay_days, may_grow):
            stat = unseen[month_file]
            if read is None or read.summary is None:
                job = _job(month_file, decay_days, stat.st_size, month_file in may_grow)
                entries[month_file] = self._reindex(db, month_file, None, stat, job)
            else:
                entries[month_file] = _save_summary(db, month_file, stat, read)
            self._advance(stat.st_size)
        for month_file, stat in stale:
            if month_file in known:
                job = _job(month_file, decay_days, stat.st_size, month_file in may_grow)
                entry = self._reindex(db, month_file, known[month_file], stat, job)
                entries[month_file] = entry
                self._advance(stat.st_size)
        _forget_missing(db, files, scope)
        return entries

    def _advance(self, size: int) -> None:
        done, total = self._progress
        self._progress = (done + size, total)
        if self.progress:
            self.progress(done + size, total)

    def _reindex(
        self,
        db: sqlite3.Connection,
        month_file: MonthFile,
        entry: _Entry | None,
        stat: os.stat_result,
        job: Job,
    ) -> _Entry:
        """Read a changed month file: only its new lines when it merely grew, else all of it."""
        decay_days = job.decay_days
        if entry is not None and _may_have_grown(entry, stat, decay_days):
            assert entry.digest is not None
            appended = read_appended(month_file.path, entry.size, entry.digest)
            if appended is not None:
                return self._extend(db, month_file, entry, stat, appended)
        data = read_bytes(month_file.path)
        # Only a file ending in a newline can be extended by appends without re-reading it.
        ends_a_line = data.endswith(b"\n") or not data
        whole = digest(data) if job.fingerprint and ends_a_line else None
        summary = summary_of(data, job)
        if summary is not None:
            return _save_summary(db, month_file, stat, Read(len(data), whole, summary))
        scan = _scan_lines(self.workspace, month_file, _lines(data, 0), _nothing_known)
        new_tally = tally(scan.points, decay_days)
        values = (len(data), stat.st_mtime_ns, whole, new_tally, b"".join(sorted(scan.keys)))
        file_id = _save_entry(db, month_file, values)
        return _Entry(file_id, len(data), stat.st_mtime_ns, whole, new_tally)

    def _extend(
        self,
        db: sqlite3.Connection,
        month_file: MonthFile,
        entry: _Entry,
        stat: os.stat_result,
        appended: Appended,
    ) -> _Entry:
        """The entry of a month file that lines were appended to, from those lines alone."""
        lines = _lines(appended.data, 0, appended.first_line)
        scan = _scan_lines(
            self.workspace, month_file, lines, functools.partial(_holds_key, db, entry.id)
        )
        new_tally = merge(entry.tally, tally(scan.points, entry.tally.decay_days))
        keys = _with_keys(_keys_blob(db, entry.id), scan.keys)
        size = entry.size + len(appended.data)
        whole = appended.digest if appended.data.endswith(b"\n") else None
        file_id = _save_entry(db, month_file, (size, stat.st_mtime_ns, whole, new_tally, keys))
        return _Entry(file_id, size, stat.st_mtime_ns, whole, new_tally)


def _job(month_file: MonthFile, decay_days: float, size: int, fingerprint: bool = True) -> Job:
    where = (month_file.path, month_file.provider, month_file.skill)
    return Job(*where, decay_days, size, fingerprint)


def _may_grow(files: list[MonthFile]) -> set[MonthFile]:
    """The files that new ratings are appended to: the newest two months of each skill.

    Only these get a fingerprint when first read (it lets a later read take just the appended
    lines); fingerprinting every old month would cost an eighth of a rebuild. An old month that
    does change (a late rating, a pull) is read whole again.
    """
    newest: dict[tuple[str, str], list[MonthFile]] = {}
    for month_file in files:  # oldest month first
        kept = newest.setdefault((month_file.provider, month_file.skill), [])
        kept[:] = [*kept[-1:], month_file]
    return {month_file for kept in newest.values() for month_file in kept}


def _read_unseen(
    unseen: dict[MonthFile, os.stat_result], decay_days: float, may_grow: set[MonthFile]
) -> Iterator[tuple[MonthFile, Read | None]]:
    by_path = {month_file.path: month_file for month_file in unseen}
    jobs = [
        _job(month_file, decay_days, stat.st_size, month_file in may_grow)
        for month_file, stat in unseen.items()
    ]
    for job, read in read_all(jobs):
        yield by_path[job.path], read


def _save_summary(
    db: sqlite3.Connection, month_file: MonthFile, stat: os.stat_result, read: Read
) -> _Entry:
    assert read.summary is not None
    values = (read.size, stat.st_mtime_ns, read.digest, read.summary.tally, read.summary.keys)
    file_id = _save_entry(db, month_file, values)
    return _Entry(file_id, read.size, stat.st_mtime_ns, read.digest, read.summary.tally)


def _folders(workspace: Workspace, folder: Path) -> Iterator[os.DirEntry[str]]:
    """Sub-folders with valid id names that stay inside the workspace."""
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        if not entry.is_dir() or not is_valid_id(entry.name):
            continue
        if entry.is_symlink() and not is_inside(workspace, Path(entry.path)):
            log.warning("%s: symbolic link leads outside the workspace; ignored", entry.path)
            continue
        yield entry


def _months(workspace: Workspace, provider: str, skill: str, folder: Path) -> list[MonthFile]:
    found = []
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for entry in os.scandir(folder):
            match = _MONTH_FILE.match(entry.name)
            if not entry.name.endswith(".jsonl") or not entry.is_file():
                continue
            if match is None:
                log.warning("%s: not a YYYY-MM.jsonl month file; ignored", entry.path)
            elif entry.is_symlink() and not is_inside(workspace, Path(entry.path)):
                log.warning("%s: symbolic link leads outside the workspace; ignored", entry.path)
            else:
                found.append(MonthFile(provider, skill, match.group(1), Path(entry.path)))
    return found


def _read_rows(workspace: Workspace, month_file: MonthFile, since_iso: str | None) -> RatingRows:
    """The valid ratings of a month file, skipping lines before `since_iso` cheaply (some may
    be left: `RatingRows.select` has the last word)."""
    rows = RatingRows(month_file.provider, month_file.skill)
    for number, line in _lines(read_bytes(month_file.path), 0):
        if since_iso is not None and _clearly_before(line, since_iso):
            continue
        fields = _checked(workspace, month_file, number, line)
        if fields is not None:
            rows.add(fields)
    return rows


def _parse_rows(
    workspace: Workspace, month_file: MonthFile, data: bytes, first_line: int
) -> RatingRows:
    """The valid ratings in some bytes of a month file whose first line has this number."""
    rows = RatingRows(month_file.provider, month_file.skill)
    for number, line in _lines(data, 0, first_line):
        fields = _checked(workspace, month_file, number, line)
        if fields is not None:
            rows.add(fields)
    return rows


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except FileNotFoundError:
        return None


def _lines(data: bytes, start: int, first: int = 1) -> Iterator[tuple[int, str | bytes]]:
    """(line number, line) of the non-blank lines from byte `start` (the data's first line has
    the number `first`); text when it is UTF-8."""
    first += data.count(b"\n", 0, start)
    try:
        lines: Sequence[str | bytes] = data[start:].decode("utf-8").split("\n")
    except UnicodeDecodeError:
        lines = data[start:].split(b"\n")  # the bad lines are named when they are read
    for number, line in enumerate(lines, start=first):
        if line.strip():
            yield number, line


def _clearly_before(line: str | bytes, since_iso: str) -> bool:
    """True when the line's stored timestamp, read without parsing the JSON, is before since."""
    text = line if isinstance(line, str) else line.decode("utf-8", "replace")
    at = text.rfind(_TIMESTAMP_KEY)
    if at < 0:
        return False
    start = at + len(_TIMESTAMP_KEY)
    stamp = text[start : start + 24]
    return stamp < since_iso and text[start + 24 : start + 25] == '"' and is_canonical_time(stamp)


def _checked(
    workspace: Workspace, month_file: MonthFile, number: int, line: str | bytes
) -> dict[str, Any] | None:
    try:
        fields = stored_fields(line)
    except FeedbackdError as exc:
        where = workspace.relative(month_file.path)
        log.warning("%s, line %d: skipped: %s", where, number, exc.message)
        return None
    if fields["provider_agent"] != month_file.provider or fields["skill_id"] != month_file.skill:
        where = workspace.relative(month_file.path)
        log.warning("%s, line %d: skipped: the rating is for another skill", where, number)
        return None
    return fields


def _scan_lines(
    workspace: Workspace,
    month_file: MonthFile,
    lines: Iterable[tuple[int, str | bytes]],
    known: Callable[[bytes], bool],
) -> _Scan:
    """The valid ratings among these numbered lines whose transaction is not `known` already."""
    seen: set[bytes] = set()
    scan = _Scan()
    for number, line in lines:
        fields = _checked(workspace, month_file, number, line)
        if fields is None:
            continue
        key = _key(fields["transaction_id"])
        if key in seen or known(key):
            where = workspace.relative(month_file.path)
            log.warning("%s, line %d: skipped: transaction rated twice", where, number)
            continue
        seen.add(key)
        scan.keys.append(key)
        scan.points.append(_point(fields))
    return scan


def _nothing_known(key: bytes) -> bool:
    return False


def _point(fields: dict[str, Any]) -> Point:
    stamp = fields["timestamp"]  # canonical: `2026-04-08T10:00:00.000Z`
    return Point(
        datetime.fromisoformat(stamp[:-1] + "+00:00").timestamp(),
        stamp,
        fields["rating"],
        fields["result_quality"],
        fields["would_reuse"],
        fields["cost_value_ratio"],
    )


def _open_index(path: Path) -> sqlite3.Connection:
    """Open the index, starting a new one when it is missing, outdated or damaged."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        return _connect(path)
    except sqlite3.DatabaseError as exc:
        if _disk_full(exc, path.parent):  # the index is fine: deleting it would lose it
            raise _no_space(path) from exc
        log.warning("%s: unreadable (%s); rebuilding it from the rating files", path, exc)
        for leftover in (
            path,
            path.with_name(path.name + "-wal"),
            path.with_name(path.name + "-shm"),
        ):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
        return _connect(path)


def _disk_full(exc: sqlite3.DatabaseError, folder: Path) -> bool:
    """True when SQLite failed for want of space: it says so, or it reports an I/O error (a
    failed write of its shared memory or log) while the disk has no free block left."""
    name = getattr(exc, "sqlite_errorname", "")
    if name == "SQLITE_FULL":
        return True
    if not name.startswith("SQLITE_IOERR"):
        return False
    try:
        return os.statvfs(folder).f_bavail == 0
    except OSError:
        return False


def _no_space(path: Path) -> OSError:
    """The error a command reports as a full disk (cli.common), naming the index."""
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION:
            _create_schema(db)
        db.isolation_level = "DEFERRED"
    except BaseException:
        db.close()
        raise
    return db


def _create_schema(db: sqlite3.Connection) -> None:
    drops = "".join(f"DROP TABLE IF EXISTS {table};" for table in ("txs", "files", "meta"))
    db.executescript(
        f"BEGIN IMMEDIATE;{drops}{_SCHEMA}PRAGMA user_version = {SCHEMA_VERSION};COMMIT;"
    )


def _index_decay(db: sqlite3.Connection) -> float:
    row = db.execute("SELECT value FROM meta WHERE key = 'decay_days'").fetchone()
    return float(row[0]) if row else DEFAULT_DECAY_DAYS


def _set_index_decay(db: sqlite3.Connection, decay_days: float) -> None:
    # Written only when it changes: a read that writes nothing commits nothing, and closing the
    # connection then needs no WAL checkpoint (half the time of a warm `reputation`).
    if _index_decay(db) != decay_days:
        db.execute("INSERT OR REPLACE INTO meta VALUES ('decay_days', ?)", (repr(decay_days),))


def _entries(db: sqlite3.Connection, files: list[MonthFile]) -> dict[MonthFile, _Entry]:
    wanted = {(f.provider, f.skill, f.month): f for f in files}
    rows = db.execute("SELECT id, provider, skill, month, size, mtime_ns, digest, tally FROM files")
    entries = {}
    for file_id, provider, skill, month, size, mtime_ns, file_digest, tally_json in rows:
        month_file = wanted.get((provider, skill, month))
        if month_file is not None:
            entry = _Entry(file_id, size, mtime_ns, file_digest, _load_tally(tally_json))
            entries[month_file] = entry
    return entries


def _forget_missing(db: sqlite3.Connection, files: list[MonthFile], scope: Scope) -> None:
    """Drop the index entries of month files in scope that are no longer on disk."""
    present = {(f.provider, f.skill, f.month) for f in files}
    provider, skill = scope
    for file_id, *key in db.execute("SELECT id, provider, skill, month FROM files").fetchall():
        in_scope = provider in (None, key[0]) and skill in (None, key[1])
        if in_scope and tuple(key) not in present:
            db.execute("DELETE FROM files WHERE id = ?", (file_id,))


def _fresh(entry: _Entry, stat: os.stat_result, decay_days: float) -> bool:
    return (
        entry.size == stat.st_size
        and entry.mtime_ns == stat.st_mtime_ns
        and entry.tally.decay_days == decay_days
    )


def _may_have_grown(entry: _Entry, stat: os.stat_result, decay_days: float) -> bool:
    """True when the file may be its indexed content plus new lines (the usual append); its
    bytes say whether it is."""
    return (
        entry.digest is not None
        and entry.tally.decay_days == decay_days
        and stat.st_size > entry.size
    )


def _key(transaction_id: str) -> bytes:
    """The 16 bytes of a (canonical, validated) transaction id."""
    return bytes.fromhex(transaction_id.replace("-", ""))


def _keys_blob(db: sqlite3.Connection, file_id: int) -> bytes:
    (blob,) = db.execute("SELECT keys FROM files WHERE id = ?", (file_id,)).fetchone()
    return bytes(blob)


def _with_keys(blob: bytes, new: list[bytes]) -> bytes:
    """Sorted transaction ids with a few new ones put in their places (no object per id)."""
    parts = []
    done = 0  # bytes of blob already placed
    for key in sorted(new):
        low, high = done // KEY_SIZE, len(blob) // KEY_SIZE
        while low < high:
            middle = (low + high) // 2
            if blob[middle * KEY_SIZE : (middle + 1) * KEY_SIZE] < key:
                low = middle + 1
            else:
                high = middle
        parts += [blob[done : low * KEY_SIZE], key]
        done = low * KEY_SIZE
    parts.append(blob[done:])
    return b"".join(parts)


def _holds_key(db: sqlite3.Connection, file_id: int, key: bytes) -> bool:
    """Binary search of a month file's sorted transaction ids, reading a few bytes per step."""
    with db.blobopen("files", "keys", file_id, readonly=True) as blob:
        low, high = 0, len(blob) // KEY_SIZE
        while low < high:
            middle = (low + high) // 2
            blob.seek(middle * KEY_SIZE)
            probe = blob.read(KEY_SIZE)
            if probe == key:
                return True
            low, high = (middle + 1, high) if probe < key else (low, middle)
    return False


def _save_entry(
    db: sqlite3.Connection,
    month_file: MonthFile,
    values: tuple[int, int, bytes | None, DecaySums, bytes],
) -> int:
    size, mtime_ns, digest, file_tally, keys = values
    row = db.execute(
        "INSERT INTO files (provider, skill, month, size, mtime_ns, digest, tally, keys)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (provider, skill, month) DO UPDATE SET"
        " size = excluded.size, mtime_ns = excluded.mtime_ns, digest = excluded.digest,"
        " tally = excluded.tally, keys = excluded.keys RETURNING id",
        (
            month_file.provider,
            month_file.skill,
            month_file.month,
            size,
            mtime_ns,
            digest,
            json.dumps(dataclasses.asdict(file_tally)),
            keys,
        ),
    ).fetchone()
    return int(row[0])


def _load_tally(text: str) -> DecaySums:
    data = json.loads(text)
    data["quality"] = tuple(data["quality"])
    data["cost_value"] = tuple(data["cost_value"])
    return DecaySums(**data)
