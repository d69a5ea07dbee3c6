"""Files feedbackd cannot read: settle first (a writer may still be busy), then explain beside them.

The bad file itself is never moved, changed or deleted; `{file}.error` says what is wrong and how
to fix it, and disappears once the file reads again.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from feedbackd.core.errors import FeedbackdError, PathProblem
from feedbackd.core.ids import shown_path
from feedbackd.core.workspacepaths import ERROR_SUFFIX
from feedbackd.edges.files import (
    NO_SPACE,
    NO_SPACE_WORDS,
    atomic_write_text,
    open_plain_file,
    read_file_text,
)

log = logging.getLogger("feedbackd")


@dataclass(frozen=True)
class Problem(PathProblem):
    """A file that could not be used, and whether it has been bad long enough to report."""

    settled: bool
    retry_at: float  # wall-clock time when an unsettled file should be looked at again

    def line(self, root: Path | None = None) -> str:
        """`{file}: {what is wrong}`; the file relative to the workspace `root` when given, as
        every message a user reads names it."""
        return f"{shown_path(relative_to(self.path, root))}: {self.message}"


def relative_to(path: Path, root: Path | None) -> str:
    """path relative to root (forward slashes, as git names it), or as it is outside it."""
    if root is None or not path.is_relative_to(root):
        return str(path)
    return path.relative_to(root).as_posix()


# A full disk is looked at again this soon (not after the growing backoff of other failures):
# the work goes on as soon as space is freed.
DISK_FULL_RETRY_S = 2.0


def out_of_space(error: BaseException) -> bool:
    """True when `error` (or what caused it) says the disk or the user's quota is full."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in NO_SPACE:
            return True
        seen = seen.__cause__ or seen.__context__
    text = f"{error} {getattr(error, 'hint', '')}"
    return any(words in text for words in NO_SPACE_WORDS)


def error_path(path: Path) -> Path:
    return path.with_name(path.name + ERROR_SUFFIX)


def error_text(error: FeedbackdError | PathProblem) -> str:
    hint = error.hint or "fix the file; feedbackd retries it automatically"
    text = f"feedbackd: {error.message}\n{hint}\n"
    # A message quoting the file may carry half of a character pair: spell it as an escape.
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def judge(
    path: Path, error: FeedbackdError | PathProblem, settle_ms: int, now: float | None = None
) -> Problem:
    """Write `{file}.error` once the file has stayed bad for settle_ms (by modification time)."""
    now = time.time() if now is None else now
    changed = changed_at(path, now)
    retry_at = changed + settle_ms / 1000
    settled = now >= retry_at
    if settled:
        explain(path, error)
    return Problem(path, error.message, error.hint, settled, retry_at)


def changed_at(path: Path, now: float) -> float:
    """When path last changed: now when it is gone, the link's own time for a link loop."""
    for look in (path.stat, path.lstat):
        try:
            return look().st_mtime
        except FileNotFoundError:
            return now
        except OSError:
            continue  # a loop of symbolic links: only the link itself can be looked at
    return now


def explain(path: Path, error: FeedbackdError | PathProblem) -> None:
    """Write `{file}.error`. When it cannot be written (a file name near the 255-byte limit, a
    read-only folder) the problem is still reported and logged: the pass goes on."""
    target = error_path(path)
    text = error_text(error)
    with contextlib.suppress(OSError, UnicodeDecodeError):
        if read_file_text(target) == text:
            return  # unchanged: do not touch it, so watchers see no new event
    try:
        atomic_write_text(target, text)
    except OSError as exc:
        log.warning("cannot write %s (%s); the problem is: %s", target, exc.strerror, error)


def clear(path: Path) -> None:
    try:
        error_path(path).unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:  # the name is too long to have one, or the folder is read-only
        log.debug("cannot remove %s: %s", error_path(path), exc.strerror)


def clear_orphans(folder: Path) -> None:
    """Remove `.error` files whose file is gone (fixed by deleting or moving it)."""
    if not folder.is_dir():
        return
    clear_listed_orphans(folder, [path.name for path in folder.glob(f"*{ERROR_SUFFIX}")])


def clear_listed_orphans(folder: Path, names: Iterable[str]) -> None:
    """clear_orphans, given the names a listing of `folder` found (a pass lists it anyway)."""
    for name in names:
        if name.endswith(ERROR_SUFFIX) and not (folder / name[: -len(ERROR_SUFFIX)]).exists():
            with contextlib.suppress(FileNotFoundError):
                (folder / name).unlink()


# Where `.error` files can stand: beside items, beside feedback.json, beside inbox ratings.
_REPORT_PATTERNS = ("agents/*/*/*", "agents/*/*", "inbox/ratings/*")


def reported_problems(data_dir: Path, root: Path) -> list[str]:
    """Problems still explained on disk by `.error` files, as `{file}: {what is wrong}` lines
    (the file relative to the workspace root).

    `status` shows these when no daemon runs, so a `run --once` from a timer leaves them visible.
    """
    lines: list[str] = []
    for pattern in _REPORT_PATTERNS:
        for report in sorted(data_dir.glob(pattern + ERROR_SUFFIX)):
            bad = report.with_name(report.name[: -len(ERROR_SUFFIX)])
            if report.is_file() and bad.exists():
                lines.append(f"{shown_path(relative_to(bad, root))}: {_first_line(report)}")
    return lines


def _first_line(report: Path) -> str:
    try:
        with open_plain_file(report) as handle:
            first = handle.readline(4096).decode("utf-8", "replace").rstrip("\n")
    except OSError as error:
        return f"(cannot read {report.name}: {error.strerror})"
    return first.removeprefix("feedbackd: ")
