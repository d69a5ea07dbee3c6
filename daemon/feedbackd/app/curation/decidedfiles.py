"""Decided item files changed since git last committed them: a curator's edit after the decision
(or the rest of a file whose first half was decided), to be committed again with what it adds.

Git tells which tracked files differ from HEAD without reading them (`git diff-index` compares
sizes and times with its index, which each commit of feedbackd brings up to date): one git
process for all the agents of a pass, asked when the first of them wants to know. And only when
a decided file is not as this process last saw it: the daemon remembers each decided file as it
committed it, or as git vouched for it (CommittedLedgers), so a decision costs no such look.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from feedbackd.app.curation.draftmemory import SETTLED_S
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.workspacepaths import DECISION_FOLDERS, AgentPaths
from feedbackd.edges.files import FileState
from feedbackd.edges.git.repo import GitRepo

# Up to this many agents, a pass asks about their decision folders by name; beyond it, about
# the whole agents folder (a command line of thousands of folders would be too long).
NAMED_AGENTS = 50


class ChangedDecisions:
    """The decided files that differ from HEAD, for the agents of one pass (None: all)."""

    def __init__(self, runtime: Runtime, agents: Sequence[str] | None) -> None:
        self.runtime = runtime
        self.agents = agents
        self.changed: set[str] | None = None
        self.listed_at = 0.0

    def of(self, repo: GitRepo, agent: AgentPaths) -> set[str]:
        """The agent's files in approved/ and rejected/ that differ from HEAD, relative."""
        if self.changed is None:
            self.listed_at = time.time()
            self.changed = set(repo.listings.modified_paths(self._folders(agent)))
        folders = tuple(self._rel(agent.folder(name)) + "/" for name in DECISION_FOLDERS)
        return {path for path in self.changed if path.startswith(folders)}

    def vouched(self, path: Path, rel: str) -> FileState | None:
        """The file's state, when git's listing says it is as HEAD holds it and it had not
        changed for SETTLED_S before git looked (so the listing speaks of this state)."""
        if self.changed is None or rel in self.changed:
            return None
        try:
            info = path.stat()
        except OSError:
            return None
        if info.st_ctime >= self.listed_at - SETTLED_S:
            return None
        return FileState.of(info)

    def _folders(self, agent: AgentPaths) -> list[str]:
        chosen = self.agents
        if chosen is None or len(chosen) > NAMED_AGENTS or agent.agent_id not in chosen:
            return [self._rel(self.runtime.workspace.agents_dir)]
        return [
            self._rel(self.runtime.workspace.agent(agent_id).folder(name))
            for agent_id in chosen
            for name in DECISION_FOLDERS
        ]

    def _rel(self, path: Path) -> str:
        return self.runtime.workspace.relative(path)
