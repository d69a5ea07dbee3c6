"""Remote sync plumbing: fetch and push one branch, replay local commits onto the remote's in a
temporary worktree, and bring the user's files along only where a pull changed them.

Local commits are rebased in a temporary worktree under `.git/feedbackd-sync/`, never in the
user's own working tree, and the user's files and index follow only for the paths the pull
changed (a two-tree `read-tree -m -u`, git's own fast-forward). Network commands have a deadline.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from feedbackd.core.errors import GitError
from feedbackd.core.people import Person
from feedbackd.edges.git.runner import (
    GitRunner,
    IndexLockBusy,
    branch_name,
    config_args,
    first_line,
    identity_env,
    remote_name,
    revision,
)

log = logging.getLogger("feedbackd")

SYNC_DIR = "feedbackd-sync"  # under .git/: temporary worktrees and the sync attributes
# What a pull may do to a user's repository, and what it must never do: no hooks, no signing
# prompt, no editor, no other branches moved, no remembered resolutions applied unseen.
_QUIET_REBASE = {
    "core.hooksPath": os.devnull,
    "commit.gpgSign": "false",
    "core.editor": "true",
    "rebase.autoSquash": "false",
    "rebase.autoStash": "false",
    "rebase.updateRefs": "false",
    "rerere.enabled": "false",
    "advice.detachedHead": "false",
}
_MISSING_REMOTE_BRANCH = "couldn't find remote ref"


class RemoteUnreachable(GitError):
    """The remote did not answer (offline, moved, refused the login): try again later."""


@dataclass(frozen=True)
class RebaseOutcome:
    """Local commits replayed onto the remote's: the new tip, or the paths that conflicted."""

    commit: str | None
    conflicts: tuple[str, ...] = ()
    detail: str = ""


