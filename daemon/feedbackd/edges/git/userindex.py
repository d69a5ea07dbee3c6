"""The user's index following feedbackd's commits: the entries of exactly the committed paths,
and nothing else the user staged.

While feedbackd holds `.git/index.lock`, git cannot write the index itself: it writes a new one
from a second name of it, which then takes the index's place, as git's own lock protocol does.
A commit's update starts with the commit (its files are written by then) and runs while its
blobs, its trees, its commit object and the move of HEAD are made (`begin`); its index takes the
user's index's place once HEAD names the commit (`finish`). So the index lags HEAD only for what
is left of the update then, less than when the update starts after the move. That update stores
no blob (the commit does, in its pack): a file that changed while it ran gets its entry from the
commit before the index takes the user's index's place, so no entry names a missing blob.

heal_lagging_index finishes the update a crash interrupted, or one that failed (a full disk):
the mark that a failed update leaves stays until a heal succeeds, and the heal then looks at
every commit made since the mark was made.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from feedbackd.core.errors import GitError
from feedbackd.edges.files import FileState
from feedbackd.edges.git.batch import COMMIT_FILE_PREFIX, GitBatch
from feedbackd.edges.git.runner import GitRunner, IndexLockBusy, StartedGit

log = logging.getLogger("feedbackd")

_PATHS_PER_COMMAND = 1000  # well within the kernel's limit on a command line
_COPY_PREFIX = "feedbackd-index"
LAGGING_MARK = "feedbackd-lagging-index"
# The mark's time is when the index first fell behind; a commit made up to this much earlier is
# looked at too (its date is git's, in whole seconds).
_MARK_SLACK_S = 60
# path → its state when its blob was stored (None: not on disk); None for a change that named a
# folder, whose entries take the general way (`reset`)
Stored = Mapping[str, FileState | None] | None


class IndexCopy:
    """An index command started on a second name of the index (this process holds the lock);
    `finish` waits for it and puts the index it wrote in the index's place."""

    def __init__(self, git: GitRunner, args: Sequence[str]) -> None:
        self._git = git
        self._copy = git.git_dir / f"{_COPY_PREFIX}-{os.getpid()}"
        self._index = git.git_dir / "index"
        self._copy.unlink(missing_ok=True)
        try:
            if self._index.exists():
                # A second name, not a copy: git writes its new index to a new file, which
                # then takes this name's place, so the index itself is never written into.
                try:
                    os.link(self._index, self._copy)
                except OSError:  # a file system without hard links; its time kept for git
                    shutil.copy2(self._index, self._copy)
            env = {"GIT_INDEX_FILE": str(self._copy)}
            self._started: StartedGit | None = git.start(args, env=env)
        except BaseException:
            self._copy.unlink(missing_ok=True)
            raise

    def finish(self, then: Callable[[], Sequence[Sequence[str]]] = list) -> None:
        """Wait for the command, run the commands `then` gives on the same index, and put that
        index in the index's place. GitError (git's complaint) when a command failed: the index
        is then unchanged."""
        started, self._started = self._started, None
        if started is None:
            return
        try:
            started.output()
            for args in then():
                self._git.run(args, env={"GIT_INDEX_FILE": str(self._copy)})
            os.replace(self._copy, self._index)
        finally:
            self._copy.unlink(missing_ok=True)

    def abandon(self) -> None:
        """Wait for the command, and leave the index as it is."""
        started, self._started = self._started, None
        try:
            if started is not None:
                with contextlib.suppress(GitError):
                    started.output()
        finally:
            self._copy.unlink(missing_ok=True)


def run_on_index_copy(git: GitRunner, args: Sequence[str]) -> None:
    """Run an index command while this process holds `.git/index.lock`, and wait for it."""
    IndexCopy(git, args).finish()


class IndexUpdate:
    """The update of the entries of one commit's files, begun before the commit is made (see
    UserIndex.begin): finished once HEAD names the commit, abandoned if it is not made."""

    def __init__(
        self,
        index: UserIndex,
        copy: IndexCopy | None,
        rels: list[str],
        before: Mapping[str, FileState | None],
    ) -> None:
        self._index, self._copy, self._rels = index, copy, rels
        self._before = before  # each file as it was when update-index started

    def finish(self, new: str, stored: Stored) -> None:
        """Put the updated index in place, then set from commit `new` the entries of the
        files changed since they were stored (`stored`: their states then; None when the
        change named a folder, whose entries all take that way); a failure is logged."""
        if self._copy is None or stored is None:
            self.abandon()
            self._index.follow(new, self._rels, stored, locked=True)
            return
        try:
            self._copy.finish(then=lambda: self._set_from_commit(new, stored))
        except (GitError, OSError) as error:
            _lagging(self._index.git.git_dir, self._rels, error)

    def _set_from_commit(self, new: str, stored: Mapping[str, FileState | None]) -> list[list[str]]:
        """update-index read each file at some moment of its own and stored no blob of it (the
        commit did): a file whose state changed from the start of the update to now may have
        been read as no commit holds it, so its entry is dropped (reset would read its blob)
        and set from the commit, before the index takes the user's index's place."""
        work_tree = self._index.git.work_tree
        changed = _changed_since(work_tree, self._rels, stored, self._before)
        if not changed:
            return []
        return [
            ["update-index", "--force-remove", "--", *changed],
            ["reset", "-q", new, "--", *changed],
        ]

    def abandon(self) -> None:
        if self._copy is not None:
            self._copy.abandon()


