"""One change, one commit: the paths of the change, its message and trailers, its author.

Every writer (decisions, `record`, ratings, price and description changes) plans its change as
a core/changes.py Change and applies it here (`write_change`, then `commit_change`; together
`apply_change`), so files are written the same way and subjects, trailers and authorship read
the same in `git log` whoever made the change.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.changes import Append, Change, CommitRequest, Write
from feedbackd.core.commitmsg import build_message
from feedbackd.core.workspacepaths import ALL_ITEM_FOLDERS, ITEM_SUFFIXES
from feedbackd.edges.files import TMP_SUFFIX, append_line, atomic_write_bytes, atomic_write_text
from feedbackd.edges.git.repo import GitRepo

log = logging.getLogger("feedbackd")


class TextWriter(Protocol):
    def __call__(self, path: Path, text: str, *, within: Path | None = None) -> None: ...


@dataclass(frozen=True)
class Event:
    """Something feedbackd recorded: what `run --once` prints and `status` counts."""

    event: str
    agent: str
    summary: str
    item: str | None = None
    commit: str | None = None
    skill: str | None = None
    # What the change asks a person to check (a rating of a provider whose name looks like a
    # typo); logged when it happens, answered by the command or route that asked for it.
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "event": self.event,
            "agent": self.agent,
            "skill": self.skill,
            "item": self.item,
            "summary": self.summary,
            "commit": self.commit,
        }


__all__ = ["CommitRequest", "Event", "apply_change", "commit_change", "write_change"]


def apply_change(runtime: Runtime, repo: GitRepo | None, change: Change) -> Event | None:
    """Write the change, then commit it (see commit_change)."""
    write_change(change)
    return commit_change(runtime, repo, change.commit)


def write_change(change: Change, write_text: TextWriter = atomic_write_text) -> None:
    """The change's writes, lines and removals, in its order; nothing is made where the folder
    it lives in (`within`) was: moved away meanwhile (FileNotFoundError). `write_text` writes
    a whole text file atomically (the caller's own, where it names one)."""
    within = change.commit.within
    for action in change.actions:
        if isinstance(action, Write) and action.exact:
            atomic_write_bytes(action.path, action.text.encode("utf-8"), within=within)
        elif isinstance(action, Write):
            write_text(action.path, action.text, within=within)
        elif isinstance(action, Append):
            append_line(action.path, action.line, within=within)
        else:
            action.path.unlink(missing_ok=True)


def commit_change(runtime: Runtime, repo: GitRepo | None, request: CommitRequest) -> Event | None:
    """Commit exactly the request's paths; None when git already holds them (nothing to do)."""
    sha = None
    if repo is not None:
        message = build_message(
            request.event,
            request.agent,
            request.summary,
            skill=request.skill,
            body=request.body,
            trailers=request.trailers,
        )
        # feedbackd's own act when the request names nobody: a curator's names the curator.
        author = request.author or runtime.committer
        paths = relative_paths(runtime, request.paths)
        within = runtime.workspace.relative(request.within) if request.within else None
        needed = relative_paths(runtime, request.needed)
        sha = repo.commit_paths(paths, message, author, within, needed)
        if sha is None:
            return None  # already committed (a fresh clone, or the user's own commit)
        _put_back_removed(runtime, repo, request)
    where = f"{request.agent}/{request.skill}" if request.skill else request.agent
    log.info("%s(%s): %s", request.event, where, request.summary)
    return Event(request.event, request.agent, request.summary, request.item, sha, request.skill)


def _put_back_removed(runtime: Runtime, repo: GitRepo, request: CommitRequest) -> None:
    """Write back, as the commit holds them, the files a racing `git clean` removed.

    `git clean` takes no lock: one that read the index before a commit reached it takes the
    files the commit adds for untracked, and may remove them right after the commit stored
    them. HEAD and the index then hold a file the work tree lacks, and `git status` shows a
    deletion nobody chose. Had the commit come a moment sooner, `git clean` would have kept
    the files as tracked, so that is what is made true. An item moved on to another folder
    meanwhile is where its curator put it, and stays there.
    """
    repo.users_git.settle(look_afresh=True)  # a `git clean` still running may remove more
    within = request.within or runtime.workspace.root
    gone = [path for path in request.paths if not os.path.lexists(path)]
    missing = {runtime.workspace.relative(path): path for path in gone}
    # A decision names its item in every folder it could be in: most were never there, and
    # one is the item's old place, which the commit deleted. HEAD has nothing at those.
    committed = repo.file_ids_at_head(list(missing)) if missing else {}
    for rel, path in missing.items():
        if committed[rel] is None or _moved_on(path):
            continue
        try:
            # False for a path the commit deleted, or one removed before it was stored
            put_back = repo.put_back(rel, within)
        except FileNotFoundError:
            continue  # its folder was moved away (an agent renamed)
        if put_back:
            log.warning("%s was removed while it was committed (a `git clean`?); put back", rel)


def _moved_on(path: Path) -> bool:
    """An item file whose item now lies in another of its agent's folders."""
    if path.parent.name not in ALL_ITEM_FOLDERS or path.suffix not in ITEM_SUFFIXES:
        return False
    agent = path.parent.parent
    return any(
        (agent / folder / f"{path.stem}{suffix}").exists()
        for folder in ALL_ITEM_FOLDERS
        for suffix in ITEM_SUFFIXES
    )


def relative_paths(runtime: Runtime, paths: Sequence[Path]) -> list[str]:
    """Workspace-relative, de-duplicated, never a temporary file of an unfinished write."""
    seen: dict[str, None] = {}
    for path in paths:
        if not path.name.endswith(TMP_SUFFIX):
            seen.setdefault(runtime.workspace.relative(path), None)
    return list(seen)
