"""The one lock that serialises writers, and the clean-up of what a killed writer left behind.

The daemon's passes and the CLI's writing commands all hold `write_lock`. Whoever holds it
may clear temporary files, stale git locks and index entries that a crash left lagging, since
no other feedbackd process can be writing at that moment.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.errors import FeedbackdError, GitError, IndexHeld, Locked, WriterBusy
from feedbackd.edges.files import remove_leftovers
from feedbackd.edges.git.locks import clear_index_lock, git_process_in, lock_verdict
from feedbackd.edges.git.repo import GitRepo
from feedbackd.edges.git.userindex import index_left_lagging
from feedbackd.edges.instance import WriteLock

log = logging.getLogger("feedbackd")


@contextmanager
def write_lock(
    runtime: Runtime, *, index_first: bool = False, heal_lagging: bool = True
) -> Iterator[None]:
    """Hold the workspace's write lock; the daemon takes the same one around each pass.

    A writer that died holding it (its pid is still in the lock file) may have been cut off in
    the middle of a commit, and an index update may have failed (a full disk): the git index
    is brought in line first (`heal_lagging` False: the caller does it). With `index_first` (a
    curator's write, which always commits), a git command that holds the index lock is waited
    for too, before anything is written. A write that cannot go ahead (WriterBusy, IndexHeld:
    each lock waited for up to the runtime's wait) has then changed nothing. A daemon pass
    does not wait so: most agents of a pass commit nothing, and need no index."""
    state_dir = runtime.workspace.state_dir
    state_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as held:
        try:
            lock = held.enter_context(WriteLock(state_dir, timeout=runtime.write_wait_s))
        except Locked as error:
            raise WriterBusy(error.message, hint=error.hint) from None
        if lock.abandoned_by is not None:
            _heal_after(runtime, lock)
        elif heal_lagging and index_lags(runtime):
            _heal_lagging(runtime)  # an index update failed (a git killed by a stop, say)
        if index_first:
            _wait_for_index(runtime)
        yield


def _wait_for_index(runtime: Runtime) -> None:
    """Wait for a git command that holds the index lock, or remove the lock a killed git left
    (every commit would wait for it anyway, after the files are written)."""
    git_dir = runtime.workspace.root / ".git"
    if not runtime.git_enabled or not (git_dir / "index.lock").exists():
        return
    try:
        clear_index_lock(
            runtime.workspace.root,
            git_dir,
            stale_after_s=runtime.settings.git.stale_lock_s,
            wait_s=runtime.index_wait_s,
        )
    except GitError as error:
        raise IndexHeld(error.message, hint=error.hint) from None


def clean_leftovers(runtime: Runtime) -> None:
    """Remove temporary files and stale git locks that a killed writer left (lock held)."""
    if runtime.workspace.data.is_dir():
        remove_leftovers(runtime.workspace.data)
    if runtime.git_enabled:
        clear_stale_git_locks(runtime)


def _heal_after(runtime: Runtime, lock: WriteLock) -> None:
    """Finish what a writer that died holding the lock left undone in git; if that fails, the
    next writer tries again."""
    if not runtime.git_enabled:
        return
    try:
        clear_stale_git_locks(runtime)
        heal_git_index(runtime)
    except (FeedbackdError, OSError) as error:
        lock.keep_mark = True
        log.error(
            "writer %s died holding the lock; its git index is not healed: %s",
            lock.abandoned_by,
            error,
        )


def _heal_lagging(runtime: Runtime) -> None:
    try:
        heal_git_index(runtime)
    except (FeedbackdError, OSError) as error:  # the mark stays: the next writer tries again
        log.error("%s and is not healed: %s", INDEX_LAGS, error)


INDEX_LAGS = "the git index lags behind feedbackd's commits"


def index_lags(runtime: Runtime) -> bool:
    """Whether an index update failed (a full disk) and no heal has succeeded since."""
    return runtime.git_enabled and index_left_lagging(runtime.workspace.root / ".git")


def heal_index_left_behind(runtime: Runtime) -> None:
    """Take the write lock and heal the index an update that failed left behind; raises what
    stops the heal (the index then stays marked lagging). The daemon calls this while it has
    nothing else to do, so that an index left behind on a full disk is healed once space is
    freed, not at the next change."""
    with write_lock(runtime, heal_lagging=False):
        if index_lags(runtime):
            heal_git_index(runtime)


def heal_git_index(runtime: Runtime) -> None:
    """Finish the index update of a commit that a crash interrupted (call with the lock held).

    Only after a writer died holding the write lock, or an index update failed (write_lock):
    a commit cut off between moving HEAD and writing the index can only be one of those. A big
    site's start-up then never reads the paths of its last commits (a first import of 100,000
    files among them)."""
    root = runtime.workspace.root
    if not GitRepo.is_repo(root):
        return
    with GitRepo(root, stale_lock_s=runtime.settings.git.stale_lock_s) as repo:
        repo.heal_index()


def clear_stale_git_locks(runtime: Runtime) -> list[Path]:
    """Remove ref and index locks that no live git holds (call with the lock held).

    A `kill -9` of the daemon's process group in the middle of `git update-ref` leaves
    `.git/HEAD.lock` or `refs/heads/*.lock` behind, and every later commit then fails; they are
    judged like `.git/index.lock`: a young lock or one a running git may hold is left alone.
    """
    root = runtime.workspace.root
    git_dir = root / ".git"
    if not git_dir.is_dir():
        return []
    removed = []
    for lock in _git_locks(git_dir):
        try:
            age = time.time() - lock.stat().st_mtime
        except FileNotFoundError:
            continue
        live = git_process_in([root, git_dir])
        if lock_verdict(live, age, runtime.settings.git.stale_lock_s) == "remove":
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()
                removed.append(lock)
                log.warning("removed a stale %s left by an interrupted git command", lock)
    return removed


def _git_locks(git_dir: Path) -> list[Path]:
    top = [git_dir / name for name in ("HEAD.lock", "index.lock", "packed-refs.lock")]
    refs = sorted((git_dir / "refs").rglob("*.lock")) if (git_dir / "refs").is_dir() else []
    return [lock for lock in top if lock.exists()] + refs
