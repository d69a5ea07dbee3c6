"""Which paths of the work tree and of HEAD are where: the listings a pass asks git for (new
drafts, decided files changed since their commit, the folders and files of a committed agent).
GitRepo (edges/git/repo.py) is the door; `repo.listings` answers these."""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence

from feedbackd.core.curation.reverts import GREP as REVERT_GREP
from feedbackd.core.curation.reverts import Undone, reverted_by
from feedbackd.edges.git.batch import GitBatch
from feedbackd.edges.git.runner import GitRunner, added_files, rel_path, revision
from feedbackd.edges.git.tree import TREE_MODE, parse_tree


def folders_at_head(batch: GitBatch, under: str) -> list[str]:
    """The names of the folders directly in `under` at HEAD (none when it has no such folder),
    from the long-lived cat-file: cheap enough for every pass."""
    found = batch.read(f"HEAD:{rel_path(under)}") if "\n" not in under else None
    if found is None or found.kind != "tree":
        return []
    return list(_folders_of(found.sha, found.content))


@functools.lru_cache(maxsize=8)
def _folders_of(sha: str, content: bytes) -> tuple[str, ...]:
    """The folders of one tree; kept for the next pass, which most often asks about the same
    tree (every agent's pass asks for the agents folder)."""
    entries = parse_tree(content, id_size=len(sha) // 2)
    return tuple(
        sorted(
            name.decode("utf-8", "surrogateescape")
            for name, entry in entries.items()
            if entry.mode == TREE_MODE
        )
    )


def files_at_head(git: GitRunner, batch: GitBatch, under: str) -> list[str]:
    """Every file below the folder `under` at HEAD, named relative to it."""
    if not _has_head(batch):
        return []
    folder = rel_path(under).rstrip("/") + "/"
    args = ["ls-tree", "-r", "-z", "--name-only", "--full-tree", "HEAD", "--", folder]
    return sorted(
        name.removeprefix(folder) for name in _names(git, args) if name.startswith(folder)
    )


def changed_paths(git: GitRunner, under: Sequence[str]) -> list[str]:
    """Paths below the folders (or the files) `under` that differ from HEAD: modified, deleted,
    added or untracked. Git looks at no file outside them (a big site's drafts are not read)."""
    args = ["status", "--porcelain", "-z", "--no-renames", "--untracked-files=all", "--"]
    specs = [_spec(path) for path in under]
    return sorted({entry[3:] for entry in _names(git, [*args, *specs]) if len(entry) > 3})


def modified_paths(git: GitRunner, batch: GitBatch, under: Sequence[str]) -> list[str]:
    """Tracked files below the folders `under` whose work-tree file differs from HEAD, or may
    (git compares the file's size and times with the index's, and reads the content only where
    those cannot tell): modified, deleted, or staged."""
    if not under or not _has_head(batch):
        return []
    args = ["diff-index", "--name-only", "-z", "--no-renames", "HEAD", "--"]
    return sorted(_names(git, [*args, *(rel_path(folder) for folder in under)]))


def untracked_paths(git: GitRunner, under: str) -> list[str]:
    """Files below `under` that git does not track (and does not ignore)."""
    args = ["ls-files", "-z", "--others", "--exclude-standard", "--", _spec(under)]
    return sorted(_names(git, args))


class Listings:
    """The listings of one open repository (GitRepo.listings): paths untracked, changed or
    in HEAD, and the commits of HEAD's history that a revert undid."""

    def __init__(self, git: GitRunner, batch: GitBatch) -> None:
        self._git, self._batch = git, batch

    def folders_at_head(self, under: str) -> list[str]:
        return folders_at_head(self._batch, under)

    def files_at_head(self, under: str) -> list[str]:
        return files_at_head(self._git, self._batch, under)

    def changed_paths(self, *under: str) -> list[str]:
        return changed_paths(self._git, under)

    def modified_paths(self, under: Sequence[str]) -> list[str]:
        return modified_paths(self._git, self._batch, under)

    def untracked_paths(self, under: str) -> list[str]:
        return untracked_paths(self._git, under)

    def read_ahead_folders(self, under: str, names: Collection[str]) -> None:
        """Ask git together for the trees at HEAD of the folders in `under` and of their
        subfolders named `names` (each agent's folder, its approved/ and rejected/): a pass
        that looks up its decided files' ids in them then reads them without a round trip
        each. Two git processes, however many folders."""
        top = self._batch.read(f"HEAD:{rel_path(under)}") if "\n" not in under else None
        if top is None or top.kind != "tree":
            return
        size = len(top.sha) // 2
        folders = [e.sha for e in parse_tree(top.content, size).values() if e.mode == TREE_MODE]
        self._batch.read_ahead(folders)
        wanted = {name.encode("utf-8", "surrogateescape") for name in names}
        inner = []
        for sha in folders:
            found = self._batch.read(sha)
            if found is not None and found.kind == "tree":
                entries = parse_tree(found.content, size).items()
                inner += [e.sha for n, e in entries if n in wanted and e.mode == TREE_MODE]
        self._batch.read_ahead(inner)

    def paths_changed(self, old: str | None, new: str) -> list[str]:
        """Paths that differ between two commits (every path of `new` when old is None)."""
        args = ["diff-tree", "-r", "-z", "--name-only", "--no-renames", "--no-commit-id"]
        return sorted(_names(self._git, [*args, old or self._git.tree_of(None), revision(new)]))

    def undone(self) -> Undone:
        """The commits of HEAD's history that a `git revert` undid (and no revert of the revert
        put back), from one walk that git filters to the revert commits."""
        if not _has_head(self._batch):
            return Undone({})
        args = ["log", "-E", f"--grep={REVERT_GREP}", "--format=%H%x00%B%x00", "HEAD"]
        parts = self._git.run(args).decode("utf-8", errors="replace").split("\0")
        reverts = {
            parts[index].strip(): reverted_by(parts[index + 1])
            for index in range(0, len(parts) - 1, 2)
        }
        return Undone(reverts)

    def adds(self, folders: Sequence[str], since: str | None = None) -> list[tuple[str, int, str]]:
        """(path, author time in unix seconds, commit) of each file added in one of `folders`,
        newest first, from one history walk; with `since`, only in the commits HEAD has that
        `since` lacks. The author time is the commit's own: a rebase (remote sync) keeps it,
        where it gives the commit a new committer time."""
        if not folders or not _has_head(self._batch):
            return []
        span = ["HEAD", *([f"^{revision(since)}"] if since else [])]
        args = ["log", "--no-renames", "--diff-filter=A", "--format=%x01%at %H", "--name-only"]
        specs = [rel_path(folder) for folder in folders]
        out = self._git.run([*args, "-z", *span, "--", *specs])
        found = []
        for head, name in added_files(out):
            when, _, commit = head.partition(" ")
            found.append((name, int(when), commit))
        return found

    def commits_only_in(self, commit: str, other: str) -> list[str]:
        """The commits `commit` holds that `other` lacks: what a reset or a rebase dropped
        when `commit` was HEAD before and `other` is HEAD now. GitError when `commit` is no
        commit of the repository any more."""
        args = ["rev-list", revision(commit), f"^{revision(other)}", "--"]
        return self._git.run(args).decode().split()


def _has_head(batch: GitBatch) -> bool:
    """False on a branch with no commit yet (asked of the long-lived cat-file, no process)."""
    head = batch.read("HEAD")
    return head is not None and head.kind == "commit"


def _spec(under: str) -> str:
    return rel_path(under) if under not in ("", ".") else "."


def _names(git: GitRunner, args: list[str]) -> list[str]:
    """The NUL-separated names a git command prints."""
    out = git.run(args).decode("utf-8", errors="surrogateescape")
    return [name for name in out.split("\0") if name]
