"""Committing exactly the paths of one change, without touching what the user has staged.

The change is built without any index: the changed files are stored as blobs and only the trees
on their way are written anew (edges/git/tree.py), the commit object is made, and HEAD is moved
with a compare-and-swap, all in this process (edges/git/native.py); where libgit2 would not do
as git does, through long-lived git helpers (edges/git/batch.py) and `update-ref`. Only then are
the user's index entries for exactly those paths brought in line with the new commit, by
`git update-index` (edges/git/userindex.py). heal_index finishes that last step when a crash
interrupted it. Nothing is committed while the user is in the middle of a rebase or merge.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from feedbackd.core.errors import GitError, RepositoryDamaged
from feedbackd.core.people import Person
from feedbackd.edges.files import TMP_SUFFIX, FileState, make_folders
from feedbackd.edges.git.batch import GitBatch, GitObject
from feedbackd.edges.git.headfile import head_commit
from feedbackd.edges.git.locks import UsersGit, holding_index_lock
from feedbackd.edges.git.native import LeftToGit, NativeStore, RefLocked, RefMoved
from feedbackd.edges.git.runner import (
    LOCK_HINT,
    GitRunner,
    first_line,
    hint_for,
    identity_env,
    rel_path,
)
from feedbackd.edges.git.tree import TREE_MODE, Entry, TreeEditor, commit_object, split_path
from feedbackd.edges.git.userindex import UserIndex, heal_lagging_index, lagging_paths

log = logging.getLogger("feedbackd")

_COMMIT_ATTEMPTS = 3
# An index this big follows a run of commits once (index_once): writing it costs more than a
# commit (38 ms at 100,000 files). A smaller one follows each commit, so that it lags HEAD for
# one commit at most: a `git stash` or `commit` of the user's reads the index without taking
# its lock, and one that read it lagging would take the committed files for untracked ones.
INDEX_ONCE_BYTES = 4 << 20  # about 40,000 files
_SETTLE_WAIT_S = 5.0
_REF_LOCK_WAIT_S = 1.0  # git waits 0.1 s for a ref's lock, 1 s for packed-refs'
_DATES = frozenset({"GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"})
_LINK_MODE = b"120000"
# git's modes of the entries a work tree holds as files, and the permissions git gives them
_FILE_MODES = {b"100644": 0o644, b"100755": 0o755, _LINK_MODE: 0o777}
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
    # path → its state when its blob was stored; None: not on disk
    seen: dict[str, FileState | None] = field(default_factory=dict)
    # False when a folder was named: the index is then updated the slow, general way
    files_only: bool = True


class HeadMoved(GitError):
    """HEAD is no longer the commit a change was planned on, or a git command of the user's
    (`reset`, `stash`, `pull`, a commit) ran since it was planned: the change must be planned
    again from what is there now."""


@dataclass
class HeldIndexLock:
    """The index lock is held for one change planned on `head` (the commit it made, once made).

    `index_once`: the user's index follows the commits made meanwhile once, as the lock is let
    go, not after each (see CommitWriter.holding)."""

    head: str | None
    index_once: bool = False
    # the paths committed meanwhile whose index entries wait, as their files were stored
    waiting: WorkTreeChange | None = None


_CURRENT = object()  # hold on whatever HEAD is once the lock is taken


class CommitWriter:
    """Commits of exactly the given paths, in a repository open in `git` (see GitRepo).

    Each commit is made holding `.git/index.lock` (edges/git/locks.py), and a caller that also
    writes the files it commits holds it around both (`holding`): a user's `git stash -u`,
    `reset --hard` or `pull` then never sees feedbackd's files written but not committed, nor
    commits a moment after it took them away.

    The order inside stays: files first, then the commit. Building the commit from blobs before
    the files exist would not shorten the time anyone can see (the lock covers both), and a
    crash between would leave HEAD holding changes the work tree lacks, which `git status`
    shows as the user undoing them; with files first, a crash leaves changes that are not yet
    committed, and the next pass commits them.
    """

    def __init__(
        self,
        git: GitRunner,
        batch: GitBatch,
        committer: Person,
        clear_index_lock: Callable[[], None],
        lock_wait_s: float = 30,
    ) -> None:
        self._git = git
        self._batch = batch
        self._trees = TreeEditor(batch, in_process=True)
        self._root = git.work_tree
        self._committer = committer
        self._clear_index_lock = clear_index_lock
        self._lock_wait_s = lock_wait_s
        self._held: HeldIndexLock | None = None
        self.users_git = UsersGit(self._root, git.git_dir, min(lock_wait_s, _SETTLE_WAIT_S))
        self._index = UserIndex(git, clear_index_lock)

    @property
    def _native(self) -> NativeStore | None:
        # Opened by the first commit, not by a pass that finds nothing to do (libgit2 takes 35 ms
        # to load); reads go there once it is open (GitBatch.read).
        return self._batch.native()

    @contextmanager
    def holding(
        self, expected: str | object | None = _CURRENT, *, index_once: bool = False
    ) -> Iterator[HeldIndexLock]:
        """Hold the index lock for a change planned on HEAD `expected` (by default: HEAD as it
        is once the lock is held); HeadMoved when HEAD is another commit by then. Commits made
        meanwhile go on top of it, one after the other.

        `index_once`: the user's index follows all of them at once, before the lock is let go
        (on a big site writing the index costs more than the commit itself). No git command
        can see the index lag meanwhile, as none can take the lock; a crash leaves it lagging
        for a few commits, as between any commit and its index update, and heal_index brings
        it in line."""
        if self._held is not None:
            raise RuntimeError("the index lock is already held for a change")
        refuse_during_operation(self._git.git_dir)
        self._batch.native()  # a commit follows: libgit2 reads HEAD and the trees from here on
        with holding_index_lock(
            self._root, self._git.git_dir, self._clear_index_lock, wait_s=self._lock_wait_s
        ) as waited:
            head = self.head()
            if expected is not _CURRENT and waited:
                raise HeadMoved(
                    "a git command changed the workspace while feedbackd worked",
                    hint="nothing of the change was written; it is planned again",
                )
            if expected is not _CURRENT and head != expected:
                raise HeadMoved(
                    f"HEAD moved to {(head or 'no commit')[:12]} (a git command of the user's)"
                    f" while feedbackd worked on {str(expected or 'no commit')[:12]}",
                    hint="nothing of the change was written; it is planned again",
                )
            self._held = HeldIndexLock(head, index_once and self._index_is_big())
            try:
                yield self._held
            finally:
                try:
                    self._index_follows(self._held)
                finally:
                    self._held = None

    def _index_is_big(self) -> bool:
        try:
            return (self._git.git_dir / "index").stat().st_size >= INDEX_ONCE_BYTES
        except OSError:
            return False

    def _index_follows(self, held: HeldIndexLock) -> None:
        """The index updates the commits of `held` left waiting, as one (index_once)."""
        waiting, held.waiting = held.waiting, None
        if waiting is not None and held.head is not None:
            self.update_user_index(held.head, list(waiting.seen), waiting)

    def head(self) -> str | None:
        """HEAD's commit, read afresh; None before a first commit."""
        return self._head_and_tree()[0]

    def settled_head(self) -> str | None:
        """HEAD once no git command of someone else's changes the workspace (waited for a few
        seconds at most: a `git commit` may wait for its editor much longer, and a change that
        follows is checked again anyway): what a pass reads and plans on."""
        self.users_git.settle()
        return self.head()

    def commit(
        self,
        paths: Sequence[str],
        message: str,
        author: Person,
        within: str | None = None,
        needed: Sequence[str] = (),
    ) -> str | None:
        """Commit exactly `paths` (added, modified or deleted) as one commit; return its sha.

        Returns None when none of them differ from HEAD. The user's other staged and unstaged
        changes stay as they were; the user's index entries for `paths` follow the new commit.
        Inside `holding`, the commit goes on the held HEAD, or raises HeadMoved.
        `within`: the folder the change lives in; moved away (renamed) while the change was read,
        its files would look deleted, so nothing is committed (FileNotFoundError).
        `needed`: those of `paths` the change stands on (the item a decision decides); one gone
        when the change is read means nothing is committed (HeadMoved, see _all_there).
        """
        rels = list(dict.fromkeys(rel_path(path) for path in paths))
        if not rels:
            return None
        folder = self._root / rel_path(within) if within is not None else None
        wanted = [rel_path(path) for path in needed]

        def change_of(tree: str | None) -> WorkTreeChange:
            change = _all_there(self._work_tree_change(rels, tree), wanted)
            return _still_in(folder, change) if folder is not None else change

        return self._commit_with(change_of, rels, message, author)

    def move_folder(self, old: str, new: str, message: str, author: Person) -> str | None:
        """Commit the folder `old` moved to `new`, its files as HEAD holds them, so git sees a
        pure rename and changes made to them in the work tree stay uncommitted; None when
        HEAD has no folder `old` or already has something at `new`, or when the work tree no
        longer shows the move once the index lock is held (a `git stash -u` run since the move
        was seen put `old` back and took `new` away)."""
        rels = [rel_path(old), rel_path(new)]

        def change_of(tree: str | None) -> WorkTreeChange | None:
            if (self._root / rels[0]).is_dir() or not (self._root / rels[1]).is_dir():
                return None
            return _moved(self._trees, tree, *rels)

        return self._commit_with(change_of, rels, message, author)

    def _commit_with(
        self,
        change_of: Callable[[str | None], WorkTreeChange | None],
        rels: list[str],
        message: str,
        author: Person,
    ) -> str | None:
        """The commit of the change `change_of` finds from HEAD's tree (None: nothing to do),
        on the held HEAD, or holding the index lock for it, trying again if HEAD moves."""
        if self._held is not None:
            return self._commit_on(self._held, change_of, rels, message, author)
        for attempt in range(1, _COMMIT_ATTEMPTS + 1):
            try:
                with self.holding() as held:
                    return self._commit_on(held, change_of, rels, message, author)
            except HeadMoved as moved:
                # Moved without the index lock (`git update-ref`): build on the new HEAD.
                if attempt == _COMMIT_ATTEMPTS:
                    raise GitError(
                        f"could not move HEAD to the new commit: {moved.message}",
                        hint="another program keeps committing here; try again, or stop it"
                        " for a moment",
                    ) from moved
                log.info("HEAD moved while committing; trying again")
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _commit_on(
        self,
        held: HeldIndexLock,
        change_of: Callable[[str | None], WorkTreeChange | None],
        rels: list[str],
        message: str,
        author: Person,
    ) -> str | None:
        """The commit of the change on the held HEAD, which then is the new commit. The user's
        index follows it (userindex.py): its update begins with the commit, reading the files
        already written, and ends once HEAD names the commit; or with a run (index_once)."""
        head = held.head
        update = None if held.index_once else self._index.begin(rels)
        try:
            head_tree = self._tree_of(head)
            change = change_of(head_tree)
            new = self._made(head, head_tree, change, message, author) if change else None
        except BaseException:
            if update is not None:
                update.abandon()
            raise
        if new is None or change is None:
            if update is not None:
                update.abandon()
            return None
        held.head = new
        self.users_git.changed()
        if update is None:
            held.waiting = _joined(held.waiting, rels, change)
        else:
            update.finish(new, change.seen if change.files_only else None)
        self._batch.after_commit()  # git's repack now and then, once HEAD and the index are done
        return new

    def _made(
        self,
        head: str | None,
        head_tree: str | None,
        change: WorkTreeChange,
        message: str,
        author: Person,
    ) -> str | None:
        """The change's trees, its commit and HEAD moved to it; None when the tree is HEAD's."""
        tree = self._trees.edit(head_tree, change.entries)
        if tree == head_tree:  # (None and None: nothing to commit)
            return None
        tree = tree or self._batch.store_tree(b"")  # everything deleted
        new = self._commit_tree(tree, head, message, author)
        self._move_head(new, head, message)
        return new

    def put_back(self, rel: str, within: Path) -> bool:
        """Write `rel` as HEAD holds it where the work tree has nothing (see _write_new)."""
        entry = self._trees.entry_at(self._head_and_tree()[1], split_path(rel))
        found = self._batch.read(entry.sha) if entry and entry.mode in _FILE_MODES else None
        return bool(entry and found and _write_new(self._root / rel, within, entry.mode, found))

    def entry_id_at_head(self, rel: str) -> str | None:
        """The object id HEAD holds at `rel` (None: nothing there), from the trees kept parsed."""
        return self.entry_ids_at_head([rel])[rel]

    def entry_ids_at_head(self, rels: Sequence[str]) -> dict[str, str | None]:
        """The object id HEAD holds at each of `rels`, HEAD read once (a pass asks about every
        decided file of an agent)."""
        head_tree = self._head_and_tree()[1]
        found = self._trees.ids_at(head_tree, [split_path(rel_path(rel)) for rel in rels])
        return dict(zip(rels, found, strict=True))

    def _tree_of(self, commit: str | None) -> str | None:
        if commit is None:
            return None
        found = self._batch.read(commit)
        if found is None or found.kind != "commit":
            raise RepositoryDamaged(f"the repository lacks commit {commit}, which HEAD names")
        return found.content.split(b"\n", 1)[0].removeprefix(b"tree ").decode()

    def _head_and_tree(self) -> tuple[str | None, str | None]:
        """HEAD and its tree, read afresh; (None, None) before a first commit (RepositoryDamaged
        when HEAD names a commit the repository lacks)."""
        head = self._batch.read("HEAD")
        if head is None or head.kind != "commit":
            _refuse_a_lost_head(self._git)
            return None, None
        first_line = head.content.split(b"\n", 1)[0]  # a commit starts `tree <sha>`
        return head.sha, first_line.removeprefix(b"tree ").decode()

    def _commit_tree(self, tree: str, head: str | None, message: str, author: Person) -> str:
        parents = [head] if head else []
        if _DATES.isdisjoint(os.environ) and "\n" not in str(self._git.git_dir):
            content = commit_object(tree, parents, author, self._committer, message, time.time())
            return _stored_commit(self._native, self._batch, content)
        # Dates given in git's own formats: git reads them, and needs the tree on disk.
        _write_objects(self._native, self._git)
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
        stored = _stored_files(self._native, self._batch, list(regular))
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
        change.seen[rel] = FileState.of(info)
        if stat.S_ISLNK(info.st_mode):
            native = self._native
            sha = native.store_file(rel) if native is not None else None
            if sha is None:
                target = os.fsencode(os.readlink(self._root / rel))
                args = ["hash-object", "-w", "--stdin"]
                sha = self._git.run(args, stdin=target).decode().strip()
            change.entries[split_path(rel)] = Entry(_LINK_MODE, sha)
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

    def _move_head(self, new: str, old: str | None, message: str) -> None:
        """Point HEAD at `new` if it still is `old`; HeadMoved when someone moved it."""
        native = self._native
        try:
            _move_head(self._git, native, new, old, message)
        finally:
            if native is not None:
                native.release_packs()  # on the branch now, or never: git may repack them

    def update_user_index(
        self, new: str, rels: list[str], change: WorkTreeChange | None = None
    ) -> None:
        """Make the user's index entries for `rels` match the new commit, and nothing else."""
        stored = change.seen if change is not None and change.files_only else None
        self._index.follow(new, rels, stored, locked=self._held is not None)

    def heal_index(self, depth: int = 20, dry_run: bool = False) -> list[str]:
        """Bring index entries that lag behind recent commits back in line; the paths fixed
        (heal_lagging_index), or only found (`dry_run`: lagging_paths, which changes nothing)."""
        if dry_run:
            return lagging_paths(self._git, self._batch, depth, self._git.rev("HEAD"))
        return heal_lagging_index(self._git, self._batch, self._clear_index_lock, depth)


