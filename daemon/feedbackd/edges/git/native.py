"""A commit's objects and its move of HEAD in this process, through libgit2 (pygit2).

A decision's commit stores its files as blobs, its trees and the commit object, then moves HEAD's
branch: done here, none of it starts git or waits on a helper's answer. Once open, it answers
reads of objects and HEAD too, without a round trip to `git cat-file`. libgit2 keeps git's own
rules where they matter: the files go through the same filters (line endings, `ident`), and a
ref moves under git's lock file (`refs/heads/main.lock`) and only if it still names the commit
read, so a user's `git commit`, `reset` or `update-ref` is never overwritten.

Where libgit2 would not do what git does, the caller takes the git path (edges/git/batch.py,
`git update-ref`) instead: a repository libgit2 cannot open as git does (a SHA-256 one, reftable
refs, a linked worktree), a file with a filter driver (Git LFS) or a `working-tree-encoding`, a
branch that is a symbolic ref, and a move of HEAD while a `reference-transaction` hook is
installed (libgit2 runs no hooks; git runs that one on every move of a ref). The user's index
is not written here: libgit2 reads and writes a 100,000-file index in 140–220 ms where
`git update-index` takes 40 ms (docs/git.md).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import stat
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from feedbackd.core.errors import RepositoryDamaged
from feedbackd.core.ids import is_utf8
from feedbackd.edges.files import read_file_bytes
from feedbackd.edges.git.packwrite import (
    clear_stale_keeps,
    object_id,
    pack_count,
    packed,
    release,
    write_pack,
)


def _on_first_use(name: str) -> ModuleType:
    """The module `name`, loaded when one of its names is first used: every command that opens
    the repository imports this module, and only a commit uses libgit2 (35 ms to load)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.loader is not None, f"{name} is not installed"
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


if TYPE_CHECKING:
    import pygit2
else:
    pygit2 = _on_first_use("pygit2")

log = logging.getLogger("feedbackd")

_KINDS = {"blob": "BLOB", "tree": "TREE", "commit": "COMMIT"}  # pygit2.enums.ObjectType's
_PACKED_FILE_BYTES = 8 << 20  # a bigger file is stored by libgit2 as a file of its own
# A commit's objects go to disk as one pack up to this size, else as a file each: a file costs
# little beside a big object, and git's repacks would only copy a big pack again.
_PACKED_AT_MOST = 256 << 10
# With this many packs in the repository (git's repacks not keeping up: a user's gc running, a
# loaded machine), a commit's objects are written as files, as `git commit` writes them, so that
# the packs never reach git's gc.autoPackLimit (50), past which the user's next commit would
# start a full gc. git's next repack packs those files too.
LOOSE_FROM_PACKS = 40
OPEN_PACKS_AT_MOST = 8  # pack files libgit2 keeps open (the oldest used is closed first)
# Attributes whose effect on a stored file libgit2 does not reproduce: a filter driver is a
# program of the user's (git-lfs), and libgit2 does not re-encode text.
_FOREIGN_ATTRIBUTES = ("filter", "working-tree-encoding")


class RefMoved(Exception):
    """HEAD's branch no longer names the commit the change was built on."""


class RefLocked(Exception):
    """A git command holds the ref's lock file."""


class LeftToGit(Exception):
    """What libgit2 cannot do here (read, store, move HEAD): the caller runs the git CLI instead,
    which does it or says why."""


