"""A new tree from an old one and a few changed paths, without an index.

Only the folders on the way to a changed path are read and written again; every other folder
keeps its tree as it is. This is what `git add` + `git write-tree` do in an index, minus reading
and writing an index of every file in the repository.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from feedbackd.core.errors import GitError, RepositoryDamaged
from feedbackd.core.lru import BoundedLRU
from feedbackd.core.people import Person
from feedbackd.edges.git.batch import GitBatch
from feedbackd.edges.git.native import LeftToGit

TREE_MODE = b"40000"
_TYPES = {TREE_MODE: b"tree", b"160000": b"commit"}  # every other mode is a blob's
# Trees kept parsed: a decision looks up the same few folders once per path it names, and the
# next decision walks the same way again. An object id names one content forever, so a kept
# tree is never out of date. The bound is on their entries, not on their number: a burst of
# decisions in one folder makes a new version of that folder's tree at each decision, and
# keeping hundreds of versions of a folder of thousands of files took memory in proportion.
ENTRIES_KEPT = 4_000  # about 1 MB


@dataclass(frozen=True)
class Entry:
    """A tree entry: git's octal mode (`100644`, `100755`, `120000`, `40000`) and object id."""

    mode: bytes
    sha: str


# path (split at `/`) → its new entry, or None to delete it (a whole folder, if it is one)
Changes = Mapping[tuple[bytes, ...], Entry | None]


def commit_object(
    tree: str, parents: list[str], author: Person, committer: Person, message: str, when: float
) -> bytes:
    """A commit object's content, as `git commit-tree` writes it (no signature, UTF-8)."""
    offset = round(time.localtime(when).tm_gmtoff / 60)
    sign = "-" if offset < 0 else "+"
    stamp = f"{int(when)} {sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"
    lines = [f"tree {tree}", *(f"parent {parent}" for parent in parents)]
    lines += [f"author {author.name} <{author.email}> {stamp}"]
    lines += [f"committer {committer.name} <{committer.email}> {stamp}"]
    return ("\n".join(lines) + "\n\n" + message).encode("utf-8")


def split_path(rel: str) -> tuple[bytes, ...]:
    return tuple(rel.encode("utf-8", "surrogateescape").split(b"/"))


def parse_tree(raw: bytes, id_size: int = 20) -> dict[bytes, Entry]:
    """The entries of a tree object's content: `mode name\\0`, then the object id in `id_size`
    bytes (20 with SHA-1, 32 with SHA-256)."""
    entries: dict[bytes, Entry] = {}
    position, size = 0, id_size
    while position < len(raw):
        space = raw.index(b" ", position)
        nul = raw.index(b"\0", space)
        sha = raw[nul + 1 : nul + 1 + size].hex()
        entries[raw[space + 1 : nul]] = Entry(raw[position:space], sha)
        position = nul + 1 + size
    return entries


def tree_listing(entries: Mapping[bytes, Entry]) -> bytes:
    """`git mktree -z` input for these entries (mktree sorts them as git does)."""
    return b"".join(
        b"%s %s %s\t%s\0" % (e.mode, _TYPES.get(e.mode, b"blob"), e.sha.encode(), name)
        for name, e in entries.items()
    )


def tree_body(entries: Mapping[bytes, Entry]) -> bytes:
    """A tree object's content: its entries in git's order, where a folder's name sorts as if
    it ended in `/`."""
    order = sorted(
        entries, key=lambda name: name + b"/" if entries[name].mode == TREE_MODE else name
    )
    return b"".join(
        b"%s %s\0%s" % (entries[name].mode, name, bytes.fromhex(entries[name].sha))
        for name in order
    )


def tree_id(entries: Mapping[bytes, Entry], id_size: int) -> str:
    """The id git gives a tree of these entries."""
    return _body_id(tree_body(entries), id_size)


def _body_id(body: bytes, id_size: int) -> str:
    """The id git gives a tree whose content is `body`."""
    digest = hashlib.sha1 if id_size == 20 else hashlib.sha256
    return digest(b"tree %d\0" % len(body) + body).hexdigest()


class _NewTree(NamedTuple):
    """A tree an edit made: its id, entries and content (made once: a big folder's tree takes
    milliseconds to lay out)."""

    sha: str
    entries: dict[bytes, Entry]
    body: bytes