def _write_new(path: Path, within: Path, mode: bytes, blob: GitObject) -> bool:
    """Make `path` a file (its executable bit as git's `mode` says) or a symbolic link holding
    the blob, unless something is there: that stays, and False is returned.
    FileNotFoundError when the folder `within` is gone."""
    content = blob.content
    make_folders(path.parent, within)
    temporary = path.with_name(f".{path.name[:200]}.{secrets.token_hex(4)}{TMP_SUFFIX}")
    try:
        if mode == _LINK_MODE:
            os.symlink(os.fsdecode(content), temporary)
        else:
            temporary.write_bytes(content)
            temporary.chmod(_FILE_MODES[mode])
        os.link(temporary, path, follow_symlinks=False)  # fails on anything already there
    except FileExistsError:
        return False
    finally:
        temporary.unlink(missing_ok=True)
    return True


def _moved(trees: TreeEditor, head_tree: str | None, old: str, new: str) -> WorkTreeChange | None:
    """The folder `old` of `head_tree` at `new` instead; None when there is no such folder, or
    something is at `new` already."""
    moved = trees.entry_at(head_tree, split_path(old))
    if moved is None or moved.mode != TREE_MODE or trees.entry_at(head_tree, split_path(new)):
        return None
    return WorkTreeChange({split_path(old): None, split_path(new): moved}, files_only=False)


