"""HEAD's commit read from git's own files, as git reads them.

`.git/HEAD` names a branch (`ref: refs/heads/main`) whose loose ref file holds the commit id, or
holds an id itself (a detached HEAD). git and libgit2 replace a ref file whole (a lock file
renamed over it), so a read sees the old id or the new one: two small reads instead of a round
trip to git, as fresh. Anything else (a branch only in packed-refs, an unborn branch, a linked
worktree, another object format or ref storage) is left to git: head_commit says None.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_BRANCH = re.compile(rb"ref: (refs/heads/[^\0\n]+)\n?")
_COMMIT_ID = re.compile(rb"([0-9a-f]{40})\n?")


def head_commit(git_dir: Path) -> str | None:
    """The commit HEAD names, from `.git/HEAD` and its branch's ref file; None when git must
    say (see the module's docstring)."""
    # Bare system calls: a pass over a big site asks this hundreds of times (twice as fast as
    # pathlib's reads).
    where = os.fspath(git_dir)
    try:
        os.stat(os.path.join(where, "commondir"))
        return None  # a linked worktree: the branches live in the main repository
    except FileNotFoundError:
        pass
    except OSError:
        return None
    try:
        head = _small_file(os.path.join(where, "HEAD"))
        branch = _BRANCH.fullmatch(head)
        if branch is not None:
            name = branch.group(1).decode("utf-8", "surrogateescape")
            if ".." in name.split("/") or name.endswith(".lock"):
                return None
            head = _small_file(os.path.join(where, name))
    except OSError:  # no loose ref (packed, or not born yet)
        return None
    found = _COMMIT_ID.fullmatch(head)
    return found.group(1).decode() if found is not None else None


def _small_file(path: str) -> bytes:
    """The first 4 KB of a file: more than HEAD or a ref file holds."""
    descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(descriptor, 4096)
    finally:
        os.close(descriptor)


def resolved(name: str, git_dir: Path) -> str:
    """`name` with a leading HEAD replaced by its commit id, where head_commit knows it."""
    if name == "HEAD" or name.startswith("HEAD:"):
        commit = head_commit(git_dir)
        if commit is not None:
            return commit + name[4:]
    return name