def _id_size(changes: Changes) -> int:
    """The repository's id size, from the ids the change names (20 bytes: SHA-1)."""
    return next((len(entry.sha) // 2 for entry in changes.values() if entry is not None), 20)


class TreeEditor:
    """Writes the trees of one change, reading the old ones through a GitBatch; writing them in
    this process (`in_process`: the batch's NativeStore, where libgit2 serves), else through the
    batch's `git mktree`."""

    def __init__(self, batch: GitBatch, *, in_process: bool = False) -> None:
        self._batch = batch
        self._in_process = in_process
        self._parsed: BoundedLRU[str, dict[bytes, Entry]] = BoundedLRU(
            max_weight=ENTRIES_KEPT, weigh=lambda _, entries: len(entries)
        )

    def entry_at(self, tree: str | None, path: tuple[bytes, ...]) -> Entry | None:
        """The entry at `path` in `tree` (None when there is none)."""
        entry = None
        for name in path:
            if tree is None:
                return None
            entry = self.read_tree(tree).get(name)
            tree = entry.sha if entry is not None and entry.mode == TREE_MODE else None
        return entry

    def ids_at(self, tree: str | None, paths: Iterable[tuple[bytes, ...]]) -> list[str | None]:
        """The object id at each of `paths` in `tree` (None: nothing there), each folder looked
        up once (a pass asks about every decided file of an agent: hundreds in one folder)."""
        folders: dict[tuple[bytes, ...], Mapping[bytes, Entry]] = {}
        found: list[str | None] = []
        for path in paths:
            folder = path[:-1]
            if folder not in folders:
                folders[folder] = self._folder_entries(tree, folder)
            entry = folders[folder].get(path[-1]) if path else None
            found.append(entry.sha if entry is not None else None)
        return found

    def _folder_entries(self, tree: str | None, folder: tuple[bytes, ...]) -> Mapping[bytes, Entry]:
        """The entries of the folder at `folder` in `tree`; none when there is no such folder."""
        if folder:
            entry = self.entry_at(tree, folder)
            tree = entry.sha if entry is not None and entry.mode == TREE_MODE else None
        return self.read_tree(tree) if tree is not None else {}

    def edit(self, tree: str | None, changes: Changes) -> str | None:
        """The id of `tree` with `changes` made; None when nothing is left in it.

        Every new tree's id is worked out here, as git would, so that the trees on the way to
        all changed paths (a folder needs its subfolders' ids) go to git in one request rather
        than one round trip per folder; git checks that each names objects it has, and its
        answers must be the ids worked out.
        """
        size = len(tree) // 2 if tree else _id_size(changes)
        new: list[_NewTree] = []
        edited = self._edit(tree, changes, size, new)
        stored = self._store(new)
        if stored != [made.sha for made in new]:
            raise GitError(
                "git stored the new trees under other ids than feedbackd worked out",
                hint="nothing was committed; please report this with `git --version`",
            )
        for made in new:  # kept as written: the next change starts from these trees
            self._keep(made.sha, made.entries)
        return edited

    def _store(self, trees: list[_NewTree]) -> list[str]:
        native = self._batch.native() if self._in_process else None
        if native is not None:
            with contextlib.suppress(LeftToGit):  # git's mktree stores them, or says why
                return [native.store("tree", made.body) for made in trees]
        return self._batch.store_trees([tree_listing(made.entries) for made in trees])

    def _edit(
        self,
        tree: str | None,
        changes: Changes,
        size: int,
        new: list[_NewTree],
    ) -> str | None:
        """`edit` without storing: the new trees go to `new`, each after its subfolders."""
        entries = dict(self.read_tree(tree)) if tree is not None else {}
        before = dict(entries)
        below: dict[bytes, dict[tuple[bytes, ...], Entry | None]] = {}
        for path, entry in changes.items():
            if len(path) > 1:
                below.setdefault(path[0], {})[path[1:]] = entry
            elif entry is None:
                entries.pop(path[0], None)
            else:
                entries[path[0]] = entry
        for name, inner in below.items():
            current = entries.get(name)
            subtree = current.sha if current is not None and current.mode == TREE_MODE else None
            edited = self._edit(subtree, inner, size, new)
            if edited is None:
                entries.pop(name, None)
            else:
                entries[name] = Entry(TREE_MODE, edited)
        if entries == before and tree is not None:
            return tree
        if not entries:
            return None
        body = tree_body(entries)
        new.append(_NewTree(_body_id(body, size), entries, body))
        return new[-1].sha

    def read_tree(self, tree: str) -> Mapping[bytes, Entry]:
        """The entries of `tree` (read once, then kept: do not change them)."""
        entries = self._parsed.get(tree)
        if entries is not None:
            return entries
        found = self._batch.read(tree)
        if found is None or found.kind != "tree":
            raise RepositoryDamaged(f"the repository lacks tree {tree}, which a commit names")
        entries = parse_tree(found.content, id_size=len(tree) // 2)
        self._keep(tree, entries)
        return entries

    @property
    def entries_kept(self) -> int:
        """The entries of all the trees kept parsed."""
        return self._parsed.weight

    def _keep(self, tree: str, entries: dict[bytes, Entry]) -> None:
        if self._parsed.get(tree) is None:  # kept already: now the most recently used
            self._parsed.put(tree, entries)