def _still_in(folder: Path, change: WorkTreeChange) -> WorkTreeChange:
    """The change, read while `folder` stood where it stands: the folder is looked at after
    every file was read, so a change read before a move is whole."""
    if not folder.is_dir():
        raise FileNotFoundError(errno.ENOENT, "moved away while its change was read", str(folder))
    return change


def _all_there(change: WorkTreeChange, needed: Sequence[str]) -> WorkTreeChange:
    """The change, unless a file it stands on was gone when it was read: `git clean` takes no
    lock, and one run by the user while a decision was written (its file checked, the commit not
    made) removes the decided file. A commit made then would record the decision without its
    file (and the draft it removed): it is planned again from what is there now."""
    gone = [rel for rel in needed if change.seen.get(rel) is None]
    if gone:
        raise HeadMoved(
            f"{gone[0]} was removed while it was committed (a `git clean`?)",
            hint="nothing was committed; the change is planned again",
        )
    return change


def _joined(
    waiting: WorkTreeChange | None, rels: list[str], change: WorkTreeChange
) -> WorkTreeChange:
    """The paths of index updates left waiting, with those of one more commit (its files as it
    stored them; a path named by a folder has no such record, and takes the general way)."""
    joined = waiting or WorkTreeChange()
    joined.files_only &= change.files_only
    for rel in rels:
        joined.seen.pop(rel, None)  # the latest commit's record stands, and comes last
        joined.seen[rel] = change.seen.get(rel)
    return joined


