"""Committing exactly the paths of one change, without touching what the user has staged.

The change is built without any index: the changed files are stored as blobs and only the trees
on their way are written anew (edges/gittree.py), through long-lived git helpers
(edges/gitbatch.py). The commit is made with `commit-tree`, HEAD is moved with a
compare-and-swap `update-ref`, and only then are the user's index entries for exactly those
paths brought in line with the new commit. heal_index finishes that last step when a crash
interrupted it. Nothing is committed while the user is in the middle of a rebase or merge.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from feedbackd.core.commitmsg import Person
from feedbackd.core.errors import GitError
from feedbackd.edges.gitbatch import COMMIT_FILE_PREFIX, GitBatch
from feedbackd.edges.gitrunner import (
    GitRunner,
    IndexLockBusy,
    first_line,
    hint_for,
    identity_env,
    rel_path,
)
from feedbackd.edges.gittree import TREE_MODE, Entry, TreeEditor, commit_object, split_path

log = logging.getLogger("feedbackd")

_COMMIT_ATTEMPTS = 3
_DATES = frozenset({"GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"})
_PATHS_PER_COMMAND = 1000  # well within the kernel's limit on a command line
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


@dataclass
class WorkTreeChange:
    """What the work tree holds at the paths of one change, as new tree entries."""

    entries: dict[tuple[bytes, ...], Entry | None] = field(default_factory=dict)
    # path → (inode, size, modification time) when its blob was stored; None: not on disk
    seen: dict[str, tuple[int, int, int] | None] = field(default_factory=dict)
    # False when a folder was named: the index is then updated the slow, general way
    files_only: bool = True


class CommitWriter:
    """Commits of exactly the given paths, in a repository open in `git` (see GitRepo)."""

    def __init__(
        self,
        git: GitRunner,
        batch: GitBatch,
        committer: Person,
        clear_index_lock: Callable[[], None],
    ) -> None:
        self._git = git
        self._batch = batch
        self._trees = TreeEditor(batch)
        self._root = git.work_tree
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
        # A git holding the index lock (a commit waiting for its editor) is about to move HEAD
        # itself: wait for it rather than make its commit fail.
        self._clear_index_lock()
        for attempt in range(1, _COMMIT_ATTEMPTS + 1):
            head, head_tree = self._head_and_tree()
            change = self._work_tree_change(rels, head_tree)
            tree = self._trees.edit(head_tree, change.entries)
            if tree == head_tree:  # (None and None: nothing to put in a first commit)
                return None
            tree = tree or self._batch.store_tree(b"")  # everything deleted
            new = self._commit_tree(tree, head, message, author)
            if self._move_head(new, head, message, attempt):
                self.update_user_index(new, rels, change)
                return new
        raise AssertionError("unreachable: _move_head raises on the last attempt")

    def _head_and_tree(self) -> tuple[str | None, str | None]:
        """HEAD and its tree, read afresh; (None, None) before a first commit."""
        head = self._batch.read("HEAD")
        if head is None or head.kind != "commit":
            return None, None
        first_line = head.content.split(b"\n", 1)[0]  # a commit starts `tree <sha>`
        return head.sha, first_line.removeprefix(b"tree ").decode()

    def _commit_tree(self, tree: str, head: str | None, message: str, author: Person) -> str:
        parents = [head] if head else []
        if _DATES.isdisjoint(os.environ) and "\n" not in str(self._git.git_dir):
            content = commit_object(tree, parents, author, self._committer, message, time.time())
            return self._batch.store_commit(content)
        # Dates given in git's own formats: git reads them.
        people = {**identity_env("AUTHOR", author), **identity_env("COMMITTER", self._committer)}
        args = ["commit-tree", "--no-gpg-sign", tree, *(f"-p{parent}" for parent in parents)]
        return self._git.run(args, env=people, stdin=message.encode()).decode().strip()

    # --- what the work tree holds ---------------------------------------------------------------
    def _work_tree_change(self, rels: list[str], head_tree: str | None) -> WorkTreeChange:
        """The entries the new tree gets at `rels`: each file stored as a blob (through git's
        filters), each missing path deleted, each folder as `git add -A` would take it."""
        change = WorkTreeChange()
        regular: dict[str, bytes] = {}  # path → its mode, for the files to store
        for rel in rels:
            info = _lstat(self._root / rel)
            if info is None:
                change.entries[split_path(rel)] = None
                change.seen[rel] = None
                old = self._trees.entry_at(head_tree, split_path(rel))
                change.files_only &= old is None or old.mode != TREE_MODE
            elif stat.S_ISDIR(info.st_mode):
                change.files_only = False
                self._add_folder(rel, change, regular)
            else:
                self._add_file(rel, info, change, regular)
        stored = self._batch.store_files(list(regular))
        for (rel, mode), sha in zip(regular.items(), stored, strict=True):
            change.entries[split_path(rel)] = Entry(mode, sha)
        return change

    def _add_file(
        self,
        rel: str,
        info: os.stat_result,
        change: WorkTreeChange,
        regular: dict[str, bytes],
    ) -> None:
        change.seen[rel] = (info.st_ino, info.st_size, info.st_mtime_ns)
        if stat.S_ISLNK(info.st_mode):
            target = os.fsencode(os.readlink(self._root / rel))
            sha = self._git.run(["hash-object", "-w", "--stdin"], stdin=target).decode().strip()
            change.entries[split_path(rel)] = Entry(b"120000", sha)
        elif stat.S_ISREG(info.st_mode):
            regular[rel] = b"100755" if info.st_mode & stat.S_IXUSR else b"100644"

    def _add_folder(self, rel: str, change: WorkTreeChange, regular: dict[str, bytes]) -> None:
        """Every file below `rel` that git tracks or would add (ignored files stay out), and
        the deletion of those that are gone."""
        args = ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", rel]
        listed = self._git.run(args).decode("utf-8", errors="surrogateescape").split("\0")
        for name in dict.fromkeys(name for name in listed if name):
            info = _lstat(self._root / name)
            if info is None:
                change.entries[split_path(name)] = None
            else:
                self._add_file(name, info, change, regular)

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

    def update_user_index(
        self, new: str, rels: list[str], change: WorkTreeChange | None = None
    ) -> None:
        """Make the user's index entries for `rels` match the new commit, and nothing else.

        When the change named only files, `update-index` takes them from the work tree, which
        holds what was committed unless a file changed since it was stored: those few (and any
        change that named a folder) go through `reset`, which reads the whole index afresh.
        """
        if change is not None and change.files_only:
            self._index_command(["update-index", "--add", "--remove", "--", *rels], rels)
            rels = [rel for rel in rels if _signature(self._root / rel) != change.seen.get(rel)]
            if not rels:
                return
        # reset refreshes the stat data afterwards: without it these entries look modified to
        # commands that need a clean index (the read-tree -m -u of a sync after a pull).
        self._index_command(["reset", "-q", new, "--", *rels], rels)

    def _index_command(self, args: list[str], rels: list[str]) -> None:
        """Run a git command that writes the user's index; a failure is logged, not raised."""
        try:
            try:
                self._clear_index_lock()
                self._git.run(args)
            except IndexLockBusy:
                self._clear_index_lock()
                self._git.run(args)
        except GitError as error:
            # The commit exists; only the index view of these paths lags behind it.
            log.warning(
                "committed, but could not update the git index for %s (%s); run: git reset -q"
                " HEAD -- %s",
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
        for pattern in ("feedbackd-index*", f"{COMMIT_FILE_PREFIX}*"):  # left by a crash
            for leftover in self._git.git_dir.glob(pattern):
                leftover.unlink(missing_ok=True)
        head = self._git.rev("HEAD")
        if head is None:
            return []
        recent = ["log", f"-n{int(depth)}", "--format=", "--name-only", "-z", "--no-renames", head]
        names = self._git.run(recent).decode("utf-8", "surrogateescape").split("\0")
        touched = sorted({name.strip("\n") for name in names} - {""})
        if not touched:
            return []
        # Every staged difference, then only those of the recent commits: paths on git's command
        # line would overflow it after a first import of a hundred thousand files.
        args = ["diff", "--cached", "--name-only", "-z", "--no-renames", head]
        staged = self._git.run(args).decode("utf-8", "surrogateescape").split("\0")
        lagging = sorted(set(staged) & set(touched))
        stale = [rel for rel in lagging if self._head_id(head, rel) == self._disk_id(rel)]
        if stale:
            # The same crash may have left index.lock, still young at a quick restart: wait
            # until it is judged stale (or its live owner is done) instead of failing the heal.
            self._clear_index_lock()
            for start in range(0, len(stale), _PATHS_PER_COMMAND):
                self._git.run(
                    ["reset", "-q", head, "--", *stale[start : start + _PATHS_PER_COMMAND]]
                )
            shown = ", ".join(stale[:5]) + (f" and {len(stale) - 5} more" if len(stale) > 5 else "")
            log.warning("the git index lagged behind recent commits for %s; fixed", shown)
        return stale

    def _head_id(self, head: str, rel: str) -> str | None:
        found = self._batch.read(f"{head}:{rel}") if "\n" not in rel else None
        return found.sha if found is not None and found.kind == "blob" else None

    def _disk_id(self, rel: str) -> str | None:
        if not (self._root / rel).is_file():
            return None
        return self._git.run(["hash-object", "--", str(self._root / rel)]).decode().strip()


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return path.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return None


def _signature(path: Path) -> tuple[int, int, int] | None:
    info = _lstat(path)
    return None if info is None else (info.st_ino, info.st_size, info.st_mtime_ns)
