"""The decision commits of one agent's items, read from history once and asked per item.

A decided file with no line in decisions.jsonl (the ledger was deleted or damaged) is looked up
in history: if its decision commit is there, the line is restored, never decided again. With
hundreds of such files (a ledger lost on a big site), one `git log` per file would start
hundreds of git processes; this reads each name the agent's folder has had once, and the
reverts once, however many files ask.
"""

from __future__ import annotations

from collections import defaultdict

from feedbackd.app.curation import agentrename
from feedbackd.core.commitmsg import AGENT_KEY, LogEntry
from feedbackd.core.curation.reverts import Undone
from feedbackd.edges.git.repo import GitRepo

# An item's commits of one event, newest first.
_ByItem = dict[tuple[str | None, str | None], list[LogEntry]]


class DecisionHistory:
    """The `approve` and `reject` commits of one agent's items that no `git revert` undid,
    made under the agent's name or any it had before its folder was renamed."""

    def __init__(self, repo: GitRepo, agent_id: str) -> None:
        self._repo = repo
        self._agent_id = agent_id
        self._by_name: dict[str, _ByItem] = {}
        self._former: list[str] | None = None
        self._undone: Undone | None = None

    def newest(self, event: str, item_id: str) -> LogEntry | None:
        """The newest `event` commit of the item that no revert undid; None when there is none
        (the file was committed by hand, or again after a revert: it is decided now)."""
        found = self._commits(self._agent_id, event, item_id)
        for former in [] if found else self._former_names():
            found = found or self._commits(former, event, item_id)
        if not found:
            return None
        if self._undone is None:
            self._undone = self._repo.listings.undone()
        return next((entry for entry in found if entry.commit not in self._undone), None)

    def _commits(self, agent_id: str, event: str, item_id: str) -> list[LogEntry]:
        if agent_id not in self._by_name:
            by_item: _ByItem = defaultdict(list)
            for entry in self._repo.trailer_log({AGENT_KEY: agent_id}):
                by_item[(entry.event, entry.item)].append(entry)
            self._by_name[agent_id] = by_item
        return self._by_name[agent_id].get((event, item_id), [])

    def _former_names(self) -> list[str]:
        if self._former is None:
            self._former = agentrename.former_names(self._repo, self._agent_id)
        return self._former