def _stored_files(native: NativeStore | None, batch: GitBatch, rels: list[str]) -> list[str]:
    """The blobs of the work-tree files `rels`, stored in this process; those libgit2 leaves to
    git (a filter driver's) through git's hash-object."""
    found = {rel: native.store_file(rel) for rel in rels} if native is not None else {}
    left = [rel for rel in rels if found.get(rel) is None]
    by_git = dict(zip(left, batch.store_files(left), strict=True)) if left else {}
    return [found.get(rel) or by_git[rel] for rel in rels]


def _stored_commit(native: NativeStore | None, batch: GitBatch, content: bytes) -> str:
    """The commit object stored (in this process unless its message holds a NUL, which git
    would cut); its id."""
    if native is not None and b"\0" not in content:
        try:
            return native.store("commit", content)
        except LeftToGit:
            pass
    return batch.store_commit(content)


def _write_objects(native: NativeStore | None, git: GitRunner) -> None:
    """The commit's objects on disk before git or HEAD names them: one pack from this process,
    or through git where that failed (a full disk), which then says why."""
    for kind, content in native.write_pending() if native is not None else []:
        git.run(["hash-object", "-w", "--no-filters", "-t", kind, "--stdin"], stdin=content)


def _move_head(
    git: GitRunner, native: NativeStore | None, new: str, old: str | None, message: str
) -> None:
    """CommitWriter._move_head, its objects on disk first: in this process, else by git."""
    reflog = "feedbackd: " + message.strip().split("\n", 1)[0]
    _write_objects(native, git)
    if native is not None and _moved_in_process(native, new, old, reflog):
        return
    expected = old or "0" * len(new)  # all zeros: HEAD's branch must not exist yet
    status, _, err = git.exec(["update-ref", "-m", reflog, "HEAD", new, expected])
    if status == 0:
        return
    if ".lock" in err:
        hint = hint_for(err)
        raise GitError(f"could not move HEAD to the new commit: {first_line(err)}", hint=hint)
    raise HeadMoved(
        f"HEAD moved while committing ({first_line(err)})",
        hint="nothing was committed; the change is planned again",
    )


