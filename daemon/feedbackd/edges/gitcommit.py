"""Committing exactly the paths of one change, without touching what the user has staged.

The change is built in a temporary index seeded from HEAD (or from the index our last commit was
written from), committed with `commit-tree`, HEAD is moved with a compare-and-swap `update-ref`,
and only then are the user's index entries for exactly those paths brought in line with the new
commit. heal_index finishes that last step when a crash interrupted it. Nothing is committed while
the user is in the middle of a rebase or merge.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from feedbackd.core.commitmsg import Person
from feedbackd.core.errors import GitError
from feedbackd.edges.gitrunner import (
    GitRunner,
    IndexLockBusy,
    first_line,
    hint_for,
    identity_env,
    rel_path,
)

log = logging.getLogger("feedbackd")

_COMMIT_ATTEMPTS = 3
# The temporary index of the last commit, named after that commit; it seeds the next one.
_KEPT_INDEX = "feedbackd-index."
_OPERATIONS = {
    "rebase-merge": "rebase",
    "rebase-apply": "rebase",
    "MERGE_HEAD": "merge",
    "CHERRY_PICK_HEAD": "cherry-pick",
    "REVERT_HEAD": "revert",
}


def operation_in_progress(git_dir: Path) -> str | None:
    """`rebase`, `merge`, `cherry-pick` or `revert` while the user is in the middle of one."""
    for marker, name in _OPERATIONS.items():
        if (git_dir / marker).exists():
            return name
    return None


def refuse_during_operation(git_dir: Path) -> None:
    """Raise GitError while the user is in the middle of a rebase, merge, ...

    A commit made then lands on the HEAD of that operation: `git rebase --abort` throws it
    away, and with it the files it held (a draft vanished from queue/). So feedbackd writes
    and commits nothing until the operation is finished; what waits is done afterwards.
    """
    operation = operation_in_progress(git_dir)
    if operation is not None:
        raise GitError(
            f"a git {operation} is in progress in the workspace; feedbackd records nothing"
            " until it is finished",
            hint=f"finish it with `git {operation} --continue`, or undo it with"
            f" `git {operation} --abort`; what waited is recorded then",
        )


class CommitWriter:
    """Commits of exactly the given paths, in a repository open in `git` (see GitRepo)."""

    def __init__(
        self,
        git: GitRunner,
        root: Path,
        committer: Person,
        clear_index_lock: Callable[[], None],
    ) -> None:
        self._git = git
        self._root = root
        self._committer = committer
        self._clear_index_lock = clear_index_lock

    def commit(self, paths: Sequence[str], message: str, author: Person) -> str | None:
        """Commit exactly `paths` (added, modified or deleted) as one commit; return its sha.

        Returns None when none of them differ from HEAD. The user's other staged and unstaged
        changes stay as they were; the user's index entries for `paths` follow the new commit.
        """
        rels = list(dict.fromkeys(rel_path(path) for path in paths))
        if not rels:
            return None
        refuse_during_operation(self._git.git_dir)
        self._clear_index_lock()
        for attempt in range(1, _COMMIT_ATTEMPTS + 1):
            head, head_tree = self._head_and_tree()
            with self._temporary_index() as env:
                new = self._write_commit(head, head_tree, rels, message, author, env)
                if new is None:
                    self._keep_index(env, head)  # it still holds exactly HEAD's tree
                    return None
                if self._move_head(new, head, message, attempt):
                    self._keep_index(env, new)
                    self.update_user_index(new, rels)
                    return new
        raise AssertionError("unreachable: _move_head raises on the last attempt")

    def _head_and_tree(self) -> tuple[str | None, str]:
        """HEAD and its tree in one git command; None and the empty tree before a first commit."""
        status, out, _ = self._git.exec(["rev-parse", "HEAD", "HEAD^{tree}", "--"])
        lines = out.decode().split()
        if status != 0 or len(lines) < 2:
            return None, self._git.tree_of(None)
        return lines[0], lines[1]

    def _write_commit(
        self,
        head: str | None,
        head_tree: str,
        rels: list[str],
        message: str,
        author: Person,
        env: Mapping[str, str],
    ) -> str | None:
        """The new commit (not yet on any branch), built in the temporary index `env` names."""
        self._seed_index(head, env)
        present = self._present(rels, env)
        if not present:
            return None
        self._git.run(["add", "-A", "--", *present], env=env)
        tree = self._git.run(["write-tree"], env=env).decode().strip()
        if tree == head_tree:
            return None
        parents = ["-p", head] if head else []
        people = {**identity_env("AUTHOR", author), **identity_env("COMMITTER", self._committer)}
        args = ["commit-tree", "--no-gpg-sign", tree, *parents]
        return self._git.run(args, env=people, stdin=message.encode()).decode().strip()

    def _seed_index(self, head: str | None, env: Mapping[str, str]) -> None:
        """Start the temporary index as HEAD's tree: the index our last commit was written from
        when HEAD is still that commit (taken with a rename, so two writers never share it),
        else HEAD read afresh. It keeps git's stat data, so unchanged files are not re-read.
        """
        if head is None:
            return
        try:
            os.replace(self._git.git_dir / f"{_KEPT_INDEX}{head}", env["GIT_INDEX_FILE"])
        except FileNotFoundError:
            self._git.run(["read-tree", head], env=env)

    def _keep_index(self, env: Mapping[str, str], commit: str | None) -> None:
        """Keep the temporary index, which holds exactly `commit`'s tree, for the next commit."""
        if commit is None:
            return
        kept = self._git.git_dir / f"{_KEPT_INDEX}{commit}"
        try:
            os.replace(env["GIT_INDEX_FILE"], kept)
        except FileNotFoundError:
            return
        for older in self._git.git_dir.glob(f"{_KEPT_INDEX}*"):
            if older != kept:
                older.unlink(missing_ok=True)

    def _present(self, rels: list[str], env: Mapping[str, str]) -> list[str]:
        """The paths that exist on disk or are tracked; git refuses any others."""
        missing = [rel for rel in rels if not os.path.lexists(self._root / rel)]
        if not missing:
            return rels
        listed = self._git.run(["ls-files", "-z", "--", *missing], env=env)
        names = listed.decode("utf-8", errors="surrogateescape").split("\0")
        tracked = {rel for rel in missing if any(_within(name, rel) for name in names if name)}
        return [rel for rel in rels if rel not in missing or rel in tracked]

    def _move_head(self, new: str, old: str | None, message: str, attempt: int) -> bool:
        """Point HEAD at `new` if it still is `old`; False (retry) when someone moved it."""
        expected = old or "0" * len(new)  # all zeros: HEAD's branch must not exist yet
        subject = message.strip().split("\n", 1)[0]
        args = ["update-ref", "-m", f"feedbackd: {subject}", "HEAD", new, expected]
        status, _, err = self._git.exec(args)
        if status == 0:
            return True
        if attempt == _COMMIT_ATTEMPTS:
            raise GitError(
                f"could not move HEAD to the new commit: {first_line(err)}",
                hint=(
                    hint_for(err)
                    if ".lock" in err
                    else "another program keeps committing here; try again, or stop it for a moment"
                ),
            )
        log.info("HEAD moved while committing (%s); trying again", first_line(err))
        return False

    def update_user_index(self, new: str, rels: list[str]) -> None:
        """Make the user's index entries for `rels` match the new commit, and nothing else."""
        # reset refreshes the stat data afterwards: without it these entries look modified to
        # commands that need a clean index (the read-tree -m -u of a sync after a pull).
        args = ["reset", "-q", new, "--", *rels]
        try:
            try:
                self._git.run(args)
            except IndexLockBusy:
                self._clear_index_lock()
                self._git.run(args)
        except GitError as error:
            # The commit exists; only the index view of these paths lags behind it.
            log.warning(
                "committed %s, but could not update the git index for %s (%s); run: git reset -q"
                " HEAD -- %s",
                new[:12],
                ", ".join(rels),
                error,
                " ".join(rels),
            )

    def heal_index(self, depth: int = 20) -> list[str]:
        """Bring index entries that lag behind recent commits back in line; the paths fixed.

        A crash between moving HEAD and `update_user_index` leaves the index showing that commit's
        changes undone (a later `git commit` by the user would revert them). Only paths of the
        last `depth` commits whose work-tree file matches HEAD are touched: a user's own staged
        change differs from HEAD in the work tree too, and stays as it is.
        """
        head = self._git.rev("HEAD")
        if head is None:
            return []
        recent = ["log", f"-n{int(depth)}", "--format=", "--name-only", "-z", "--no-renames", head]
        names = self._git.run(recent).decode("utf-8", "surrogateescape").split("\0")
        touched = sorted({name.strip("\n") for name in names} - {""})
        if not touched:
            return []
        args = ["diff", "--cached", "--name-only", "-z", "--no-renames", head, "--", *touched]
        lagging = self._git.run(args).decode("utf-8", "surrogateescape").split("\0")
        stale = [
            rel for rel in lagging if rel and self._git.blob_id(head, rel) == self._disk_id(rel)
        ]
        if stale:
            # The same crash may have left index.lock, still young at a quick restart: wait
            # until it is judged stale (or its live owner is done) instead of failing the heal.
            self._clear_index_lock()
            self._git.run(["reset", "-q", head, "--", *stale])
            log.warning(
                "the git index lagged behind recent commits for %s; fixed", ", ".join(stale)
            )
        return stale

    def _disk_id(self, rel: str) -> str | None:
        if not (self._root / rel).is_file():
            return None
        return self._git.run(["hash-object", "--", str(self._root / rel)]).decode().strip()

    @contextmanager
    def _temporary_index(self) -> Iterator[dict[str, str]]:
        index = self._git.git_dir / f"feedbackd-index-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            yield {"GIT_INDEX_FILE": str(index)}
        finally:
            for leftover in (index, index.with_name(index.name + ".lock")):
                leftover.unlink(missing_ok=True)


def _within(name: str, rel: str) -> bool:
    return name == rel or name.startswith(rel.rstrip("/") + "/")