class UserIndex:
    """The index entries of committed paths, brought in line with the commit that holds them."""

    def __init__(self, git: GitRunner, clear_index_lock: Callable[[], None]) -> None:
        self._git = git
        self._clear_index_lock = clear_index_lock

    def follow(self, new: str, rels: list[str], stored: Stored, *, locked: bool) -> None:
        """Make the entries for `rels` match commit `new` now (`locked`: this process holds
        the index lock).

        When the change named only files, `update-index` takes them from the work tree, which
        holds what was committed unless a file changed since it was stored: those few (and any
        change that named a folder) go through `reset`, which reads the whole index afresh.
        """
        if stored is not None:
            self._command(["update-index", "--add", "--remove", "--", *rels], rels, locked)
            self._reset_changed(new, rels, stored, locked)
        else:
            self._reset(new, rels, locked)

    def begin(self, rels: list[str]) -> IndexUpdate:
        """Start the update of the entries of `rels`, files written and about to be committed
        holding the index lock: `update-index` reads them while the commit is made, and its
        index takes the place of the user's only once HEAD names the commit
        (IndexUpdate.finish). The index then lags HEAD for what is left of the update, if any.
        A folder among `rels` takes the general way, after the commit."""
        copy = None
        found = {rel: _lstat(self._git.work_tree / rel) for rel in rels}
        before = {rel: FileState.of(info) if info else None for rel, info in found.items()}
        if not any(info and stat.S_ISDIR(info.st_mode) for info in found.values()):
            # --info-only: the commit stores the blobs (in one pack); update-index only works
            # out their ids and takes the files' states, instead of storing each a second time
            args = ["update-index", "--add", "--remove", "--info-only", "--", *rels]
            with contextlib.suppress(GitError, OSError):  # finish tries again, and says why
                copy = IndexCopy(self._git, args)
        return IndexUpdate(self, copy, rels, before)

    @property
    def git(self) -> GitRunner:
        return self._git

    def _reset_changed(
        self, new: str, rels: list[str], stored: Mapping[str, FileState | None], locked: bool
    ) -> None:
        """Entries of files that changed since they were stored (update-index may have read
        them as they are now) set from commit `new`."""
        changed = _changed_since(self._git.work_tree, rels, stored)
        if changed:
            self._reset(new, changed, locked)

    def _reset(self, new: str, rels: list[str], locked: bool) -> None:
        # reset refreshes the stat data afterwards: without it these entries look modified to
        # commands that need a clean index (the read-tree -m -u of a sync after a pull).
        self._command(["reset", "-q", new, "--", *rels], rels, locked)

    def _command(self, args: list[str], rels: list[str], locked: bool) -> None:
        """Run a git command that writes the index; a failure is logged, not raised."""
        try:
            if locked:
                run_on_index_copy(self._git, args)
            else:
                try:
                    self._clear_index_lock()
                    self._git.run(args)
                except IndexLockBusy:
                    self._clear_index_lock()
                    self._git.run(args)
        except (GitError, OSError) as error:
            _lagging(self._git.git_dir, rels, error)


def _lagging(git_dir: Path, rels: list[str], error: Exception) -> None:
    # The commit exists; only the index view of these paths lags behind it. The mark has the
    # next writer heal the index (app/commits/locking.py), as after a writer that died.
    log.warning(
        "committed, but could not update the git index for %s (%s); run: git reset -q HEAD -- %s",
        ", ".join(rels),
        error,
        " ".join(rels),
    )
    with contextlib.suppress(OSError):  # FileExistsError: an earlier failure's time stands
        # Made, never written or touched: an empty file needs no room on a full disk, and its
        # time says since when the index lags (heal_lagging_index looks at the commits since).
        os.close(os.open(git_dir / LAGGING_MARK, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))


def index_left_lagging(git_dir: Path) -> bool:
    """Whether an index update failed since the index was last healed (heal_lagging_index)."""
    return (git_dir / LAGGING_MARK).exists()


