"""Agents whose folder is as a full pass that found nothing to do left it: `run --once` need
not read them again.

An idle `run --once` on a big site reads every agent folder (a listing of each item folder, a
path made for each of thousands of drafts, feedback.json and the ledger parsed) to find that
nothing is missing. What such a pass reads is the agent's folders and files, what HEAD holds
of them, and the settings: `.feedbackd/quiet-agents` keeps, for each agent whose last pass
reported nothing, a digest of the state of all of them (of HEAD, the id of the agent's folder
in it: another agent's decision leaves it as it was). A pass whose digest is unchanged would
read what the last one read, so it is left out.

The state of a file or folder is its inode, size, modification and change times (the change
time moves on any write, even one that puts the modification time back); a folder's times move
when an entry is added, removed or renamed in it, so the queued drafts themselves are not
looked at: a pass never reads a draft it has remembered, and any other draft is work, which no
quiet agent has. A decided file is looked at one by one (a curator's edit is a revision).

A digest is kept only when every time in it is older than RACY_S before it was taken: a change
made right after a look, within one tick of the file system's clock, could leave every time as
it was (git's own index knows the same "racy" case). The digest is taken before the pass reads
the folder, so a change during the pass makes the next one differ. Anything unusual makes the
agent a plain one again: a symbolic link among its items, a webhouse queue (whose one file
holds every agent's decisions), git off, a digest that cannot be taken.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from feedbackd.app.curation.draftmemory import IN_GIT, snapshot_path
from feedbackd.app.curation.webhousequeue import queue_file
from feedbackd.app.report import Report
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.curation import agentplan
from feedbackd.core.workspacepaths import (
    ALL_ITEM_FOLDERS,
    DECISION_FOLDERS,
    AgentPaths,
)
from feedbackd.edges.files import (
    atomic_write_text,
    read_file_text,
)

QUIET_FILE = "quiet-agents"
RACY_S = 2.0  # a time this recent may not have moved yet for a change made right after


class QuietAgents:
    """The agents a full pass on HEAD `head` may leave out, and what this pass learns."""

    def __init__(self, runtime: Runtime, head: str | None) -> None:
        self.runtime = runtime
        self.path = runtime.workspace.state_dir / QUIET_FILE
        self.head = head
        # None: nothing is left out (git off, a webhouse queue)
        self.context = _context(runtime) if _usable(runtime, head) else None
        self._kept = self._load() if self.context is not None else {}
        self._taken: dict[str, str] = {}  # this pass's digests, taken before each agent's pass
        self._quiet: dict[str, str] = {}
        self.left_out: set[str] = set()  # the agents a pass leaves out (reconcile.py)

    def _load(self) -> dict[str, str]:
        try:
            lines = read_file_text(self.path).splitlines()
        except (OSError, UnicodeDecodeError):
            return {}
        if not lines or lines[0] != self.context:
            return {}  # other settings, other code: every agent is read
        return dict(line.split(" ", 1) for line in lines[1:] if " " in line)

    def unchanged(self, agent: AgentPaths, at_head: str | None) -> bool:
        """True when the agent is as the last quiet pass over it found it; else its digest is
        taken now, for `passed` to keep. `at_head`: the id of the agent's folder at HEAD."""
        if self.context is None:
            return False
        # An agent folder HEAD lacks may be another's renamed (agentrename.py): HEAD decides.
        committed = at_head or f"HEAD {self.head}"
        digest = agent_digest(self.runtime, agent, time.time(), committed)
        if digest is None:
            return False
        if self._kept.get(agent.agent_id) == digest:
            self._quiet[agent.agent_id] = digest
            return True
        self._taken[agent.agent_id] = digest
        return False

    def passed(self, agent: AgentPaths, report: Report, saw_links: bool) -> None:
        """Keep the digest taken before the agent's pass when that pass reported nothing."""
        digest = self._taken.pop(agent.agent_id, None)
        if digest is None or saw_links:
            return
        if report.events or report.problems or report.warnings or report.decision_warnings:
            return
        self._quiet[agent.agent_id] = digest

    def save(self) -> None:
        """Write what this pass found quiet (agents it did not reach are read next time)."""
        if self.context is None or self._quiet == self._kept:
            return
        body = "".join(f"{agent} {digest}\n" for agent, digest in sorted(self._quiet.items()))
        try:
            atomic_write_text(self.path, f"{self.context}\n{body}", durable=False)
        except OSError:
            return  # a full disk: the next run reads every agent


def _usable(runtime: Runtime, head: str | None) -> bool:
    return head is not None and queue_file(runtime) is None


def _context(runtime: Runtime) -> str:
    """What every agent's pass depends on besides its folder: the settings, the code (an
    upgrade rewrites the planner's module and this one)."""
    settings = runtime.settings.model_dump_json()
    code = [os.stat(module) for module in (agentplan.__file__, __file__)]
    installed = " ".join(f"{info.st_size} {info.st_mtime_ns}" for info in code)
    text = f"{installed}\0{runtime.workspace.root}\0{settings}"
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def agent_digest(runtime: Runtime, agent: AgentPaths, now: float, committed: str) -> str | None:
    """A digest of the state of everything a pass over the agent reads, `committed` what HEAD
    holds of it; None when a time in it is too recent to vouch for what follows (or a decided
    file cannot be looked at)."""
    states = [committed]
    newest = 0
    paths = [runtime.workspace.agents_dir, agent.root, *agent.feedback_files, agent.forgotten]
    paths.append(agent.reviews)
    snapshots = snapshot_path(runtime, agent, IN_GIT)
    paths += [snapshots.parent, snapshots]
    paths += [agent.folder(folder) for folder in ALL_ITEM_FOLDERS]
    try:
        paths += _decided_files(agent)
    except OSError:
        return None
    for path in paths:
        try:
            info = os.stat(path)
        except FileNotFoundError:
            states.append("-")
            continue
        except OSError:
            return None
        newest = max(newest, info.st_mtime_ns, info.st_ctime_ns)
        states.append(f"{info.st_ino} {info.st_size} {info.st_mtime_ns} {info.st_ctime_ns}")
    if newest > (now - RACY_S) * 1e9:
        return None
    return hashlib.blake2b("\n".join(states).encode(), digest_size=16).hexdigest()


def _decided_files(agent: AgentPaths) -> list[Path]:
    """Every entry of the decision folders, by name (a pass reads them whatever they are)."""
    found: list[Path] = []
    for folder in DECISION_FOLDERS:
        directory = agent.folder(folder)
        try:
            names = sorted(os.listdir(directory))
        except (FileNotFoundError, NotADirectoryError):
            continue  # (its own state says so)
        found += [directory / name for name in names]
    return found