def _refuse_a_lost_head(git: GitRunner) -> None:
    """RepositoryDamaged when HEAD's branch names a commit (in its loose ref file, else as git
    resolves it, packed) that the repository lacks or cannot read: a commit made then would
    start a history of its own on top of the damage. Before a first commit, nothing."""
    named = head_commit(git.git_dir)
    if named is None:
        status, out, _ = git.exec(["rev-parse", "-q", "--verify", "HEAD"])
        named = out.decode().strip() if status == 0 else None
    if named:
        raise RepositoryDamaged(
            f"HEAD names {named[:12]}, which the repository lacks or cannot read"
        )


def _moved_in_process(native: NativeStore, new: str, old: str | None, reflog: str) -> bool:
    """HEAD moved from `old` to `new` by libgit2 (see NativeStore.move_head); False when it
    leaves the move to git. HeadMoved, or GitError when a git command holds the ref's lock."""
    try:
        _move_when_free(native, new, old, reflog)
    except RefMoved as moved:
        raise HeadMoved(
            f"HEAD moved while committing ({moved})",
            hint="nothing was committed; the change is planned again",
        ) from moved
    except RefLocked as locked:
        raise GitError(
            f"could not move HEAD to the new commit: {locked}", hint=LOCK_HINT
        ) from locked
    except LeftToGit as why:
        log.debug("HEAD is moved by git: %s", why)
        return False
    return True


def _move_when_free(native: NativeStore, new: str, old: str | None, reflog: str) -> None:
    """native.move_head, tried again for a moment while a git command holds the ref's lock, as
    git's own ref updates do (`core.filesRefLockTimeout`): `git gc` packing the refs holds it
    for milliseconds, and a decision that gave up then would wait for the next pass."""
    deadline = time.monotonic() + _REF_LOCK_WAIT_S
    pause = 0.001
    while True:
        try:
            native.move_head(new, old, reflog)
            return
        except RefLocked:
            if time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return path.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return None