class NativeStore:
    """The object store and HEAD of one repository, open in this process; safe to share between
    threads (libgit2's repository is not: every call takes a lock)."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self._repo: pygit2.Repository | None = repo
        self._lock = threading.Lock()
        # Stored since the last write, by id (kind, content): a commit's objects go to disk as
        # one pack when HEAD is to move to it (packwrite.py), or before anything reads them.
        self._pending: dict[str, tuple[str, bytes]] = {}
        self._packs = Path(repo.path, "objects", "pack")
        self._kept: list[str] = []  # packs written whose `.keep` waits for HEAD (release_packs)
        self._attribute_flags = _attribute_flags()

    @classmethod
    def open(cls, work_tree: Path, git_dir: Path) -> NativeStore | None:
        """The repository at `work_tree` with its git folder `git_dir`; None when libgit2 cannot
        open it, or sees another repository or object format there than git does."""
        # A pack file open at a time for each of a commit's few recent packs, not one for each
        # pack made since git last repacked them
        pygit2.settings.mwindow_file_limit = OPEN_PACKS_AT_MOST
        try:
            repo = pygit2.Repository(str(work_tree), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
        except (pygit2.GitError, OSError, ValueError) as error:
            log.debug("git objects go through git: libgit2 cannot open %s (%s)", work_tree, error)
            return None
        seen = (Path(repo.path).resolve(), Path(repo.workdir or "/").resolve())
        format_ = _setting(repo, "extensions.objectformat") or "sha1"
        linked = (git_dir / "commondir").exists()  # a linked worktree: its hooks are elsewhere
        # git fetches a partial clone's missing objects, and reads through replace refs; libgit2
        # does neither
        unlike_git = _setting(repo, "extensions.partialclone") is not None or _replaced(git_dir)
        if (
            seen != (git_dir.resolve(), work_tree.resolve())
            or format_.lower() != "sha1"
            or linked
            or unlike_git
        ):
            log.debug("git objects go through git: libgit2 sees %s, format %s", seen, format_)
            repo.free()
            return None
        for name in clear_stale_keeps(Path(repo.path, "objects", "pack")):
            log.info("a pack left held by a feedbackd that stopped is given back to git: %s", name)
        return cls(repo)

    def read(self, name: str) -> tuple[str, str, bytes] | None:
        """The object `name` names (a sha, `HEAD`, `sha:path`) as its id, kind and content; None
        when there is none. HEAD is read from its file each time, as `git cat-file` does.
        LeftToGit when libgit2 cannot read it (a damaged object): git then says why."""
        if not name.isascii() and not is_utf8(name):
            raise LeftToGit(f"libgit2 takes names as UTF-8 only: {name!r}")
        with self._lock:
            if name[:40] in self._pending:  # HEAD and the trees on disk name none of them
                self._write_pending_or_leave_to_git()
            repo = self._open()
            try:
                found = repo.revparse_single(name)
            except (KeyError, ValueError, pygit2.InvalidSpecError):
                _named_by_a_tree(repo, name)
                return None
            except pygit2.GitError as error:
                if "object not found" in str(error):
                    raise RepositoryDamaged(f"cannot read {name}: {error}") from error
                raise LeftToGit(f"libgit2 could not read {name}: {error}") from error
            return str(found.id), found.type_str, found.read_raw()

    def store_file(self, rel: str) -> str | None:
        """Store the work-tree file (or symbolic link) `rel` as a blob, through the filters
        `git add` applies; its id. None when git must store it (see _FOREIGN_ATTRIBUTES) or
        libgit2 refused (a `core.safecrlf` conversion, say): git then says why, or does it."""
        with self._lock:
            try:
                repo = self._open()
                flags = self._attribute_flags
                if any(repo.get_attr(rel, name, flags) for name in _FOREIGN_ATTRIBUTES):
                    return None
                content = _as_stored(repo, rel)
                if content is not None:
                    return self._keep("blob", content)
                return str(repo.create_blob_fromworkdir(rel))
            except (pygit2.GitError, OSError, ValueError, LeftToGit) as error:
                log.debug("%s is stored through git: %s", rel, error)
                return None

    def store(self, kind: str, content: bytes) -> str:
        """Store an object of `kind` (blob, tree, commit) holding `content`; its id. It goes to
        disk with the others of its commit (write_pending)."""
        with self._lock:
            self._open()
            return self._keep(kind, content)

    def _keep(self, kind: str, content: bytes) -> str:
        sha = object_id(kind, content)
        self._pending[sha] = (kind, content)
        return sha

    def write_pending(self) -> list[tuple[str, bytes]]:
        """Write the objects stored since the last write, as one pack. Where the pack cannot be
        written (a full disk), each goes through libgit2 as a file of its own; the objects it
        could not write either are returned, for git to write or say why."""
        with self._lock:
            return self._write_pending()

    def _write_pending(self, *, one_by_one: bool = True) -> list[tuple[str, bytes]]:
        """write_pending; one_by_one=False writes one pack or nothing (OSError), whatever its
        size: no part of a commit is on disk without the rest."""
        pending, self._pending = list(self._pending.values()), {}
        if not pending:
            return []
        if one_by_one and (
            sum(len(content) for _, content in pending) > _PACKED_AT_MOST  # a big folder's tree
            or pack_count(self._packs) >= LOOSE_FROM_PACKS
        ):
            return self._written_one_by_one(pending)
        try:
            self._kept.append(
                write_pack(self._packs, [packed(kind, content) for kind, content in pending])
            )
        except OSError as error:
            if not one_by_one:
                raise
            log.debug("a commit's objects are stored one by one: %s", error)
            return self._written_one_by_one(pending)
        return []

    def _written_one_by_one(self, pending: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
        left = []
        for kind, content in pending:
            try:
                self._open().odb.write(getattr(pygit2.enums.ObjectType, _KINDS[kind]), content)
            except (pygit2.GitError, OSError, LeftToGit):
                left.append((kind, content))
        return left

    def _write_pending_or_leave_to_git(self) -> None:
        """Before a read: what it may name is on disk. LeftToGit when that fails (git reads);
        what is left stays, for the commit to hand to git before HEAD moves."""
        left = self._write_pending()
        for kind, content in left:
            self._keep(kind, content)
        if left:
            raise LeftToGit("libgit2 could not store a commit's objects")

    def release_packs(self) -> None:
        """Let git's repacks take the packs written since the last release: HEAD now names
        their commit, or never will (packwrite.py)."""
        with self._lock:
            self._release_packs()

    def _release_packs(self) -> None:
        kept, self._kept = self._kept, []
        for name in kept:
            release(self._packs, name)

    def move_head(self, new: str, old: str | None, message: str) -> None:
        """Point HEAD's branch (HEAD itself when detached) at `new` if it still is `old` (None:
        the branch must not exist yet), with `message` in the reflogs. Call write_pending first.

        RefMoved when it is another commit; RefLocked when a git command holds its lock;
        LeftToGit for a branch that is itself a symbolic ref, or a failure git should report."""
        with self._lock:
            try:
                self._compare_and_swap(pygit2.Oid(hex=new), old, message)
            except (pygit2.AlreadyExistsError, KeyError) as error:
                raise RefMoved(str(error) or "the branch is gone") from error
            except (pygit2.GitError, OSError) as error:  # lock-file failures come as OSError
                if "does not match" in str(error):
                    raise RefMoved(str(error)) from error
                if ".lock" in str(error):
                    raise RefLocked(str(error)) from error
                # Anything else (permissions, a full disk, a bad ref): `git update-ref` moves it
                # or says why, in git's own words.
                raise LeftToGit(f"libgit2 could not move HEAD: {error}") from error

    def _compare_and_swap(self, new: pygit2.Oid, old: str | None, message: str) -> None:
        repo = self._open()
        if os.access(_ref_hook(repo), os.X_OK):
            raise LeftToGit("a reference-transaction hook is installed")
        head = repo.lookup_reference("HEAD")
        name = str(head.target) if head.type == pygit2.enums.ReferenceType.SYMBOLIC else "HEAD"
        if old is None:
            repo.create_reference_direct(name, new, False, message=message)
            return
        ref = repo.lookup_reference(name)
        if ref.type != pygit2.enums.ReferenceType.DIRECT:
            raise LeftToGit(f"{name} is a symbolic ref")
        if str(ref.target) != old:
            raise RefMoved(f"{name} is at {str(ref.target)[:12]}")
        # libgit2 compares under the ref's lock with the id read here, as `update-ref` does
        ref.set_target(new, message)

    def _open(self) -> pygit2.Repository:
        if self._repo is None:
            raise LeftToGit("the repository was closed")
        return self._repo

    def close(self) -> None:
        """Let go of the repository's files (its packs stay mapped until then)."""
        with self._lock:
            if self._repo is not None:
                # All of a commit's objects, or none: HEAD must never name a commit with a
                # missing part (a commit whose objects are missing is refused a move of HEAD).
                with contextlib.suppress(OSError):
                    self._write_pending(one_by_one=False)
                self._release_packs()
                self._repo.free()
                self._repo = None