class GitRemote:
    """Sync with a remote, for a repository open in `git` (see GitRepo.remote)."""

    def __init__(
        self, git: GitRunner, committer: Person, clear_index_lock: Callable[[], None]
    ) -> None:
        self._git = git
        self._committer = committer
        self._clear_index_lock = clear_index_lock

    def fetch_branch(self, remote: str, branch: str, *, timeout: float) -> str | None:
        """Fetch `branch` from `remote`: its commit there, or None when the remote lacks it.

        A named remote's tracking ref follows too, so `git status` tells the user the truth.
        """
        private = f"refs/feedbackd/remote/{branch_name(branch)}"
        specs = [f"+refs/heads/{branch}:{private}"]
        if self._git.config(f"remote.{remote_name(remote)}.url"):
            specs.append(f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}")
        args = ["fetch", "--quiet", "--no-tags", "--no-recurse-submodules", remote, *specs]
        status, _, err = self._git.exec(args, timeout=timeout)
        if status == 0:
            return self._git.rev(private)
        if _MISSING_REMOTE_BRANCH in err:
            return None
        raise RemoteUnreachable(
            f"could not fetch {branch} from {remote}: {first_line(err) or f'exit {status}'}",
            hint="check the network and git.remote; feedbackd tries again with backoff",
        )

    def push_branch(self, remote: str, commit: str, branch: str, *, timeout: float) -> bool:
        """Push `commit` as the remote's `branch`; False when the remote refused (not a
        fast-forward: someone pushed first, or a rule there); RemoteUnreachable when offline."""
        target = f"refs/heads/{branch_name(branch)}"
        args = ["push", "--porcelain", remote_name(remote), f"{revision(commit)}:{target}"]
        status, out, err = self._git.exec(args, timeout=timeout)
        if status == 0:
            self._git.run(["update-ref", f"refs/feedbackd/remote/{branch}", commit])
            return True
        if any(line.startswith("!") for line in out.decode(errors="replace").splitlines()):
            return False
        raise RemoteUnreachable(
            f"could not push {branch} to {remote}: {first_line(err) or f'exit {status}'}",
            hint="check the network and git.remote; feedbackd tries again with backoff",
        )

    def rebase_onto(
        self, upstream: str, local: str, config: Mapping[str, str] | None = None
    ) -> RebaseOutcome:
        """Replay the commits of `local` that `upstream` lacks onto it, in a temporary worktree.

        The user's working tree, index and branches are not touched; `config` adds settings for
        this rebase only (the merge driver, attributes).
        """
        settings = {**_QUIET_REBASE, **(config or {})}
        with self._temporary_worktree(local) as (folder, env):
            args = [*config_args(settings), "rebase", "--quiet", revision(upstream)]
            status, out, err = self._git.exec(args, env=env, cwd=folder)
            if status == 0:
                tip = self._git.run(["rev-parse", "HEAD"], env=env, cwd=folder).decode().strip()
                return RebaseOutcome(tip)
            listed = self._git.exec(
                ["diff", "--name-only", "-z", "--diff-filter=U"], env=env, cwd=folder
            )
            names = listed[1].decode("utf-8", "surrogateescape").split("\0")
            detail = first_line(err) or first_line(out.decode(errors="replace"))
            return RebaseOutcome(None, tuple(sorted(n for n in names if n)), detail)

    def fast_forward_files(self, old: str | None, new: str | None) -> None:
        """Bring the user's index and files from `old` to `new`, only where those two differ.

        Every other change of the user's stays: git refuses, changing nothing, when one of
        their modified, staged or untracked files would be overwritten.
        """
        empty = self._git.tree_of(None)
        args = ["read-tree", "-m", "-u", revision(old or empty), revision(new or empty)]
        self._clear_index_lock()
        try:
            self._refresh_index()
            self._git.run(args)
        except IndexLockBusy:
            self._clear_index_lock()
            self._refresh_index()
            self._git.run(args)

    def _refresh_index(self) -> None:
        # Commits update index entries without their file stat data (cheaper); read-tree -m
        # would take such entries for modified files, so their stat data is refreshed first.
        # This changes no content of the user's index.
        self._git.exec(["update-index", "-q", "--refresh"])

    def move_branch(self, branch: str, new: str, old: str | None) -> bool:
        """Point `branch` at `new` if it still is `old`; False when something moved it meanwhile."""
        expected = old or "0" * len(new)
        ref = f"refs/heads/{branch_name(branch)}"
        args = ["update-ref", "-m", "feedbackd: sync", ref, revision(new), expected]
        status, _, _ = self._git.exec(args)
        return status == 0

    def remove_sync_leftovers(self) -> list[Path]:
        """Remove temporary worktrees that a killed sync left behind (never mid-rebase again)."""
        folder = self._git.git_dir / SYNC_DIR
        leftovers = sorted(folder.glob("wt-*")) if folder.is_dir() else []
        for leftover in leftovers:
            log.warning("removing a temporary sync worktree left behind: %s", leftover)
            self._remove_worktree(leftover)
        return leftovers

    def sync_file(self, name: str) -> Path:
        """A file feedbackd keeps for sync under `.git/feedbackd-sync/` (never committed)."""
        folder = self._git.git_dir / SYNC_DIR
        folder.mkdir(exist_ok=True)
        return folder / name

    @contextmanager
    def _temporary_worktree(self, commit: str) -> Iterator[tuple[Path, dict[str, str]]]:
        folder = self._git.git_dir / SYNC_DIR / f"wt-{os.getpid()}-{secrets.token_hex(4)}"
        folder.parent.mkdir(exist_ok=True)
        admin = self._git.git_dir / "worktrees" / folder.name
        env = {
            "GIT_DIR": str(admin),
            "GIT_WORK_TREE": str(folder),
            # `worktree add` hands its environment to the checkout it runs: this index must be
            # the new worktree's own, never the user's.
            "GIT_INDEX_FILE": str(admin / "index"),
            "GIT_EDITOR": "true",
            **identity_env("COMMITTER", self._committer),
        }
        try:
            add = ["worktree", "add", "--detach", "--quiet", str(folder), revision(commit)]
            self._git.run(
                [*config_args(_QUIET_REBASE), *add], env={"GIT_INDEX_FILE": env["GIT_INDEX_FILE"]}
            )
            yield folder, env
        finally:
            self._remove_worktree(folder)

    def _remove_worktree(self, folder: Path) -> None:
        self._git.exec(["worktree", "remove", "--force", "--force", str(folder)])
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
        self._git.exec(["worktree", "prune"])