def _lagging_since(git_dir: Path) -> float | None:
    """When the index first fell behind (the mark's time), or None when it is not marked."""
    try:
        return (git_dir / LAGGING_MARK).stat().st_mtime
    except OSError:
        return None


def _left_by_the_dead(path: Path) -> bool:
    """A hand-over file (`feedbackd-index-PID`, `feedbackd-commit-PID-...`) whose process is
    gone: another live process's is in use."""
    found = re.search(r"-(\d+)", path.name)
    if found is None:
        return True
    try:
        os.kill(int(found.group(1)), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):
        return False
    return int(found.group(1)) == os.getpid()  # this process's own: none is running now


def _changed_since(
    work_tree: Path,
    rels: Sequence[str],
    stored: Mapping[str, FileState | None],
    before: Mapping[str, FileState | None] | None = None,
) -> list[str]:
    """The files of `rels` whose state now, or `before` (an update's start), is not the one
    their commit stored."""
    return [
        rel
        for rel in rels
        if _state(work_tree / rel) != stored.get(rel)
        or (before is not None and before.get(rel) != stored.get(rel))
    ]


def _state(path: Path) -> FileState | None:
    info = _lstat(path)
    return FileState.of(info) if info else None


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return path.lstat()
    except OSError:  # gone, or not to be looked at: its entry is set from the commit
        return None


def heal_lagging_index(
    git: GitRunner, batch: GitBatch, clear_index_lock: Callable[[], None], depth: int
) -> list[str]:
    """Bring index entries that lag behind recent commits back in line; the paths fixed.

    A crash between moving HEAD and the index update leaves the index showing that commit's
    changes undone (a later `git commit` by the user would revert them); so does an update that
    failed (a full disk). The mark of a failed update goes only once the heal has succeeded:
    one that fails (the disk still full) is tried again by the next writer.
    """
    for pattern in (f"{_COPY_PREFIX}-*", f"{COMMIT_FILE_PREFIX}*"):  # left by a crash
        for leftover in git.git_dir.glob(pattern):
            if _left_by_the_dead(leftover):
                leftover.unlink(missing_ok=True)
    head = git.rev("HEAD")
    stale = lagging_paths(git, batch, depth, head)
    if stale and head is not None:
        # The same crash may have left index.lock, still young at a quick restart: wait
        # until it is judged stale (or its live owner is done) instead of failing the heal.
        clear_index_lock()
        for start in range(0, len(stale), _PATHS_PER_COMMAND):
            git.run(["reset", "-q", head, "--", *stale[start : start + _PATHS_PER_COMMAND]])
        shown = ", ".join(stale[:5]) + (f" and {len(stale) - 5} more" if len(stale) > 5 else "")
        log.warning("the git index lagged behind recent commits for %s; fixed", shown)
    (git.git_dir / LAGGING_MARK).unlink(missing_ok=True)  # what it marked is healed
    return stale


def lagging_paths(git: GitRunner, batch: GitBatch, depth: int, head: str | None) -> list[str]:
    """The paths whose index entries lag behind commit `head`: staged as different from it,
    changed by its last `depth` commits (or by any made since the index was marked lagging),
    and with a work-tree file that matches it. A user's own staged change differs from HEAD in
    the work tree too, and is not one of them. Changes nothing."""
    if head is None:
        return []
    touched = _touched(git, [f"-n{int(depth)}"], head)
    since = _lagging_since(git.git_dir)
    if since is not None:  # a failed update: every commit made since, however many
        touched |= _touched(git, [f"--since={int(since) - _MARK_SLACK_S}"], head)
    touched.discard("")
    if not touched:
        return []
    # Every staged difference, then only those of the recent commits: paths on git's command
    # line would overflow it after a first import of a hundred thousand files.
    args = ["diff", "--cached", "--name-only", "-z", "--no-renames", head]
    staged = git.run(args).decode("utf-8", "surrogateescape").split("\0")
    lagging = sorted(set(staged) & touched)
    return [rel for rel in lagging if _head_id(batch, head, rel) == _disk_id(git, rel)]


def _touched(git: GitRunner, which: list[str], head: str) -> set[str]:
    """The paths changed by the commits `which` chooses (a `git log` option) down from head."""
    args = ["log", *which, "--format=", "--name-only", "-z", "--no-renames", head]
    names = git.run(args).decode("utf-8", "surrogateescape").split("\0")
    return {name.strip("\n") for name in names}


def _head_id(batch: GitBatch, head: str, rel: str) -> str | None:
    found = batch.read(f"{head}:{rel}") if "\n" not in rel else None
    return found.sha if found is not None and found.kind == "blob" else None


def _disk_id(git: GitRunner, rel: str) -> str | None:
    if not (git.work_tree / rel).is_file():
        return None
    return git.run(["hash-object", "--", str(git.work_tree / rel)]).decode().strip()