def _named_by_a_tree(repo: pygit2.Repository, name: str) -> None:
    """RepositoryDamaged when `name` (`<commit>:<path>`) names nothing because the object its
    tree names at that path is missing: git answers both alike ("missing"), and a pass that
    took a lost ledger for one never committed would commit it again on top of the damage."""
    commit, colon, path = name.partition(":")
    if not colon or not path:
        return
    try:
        entry = repo.revparse_single(commit).peel(pygit2.Tree)[path]
    except (KeyError, ValueError, pygit2.GitError):
        return  # no such path (or no such commit: reads of HEAD say so themselves)
    raise RepositoryDamaged(f"{commit[:12]}:{path} names {entry.id}, which the repository lacks")


def _attribute_flags() -> pygit2.enums.AttrCheck:
    """get_attr's flags: the system's gitattributes file left out where there is none, as git
    finds none there (libgit2 looks for it on every call: three quarters of a lookup's time)."""
    folders = pygit2.settings.search_path[pygit2.enums.ConfigLevel.SYSTEM].split(os.pathsep)
    if any(os.path.exists(os.path.join(folder, "gitattributes")) for folder in folders if folder):
        return pygit2.enums.AttrCheck.FILE_THEN_INDEX
    return pygit2.enums.AttrCheck.NO_SYSTEM


