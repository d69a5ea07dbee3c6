"""The drafts as first seen in queue/ (which an approval is diffed against), kept as local state
in `.feedbackd/snapshots/{agent}/`: a copy of the file, or, for a draft whose first version git
holds, its name in that folder's IN_GIT list; that version is the one of the commit that last
added the draft (DraftAdds, kept in `.feedbackd/draft-adds`).

A fresh clone of a big site holds thousands of committed drafts in hundreds of agents. Their
first versions are looked up for many agents at once (FirstVersions): one listing of untracked
files, the drafts' commits (one walk of history, kept) and one `git cat-file --batch` for up to
CHUNK drafts, instead of four git processes per agent; and they are remembered with one write
per agent, not one file per draft.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.curation import agentplan
from feedbackd.core.workspacepaths import ITEM_SUFFIXES, AgentPaths
from feedbackd.edges.files import (
    atomic_write_bytes,
    atomic_write_text,
    read_file_bytes,
    read_file_text,
)
from feedbackd.edges.git.adds import LINE_MAX, in_folders
from feedbackd.edges.git.repo import GitRepo, history_of

log = logging.getLogger("feedbackd")

IN_GIT = ".in-git"  # names of drafts as git first had them (an item id never starts with ".")
CHUNK = 2000  # drafts whose first versions are read from git at once: bounds the memory held
# A file unchanged since this long before git listed the untracked files was seen by it: more
# than the file system's clock lags behind time.time() (one tick of the kernel's coarse clock).
SETTLED_S = 0.05
QUEUE = "queue"
ADDS_FILE = "draft-adds"  # in .feedbackd/: DraftAdds
_ADDS_HEADER, _ADDS_END = "feedbackd draft adds 1", "end"
# Commits the kept answer may move past the file before the file is written again: half of what
# the next process reads from the trees before it walks history instead.
SAVE_AFTER = LINE_MAX // 2


def snapshot_path(runtime: Runtime, agent: AgentPaths, name: str) -> Path:
    return runtime.workspace.snapshot(agent.agent_id, name)


def remembered(runtime: Runtime, agent: AgentPaths) -> set[str]:
    """The file names of the agent's drafts whose first version is kept, from one listing."""
    try:
        copies = set(os.listdir(snapshot_path(runtime, agent, IN_GIT).parent))
    except (FileNotFoundError, NotADirectoryError):
        return set()
    return copies | kept_in_git(runtime, agent) if IN_GIT in copies else copies


def kept_in_git(runtime: Runtime, agent: AgentPaths) -> set[str]:
    """The drafts remembered as git first had them (remember_drafts)."""
    try:
        text = read_file_text(snapshot_path(runtime, agent, IN_GIT))
    except (OSError, UnicodeDecodeError):
        return set()
    return set(text.split())


def remember_drafts(
    runtime: Runtime,
    agent: AgentPaths,
    snapshots: Sequence[agentplan.Snapshot],
    repo: GitRepo | None = None,
) -> None:
    """Keep the drafts as first seen. A draft whose first version git holds is only named in
    the agent's IN_GIT list, one write for all of them: an approval reads that version back
    from git. Any other is copied as its draft commit holds it (the curator may be editing it
    already), or without git as the file is now.

    With git, every draft is in history before it is remembered (the pass commits new drafts
    first), so the copies are written without fsync: one that a power cut left empty is read
    from git instead. Without git a copy is the only record, and is made durable."""
    in_git = {snapshot.file.path.name for snapshot in snapshots if snapshot.first_version}
    for snapshot in snapshots:
        path = snapshot.file.path
        if path.name not in in_git:
            data = _as_committed(runtime, repo, path)
            if data is None:
                # Moved on (to approved/) since its draft commit: that commit stands for it.
                continue
            target = snapshot_path(runtime, agent, path.name)
            atomic_write_bytes(target, data, durable=not runtime.git_enabled)
    if in_git:
        lines = "".join(f"{name}\n" for name in sorted(kept_in_git(runtime, agent) | in_git))
        atomic_write_text(snapshot_path(runtime, agent, IN_GIT), lines, durable=False)


def _as_committed(runtime: Runtime, repo: GitRepo | None, path: Path) -> bytes | None:
    """The draft as HEAD holds it, else as the file is now; None when it is gone."""
    committed = repo.file_at_head(runtime.workspace.relative(path)) if repo else None
    if committed is not None:
        return committed
    try:
        return read_file_bytes(path)
    except FileNotFoundError:
        return None


