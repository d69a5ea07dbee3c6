"""The workspace's git repository, opened for one pass (None when git.enabled is false)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.errors import WorkspaceError
from feedbackd.edges.git.repo import GitRepo


@contextmanager
def open_repo(runtime: Runtime) -> Iterator[GitRepo | None]:
    if not runtime.git_enabled:
        yield None
        return
    root = runtime.workspace.root
    if not _holds_its_repository(root):
        raise WorkspaceError(
            f"{root} is not a git repository",
            hint="run `feedbackd init` there, or set git.enabled: false",
        )
    with GitRepo(
        root,
        stale_lock_s=runtime.settings.git.stale_lock_s,
        lock_wait_s=runtime.index_wait_s,
        committer=runtime.committer,
        kept=runtime.git_helpers,
    ) as repo:
        yield repo


@contextmanager
def open_repo_for_writing(runtime: Runtime) -> Iterator[GitRepo | None]:
    """open_repo for a pass that writes: refused before any file is written while the user is
    in the middle of a rebase or merge (its --abort would throw away what the pass did)."""
    with open_repo(runtime) as repo:
        if repo is not None:
            repo.refuse_during_operation()
        yield repo


def _holds_its_repository(root: Path) -> bool:
    """True when root is the top of its own git work tree. A `.git` there says so without
    starting git (the daemon opens the repository for each agent of a pass; one that is
    damaged is refused when opened); without one, git is asked."""
    return (root / ".git").exists() or GitRepo.is_repo(root)