def _as_stored(repo: pygit2.Repository, rel: str) -> bytes | None:
    """The plain file `rel` as `git add` stores it, when that is its bytes as they are: the id
    libgit2 works out through its filters (line endings, `ident`) says so. None for anything
    else (a symbolic link, a file filters change, a big file), which libgit2 stores itself."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        descriptor = os.open(os.path.join(repo.workdir, rel), flags)
    except OSError:  # a symbolic link (ELOOP), or gone: libgit2 stores it, or says why
        return None
    with os.fdopen(descriptor, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > _PACKED_FILE_BYTES:
            return None
        content = file.read()
    return content if str(repo.hashfile(rel)) == object_id("blob", content) else None


def _replaced(git_dir: Path) -> bool:
    """Whether the repository has replace refs (`git replace`), loose or packed."""
    folder = git_dir / "refs" / "replace"
    if folder.is_dir() and any(folder.iterdir()):
        return True
    try:
        return b" refs/replace/" in read_file_bytes(git_dir / "packed-refs")
    except OSError:
        return False


def _ref_hook(repo: pygit2.Repository) -> Path:
    """Where git looks for the `reference-transaction` hook: in `core.hooksPath` (relative to
    the work tree), else in the git folder's hooks/."""
    configured = _setting(repo, "core.hooksPath")
    folder = Path(configured).expanduser() if configured else Path(repo.path, "hooks")
    return Path(repo.workdir or repo.path, folder, "reference-transaction")


def _setting(repo: pygit2.Repository, key: str) -> str | None:
    try:
        config = repo.config
        return str(config[key]) if key in config else None
    except (pygit2.GitError, KeyError):
        return None