def move_drafts(runtime: Runtime, old: AgentPaths, new: AgentPaths) -> None:
    """Keep the drafts of an agent folder renamed from `old` to `new` as they were first seen:
    its copies go with it (those `new` already holds stay), and so do the names in IN_GIT."""
    source = snapshot_path(runtime, old, IN_GIT).parent
    target = snapshot_path(runtime, new, IN_GIT).parent
    if not source.is_dir():
        return
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        source.rename(target)
        return
    in_git = kept_in_git(runtime, old) | kept_in_git(runtime, new)
    for copy in source.iterdir():
        if copy.name != IN_GIT and not (target / copy.name).exists():
            copy.rename(target / copy.name)
    if in_git:
        lines = "".join(f"{name}\n" for name in sorted(in_git))
        atomic_write_text(target / IN_GIT, lines, durable=False)
    shutil.rmtree(source, ignore_errors=True)


class FirstVersions:
    """The first committed versions of the new drafts of the agents of one pass, read from git
    for CHUNK drafts at a time (only the current chunk's are held).

    A draft counts as committed when git's listing of untracked files did not name it, and as
    new when it did, if the file had not changed for SETTLED_S before that listing; for an
    agent with a draft that changed since, `of` answers None and the agent asks git on its
    own."""

    def __init__(self, runtime: Runtime, agents: Sequence[str], adds: DraftAdds) -> None:
        self.runtime = runtime
        self.adds = adds  # the drafts' commits, kept (shared with the approvals of the pass)
        self.waiting = list(agents)  # agents whose drafts no chunk has covered yet
        self.chunk: set[str] = set()
        self.found: dict[str, bytes] = {}  # path (relative) → first version, for the chunk
        self.untracked: set[str] = set()
        self.listed_at = 0.0

    def of(
        self, repo: GitRepo, agent: AgentPaths, paths: Collection[str]
    ) -> dict[str, bytes] | None:
        """path → first version for those of `paths` (the agent's new drafts, relative) that git
        holds; None when this agent's drafts must be looked up on their own."""
        if agent.agent_id not in self.chunk:
            self._read_chunk(repo, agent.agent_id)
        if any(self._changed(path) for path in paths):
            return None
        return {path: self.found[path] for path in paths if path in self.found}

    def _read_chunk(self, repo: GitRepo, first: str) -> None:
        agents, wanted = [first], self._candidates(first)
        self.waiting = [agent for agent in self.waiting if agent != first]
        while self.waiting and len(wanted) < CHUNK:
            agent = self.waiting.pop(0)
            agents.append(agent)
            wanted.extend(self._candidates(agent))
        self.chunk, self.found = set(agents), {}  # the last chunk's versions are let go first
        under = self.runtime.workspace.relative(self.runtime.workspace.agents_dir)
        self.listed_at = time.time()
        self.untracked = set(repo.listings.untracked_paths(under))
        tracked = [path for path in wanted if path not in self.untracked]
        self.found = self.adds.of(repo, tracked, together=True) if tracked else {}

    def _candidates(self, agent_id: str) -> list[str]:
        """The agent's queued files it has no first version of (decided ones included)."""
        agent = self.runtime.workspace.agent(agent_id)
        try:
            names = os.listdir(agent.queue)
        except (FileNotFoundError, NotADirectoryError):
            return []
        kept = remembered(self.runtime, agent)
        return [
            self.runtime.workspace.relative(agent.queue / name)
            for name in names
            if Path(name).suffix in ITEM_SUFFIXES and not name.startswith(".") and name not in kept
        ]

    def _changed(self, path: str) -> bool:
        """True when the file may have changed after git listed the untracked files (or is
        gone): git's answer about it is not to be trusted."""
        try:
            changed_at = os.stat(self.runtime.workspace.root / path).st_ctime
        except OSError:
            return True
        return changed_at >= self.listed_at - SETTLED_S


