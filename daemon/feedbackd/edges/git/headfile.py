"""HEAD's commit read from git's own files, as git reads them.

`.git/HEAD` names a branch (`ref: refs/heads/main`) whose loose ref file holds the commit id, or
holds an id itself (a detached HEAD). git and libgit2 replace a ref file whole (a lock file
renamed over it), so a read sees the old id or the new one: two small reads instead of a round
trip to git, as fresh. Anything else (a branch only in packed-refs, an unborn branch, a linked
worktree, another object format or ref storage) is left to git: head_commit says None.
"""

from __future__ import annotations

import re
from pathlib import Path

_BRANCH = re.compile(rb"ref: (refs/heads/[^\0\n]+)\n?")
_COMMIT_ID = re.compile(rb"([0-9a-f]{40})\n?")


def head_commit(git_dir: Path) -> str | None:
    """The commit HEAD names, from `.git/HEAD` and its branch's ref file; None when git must
    say (see the module's docstring)."""
    if (git_dir / "commondir").exists():
        return None  # a linked worktree: the branches live in the main repository
    try:
        head = (git_dir / "HEAD").read_bytes()
        branch = _BRANCH.fullmatch(head)
        if branch is not None:
            name = branch.group(1).decode("utf-8", "surrogateescape")
            if ".." in name.split("/") or name.endswith(".lock"):
                return None
            head = (git_dir / name).read_bytes()
    except OSError:  # no loose ref (packed, or not born yet)
        return None
    found = _COMMIT_ID.fullmatch(head)
    return found.group(1).decode() if found is not None else None


def resolved(name: str, git_dir: Path) -> str:
    """`name` with a leading HEAD replaced by its commit id, where head_commit knows it."""
    if name == "HEAD" or name.startswith("HEAD:"):
        commit = head_commit(git_dir)
        if commit is not None:
            return commit + name[4:]
    return name
