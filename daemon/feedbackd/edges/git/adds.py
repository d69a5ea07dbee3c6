"""Which commit last added each file of the folders named `folder` one level below `under` (the
drafts of every agent's queue/), worked out from commits and trees alone.

`git log --diff-filter=A` answers this for a whole history in one walk, which on a long history
costs far more than a decision. What usually lies between the commit a caller last knew and
HEAD is a few commits, each on top of the one before (the daemon's own decisions, a user's
commit, a fast-forward pull): their adds are read here from the long-lived `cat-file`, tree
against parent tree along the way to the changed folders only, and no git process is started.
Anything else (a merge, a reset, a long stretch) is left to the caller, which walks again.
"""

from __future__ import annotations

from feedbackd.edges.git.batch import GitBatch, GitObject
from feedbackd.edges.git.runner import rel_path
from feedbackd.edges.git.tree import TREE_MODE, Entry, parse_tree

# Commits read one by one, back from the newer commit, before the caller is told to walk.
LINE_MAX = 64

Adds = dict[str, str]  # path (relative to the repository) → the commit that added it


def adds_in_line(
    batch: GitBatch, old: str, new: GitObject, under: str, folder: str
) -> list[Adds] | None:
    """The files directly in an `under/*/folder/` that each commit after `old` up to `new`
    added (as `git log --diff-filter=A --no-renames` counts an add), one mapping per commit,
    newest first; None when `new` does not reach `old` through at most LINE_MAX commits of one
    parent each."""
    found: list[Adds] = []
    commit = new
    for _ in range(LINE_MAX):
        if commit.sha == old:
            return found
        parents = _parents(commit.content)
        if len(parents) != 1:
            return None  # a merge, or the first commit: not a line down to `old`
        found.append(_adds_of(batch, commit.sha, parents[0], rel_path(under), folder))
        parent = batch.read(parents[0])
        if parent is None or parent.kind != "commit":
            return None
        commit = parent
    return None


def in_folders(path: str, under: str, folder: str) -> bool:
    """True for `under/<name>/folder/<file>`, the paths adds_in_line looks at."""
    prefix = rel_path(under) + "/"
    if not path.startswith(prefix):
        return False
    parts = path[len(prefix) :].split("/")
    return len(parts) == 3 and parts[1] == folder and all(parts)


def _adds_of(batch: GitBatch, commit: str, parent: str, under: str, folder: str) -> Adds:
    """What `commit` added against its one parent, in the folders adds_in_line looks at."""
    new, old = _tree(batch, f"{commit}:{under}"), _tree(batch, f"{parent}:{under}")
    if new is None or (old is not None and old.sha == new.sha):
        return {}
    name = folder.encode("utf-8", "surrogateescape")
    before = _entries(old)
    found: Adds = {}
    for owner, entry in _entries(new).items():
        was = before.get(owner)
        if entry.mode != TREE_MODE or was == entry:
            continue
        inside = _child_tree(batch, entry, name)
        gone = _child_tree(batch, was, name) if was is not None else None
        if inside is None or (gone is not None and gone.sha == inside.sha):
            continue
        had = _entries(gone)
        for file, added in _entries(inside).items():
            was_there = had.get(file)
            # A folder's files are deeper: only its own files count; a file where a folder
            # was is an add (git's diff shows the folder's files deleted).
            if added.mode != TREE_MODE and (was_there is None or was_there.mode == TREE_MODE):
                path = b"/".join((owner, name, file)).decode("utf-8", "surrogateescape")
                found[f"{under}/{path}"] = commit
    return found


def _child_tree(batch: GitBatch, entry: Entry | None, name: bytes) -> GitObject | None:
    """The folder `name` inside the folder `entry`; None when either is no folder."""
    if entry is None or entry.mode != TREE_MODE:
        return None
    child = _entries(_tree(batch, entry.sha)).get(name)
    return _tree(batch, child.sha) if child is not None and child.mode == TREE_MODE else None


def _tree(batch: GitBatch, name: str) -> GitObject | None:
    """The tree `name` names; None when it names none."""
    found = batch.read(name) if "\n" not in name else None
    return found if found is not None and found.kind == "tree" else None


def _entries(tree: GitObject | None) -> dict[bytes, Entry]:
    return parse_tree(tree.content, id_size=len(tree.sha) // 2) if tree is not None else {}


def _parents(content: bytes) -> list[str]:
    """A raw commit object's parents."""
    headers = content.partition(b"\n\n")[0]
    return [
        line[len(b"parent ") :].decode("ascii", "replace")
        for line in headers.split(b"\n")
        if line.startswith(b"parent ")
    ]