class DraftAdds:
    """The draft commit of each draft the agents' queue/ folders ever had: queue path → the
    newest commit of HEAD's history that added it (as `git log --diff-filter=A` says). An
    approval of a draft remembered as git first had it (a clone's), or of one this machine never
    saw in queue/, is diffed against that commit's version; a fresh clone's drafts are
    remembered from it.

    A walk of the whole history costs more with every decision, so it is made once: the answer
    is kept for the commit it holds for, in this process and in `.feedbackd/draft-adds` (local
    state, never committed). When HEAD has moved on by a few commits of one parent each (the
    daemon's decisions, a user's commit, a fast-forward pull), their adds are read from their
    trees (edges/git/adds.py) and laid over it; after anything else (a reset, a merge, a long
    stretch) or without a usable file (lost, damaged, another data folder), history is walked
    again, once. The file is written after a walk, and again once the kept answer has moved
    SAVE_AFTER commits past it, so that the next process starts within reach of HEAD."""

    def __init__(self, runtime: Runtime) -> None:
        self.path = runtime.workspace.state_dir / ADDS_FILE
        self.under = runtime.workspace.relative(runtime.workspace.agents_dir)
        self._at: str | None = None  # the commit the kept answer holds for
        self._adds: dict[str, str] | None = None
        self._unsaved = 0  # commits laid over the answer since the file was written
        self.walks = 0  # history walks made (for tests: a walk is what this saves)

    def of(
        self, repo: GitRepo, paths: Collection[str], *, together: bool = False
    ) -> dict[str, bytes]:
        """path → the draft as its last adding commit holds it, for those of `paths` (drafts'
        paths in queue/, relative to the workspace) that a commit added; `together`: read by
        a git process of their own (many drafts), not one round trip each."""
        added = self.commits(repo)
        wanted = {path: added[path] for path in paths if path in added}
        return repo.files_at_commits(wanted, together=together)

    def commits(self, repo: GitRepo) -> Mapping[str, str]:
        """queue path → the commit that last added it, for HEAD as it is now."""
        head = history_of(repo).head()
        if head is None:
            return {}
        if self._adds is None:
            self._load()
        if self._adds is not None and self._at != head:
            self._catch_up(repo, head)
        if self._adds is None or self._at != head:
            self.walks += 1
            self._adds = history_of(repo).last_adds(head, self.under, self._keeps)
            self._at = head
            self._save()
        return self._adds

    def _catch_up(self, repo: GitRepo, head: str) -> None:
        """Lay the adds of the commits since the kept answer's over it, when HEAD is a few
        commits of one parent each on top of it."""
        assert self._adds is not None and self._at is not None
        newer = history_of(repo).adds_since(self._at, head, self.under, QUEUE)
        if newer is None:
            return
        for adds in reversed(newer):  # the oldest first: the newest add of a path wins
            self._adds.update((path, sha) for path, sha in adds.items() if "\n" not in path)
        self._at = head
        self._unsaved += len(newer)
        if self._unsaved >= SAVE_AFTER:
            self._save()

    def _keeps(self, path: str) -> bool:
        # A name with a line break is no item's (an id never holds one) and fits no line here.
        return in_folders(path, self.under, QUEUE) and "\n" not in path

    def _load(self) -> None:
        """The answer kept in the file, when it is whole and for this data folder."""
        try:
            text = read_file_text(self.path, "surrogateescape")
        except OSError:  # none, or unreadable: walked again
            return
        lines = text.split("\n")
        if lines[:2] != [_ADDS_HEADER, self.under] or lines[-2:] != [_ADDS_END, ""]:
            return  # damaged, cut short, or for another data folder: walked again
        prefix, adds, commit = self.under + "/", {}, ""
        for line in lines[3:-2]:
            if "/" not in line:
                commit = line  # the commit of the paths that follow
            elif commit:
                adds[prefix + line] = commit
        self._at, self._adds, self._unsaved = lines[2], adds, 0

    def _save(self) -> None:
        """Write the answer, grouped by commit (most drafts of a site came in a few): local
        state that a walk rebuilds, so without fsync."""
        assert self._adds is not None and self._at is not None
        by_commit: dict[str, list[str]] = {}
        start = len(self.under) + 1
        for path, sha in self._adds.items():
            by_commit.setdefault(sha, []).append(path[start:])
        lines = [_ADDS_HEADER, self.under, self._at]
        for sha, paths in by_commit.items():
            lines += [sha, *paths]
        lines += [_ADDS_END, ""]
        data = "\n".join(lines).encode("utf-8", "surrogateescape")
        try:
            atomic_write_bytes(self.path, data, durable=False)
        except OSError as error:  # a full disk: the next process walks again
            log.info("could not keep the drafts' first commits in %s: %s", self.path, error)
        self._unsaved = 0
