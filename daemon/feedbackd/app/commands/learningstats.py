"""`feedbackd stats`, `GET /api/agents/{id}/stats` and the `/metrics` gauge: is the agent
learning? (SPEC section 13; the counting is core/curation/learningcurve.py.)

Where the numbers come from, so that 100,000 decisions answer in well under a second:
- The decisions are the ledger lines HEAD holds (decisions.jsonl, with forgotten.jsonl), not a
  walk of history per call: a reverted decision's line is gone from HEAD, a forgotten entry is
  listed there, and each line's `at` is the time of its decision commit (written in the same
  pass, and kept by a rebase, which gives the commit a new committer time).
- The time of each draft's first commit comes from one `git log` of the adds to the agents'
  queue/ folders, kept in `.feedbackd/learning/drafts.json` with the HEAD it was read at; a
  later call walks only the commits since (taking out those a reset or a rebase dropped).
- Each agent's counted decisions (its table) are kept in `.feedbackd/learning/tables/` with the
  object ids of the two ledgers they were counted from: a call whose ledgers HEAD still holds
  reads the table back (one JSON load) instead of parsing every line again. A new commit of
  drafts alone does not make a table stale: a draft committed now precedes only decisions made
  later, and those change the ledger.
Everything kept is local and rebuildable; when `.feedbackd/` cannot be written, nothing is kept.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from feedbackd.app.commits.openrepo import open_repo
from feedbackd.app.workspace.agentfiles import existing_agent
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.curation.decisions import parse_ledger
from feedbackd.core.curation.learningcurve import (
    NOTHING_FORGOTTEN,
    DecisionTable,
    check_period,
    decision_table,
    learning_stats,
    parse_forgotten,
)
from feedbackd.core.errors import GitError
from feedbackd.core.timeutil import since_start
from feedbackd.core.workspacepaths import ITEM_SUFFIXES
from feedbackd.edges.clock import utcnow
from feedbackd.edges.files import agent_ids, atomic_write_bytes, read_file_bytes
from feedbackd.edges.git.repo import GitRepo

log = logging.getLogger("feedbackd")

METRICS_WINDOW = timedelta(days=30)  # of the /metrics gauge
# agent → item → each [author time (unix s), commit] that added its draft to queue/
Drafted = dict[str, dict[str, list[list[Any]]]]


def agent_stats(
    runtime: Runtime, agent_id: str | None, by: str = "week", since: str | None = None
) -> dict[str, Any]:
    """`stats --json` for one agent, or (agent_id None) for every agent together."""
    check_period(by)
    now = utcnow()
    start = since_start(since, now)
    if agent_id is None:
        agents = agent_ids(runtime.workspace)
    else:
        agents = [existing_agent(runtime, agent_id).agent_id]
    tables = decision_tables(runtime, agents)
    return learning_stats([tables[a] for a in agents], by, now, start, agent_id)


def unedited_ratios(runtime: Runtime) -> dict[str, float | None]:
    """Each agent's unedited-approval rate over the last 30 days (None: nothing approved)."""
    now = utcnow()
    agents = agent_ids(runtime.workspace)
    tables = decision_tables(runtime, agents)
    return {
        agent: learning_stats([tables[agent]], "month", now, now - METRICS_WINDOW)["total"][
            "unedited_rate"
        ]
        for agent in agents
    }


# --- the tables -------------------------------------------------------------------------------
def decision_tables(runtime: Runtime, agents: Sequence[str]) -> dict[str, DecisionTable]:
    """Each agent's counted decisions, as HEAD's ledgers hold them (the work tree's files when
    git is off: then no draft has a commit, and no time to decision is known)."""
    with open_repo(runtime) as repo:
        if repo is None:
            return {agent: _table_on_disk(runtime, agent) for agent in agents}
        if repo.head() is None:
            return {agent: DecisionTable() for agent in agents}
        return _KeptTables(runtime, repo).of(agents)


def _table_on_disk(runtime: Runtime, agent_id: str) -> DecisionTable:
    agent = runtime.workspace.agent(agent_id)
    texts = [_text_of(path) for path in (agent.decisions, agent.forgotten)]
    return decision_table(parse_ledger(texts[0], str(agent.decisions)), parse_forgotten(texts[1]))


def _text_of(path: Path) -> str:
    try:
        return read_file_bytes(path).decode("utf-8", errors="replace")
    except (FileNotFoundError, NotADirectoryError):
        return ""


class _KeptTables:
    """The agents' tables: kept ones whose ledgers HEAD still holds, the others counted again
    (with the draft times, read once for all of them) and kept."""

    def __init__(self, runtime: Runtime, repo: GitRepo) -> None:
        self.runtime, self.repo = runtime, repo
        self.folder = runtime.workspace.state_dir / "learning"
        self._drafted: dict[str, dict[str, list[int]]] | None = None

    def of(self, agents: Sequence[str]) -> dict[str, DecisionTable]:
        rels = {agent: self._ledgers(agent) for agent in agents}
        ids = self.repo.file_ids_at_head([rel for pair in rels.values() for rel in pair])
        return {agent: self._table(agent, rels[agent], ids) for agent in agents}

    def _ledgers(self, agent_id: str) -> tuple[str, str]:
        agent = self.runtime.workspace.agent(agent_id)
        relative = self.runtime.workspace.relative
        return relative(agent.decisions), relative(agent.forgotten)

    def _table(
        self, agent: str, rels: tuple[str, str], ids: Mapping[str, str | None]
    ) -> DecisionTable:
        if ids[rels[0]] is None:
            return DecisionTable()  # no decision committed yet
        path = self.folder / "tables" / f"{agent}.json"
        kept = _read_json(path)
        if kept.get("key") == [ids[rels[0]], ids[rels[1]]]:
            table = DecisionTable.from_json(kept.get("table") or {})
            if table is not None:
                return table
        return self._count(agent, rels, path)

    def _count(self, agent: str, rels: tuple[str, str], path: Path) -> DecisionTable:
        ledger, forgotten = (self.repo.object_at_head(rel) for rel in rels)
        if ledger is None:
            return DecisionTable()  # HEAD moved on meanwhile
        records = parse_ledger(ledger.content.decode("utf-8", errors="replace"), rels[0])
        lost = NOTHING_FORGOTTEN
        if forgotten is not None:
            lost = parse_forgotten(forgotten.content.decode("utf-8", errors="replace"))
        table = decision_table(records, lost, self._drafts().get(agent, {}))
        # The ids of what was read, not of what was asked about: HEAD may have moved between.
        key = [ledger.sha, forgotten.sha if forgotten else None]
        _keep(path, {"key": key, "table": table.to_json()})
        return table

    def _drafts(self) -> dict[str, dict[str, list[int]]]:
        if self._drafted is None:
            kept = self.folder / "drafts.json"
            self._drafted = DraftTimes(self.runtime, self.repo, kept).read()
        return self._drafted


# --- the draft times --------------------------------------------------------------------------
class DraftTimes:
    """agent → item → the commits that added the item to the agent's queue/ (their author time
    in unix seconds, and the commit's id cut to 12 hex digits), for every agent folder on disk:
    kept with the HEAD they were read at, and brought up to date by walking the commits since
    (a reset's or a rebase's dropped commits taken out), only the agents' queue/ folders.

    Every agent's is read at once, whichever agent a call asks about: one walk costs about the
    same for all of them, and a later call about another agent finds its times up to date."""

    VERSION = 2

    def __init__(self, runtime: Runtime, repo: GitRepo, path: Path) -> None:
        self.repo, self.path = repo, path
        workspace = runtime.workspace
        self.folders = {
            a: workspace.relative(workspace.agent(a).queue) for a in agent_ids(workspace)
        }

    def read(self) -> dict[str, dict[str, list[int]]]:
        """agent → item → the times its draft was added, ascending."""
        try:
            return self._times(self._brought_up_to_date())
        except (TypeError, ValueError, AttributeError, IndexError):
            # What was kept is not what this code keeps (edited, or cut short): read it all again.
            self.path.unlink(missing_ok=True)
            return self._times(self._brought_up_to_date())

    @staticmethod
    def _times(drafted: Drafted) -> dict[str, dict[str, list[int]]]:
        return {
            agent: {item: sorted({int(add[0]) for add in adds}) for item, adds in items.items()}
            for agent, items in drafted.items()
        }

    def _brought_up_to_date(self) -> Drafted:
        head = self.repo.head()
        kept = _read_json(self.path)
        usable = kept.get("version") == self.VERSION and isinstance(kept.get("drafted"), dict)
        drafted: Drafted = kept["drafted"] if usable else {}
        since: str | None = kept.get("head") if usable else None
        if since == head and set(self.folders) <= set(drafted):
            return drafted
        if since is not None and not self._drop_undone(drafted, since, head):
            drafted, since = {}, None
        walked = {agent: drafted.pop(agent, {}) for agent in self.folders if agent in drafted}
        if since is not None:
            self._add(walked, [self.folders[agent] for agent in walked], since)
        fresh = [agent for agent in self.folders if agent not in walked or since is None]
        self._add(walked, [self.folders[agent] for agent in fresh], None)
        _keep(self.path, {"version": self.VERSION, "head": head, "drafted": walked})
        return walked

    def _drop_undone(self, drafted: Drafted, since: str, head: str | None) -> bool:
        """Take out the adds of the commits the kept HEAD had and HEAD has not; False when
        that HEAD is no commit of the repository any more (everything is read again)."""
        try:
            dropped = {
                commit[:12] for commit in self.repo.listings.commits_only_in(since, head or since)
            }
        except GitError:
            return False
        for items in drafted.values() if dropped else ():
            for item, adds in items.items():
                items[item] = [add for add in adds if add[1] not in dropped]
        return True

    def _add(self, drafted: Drafted, folders: Sequence[str], since: str | None) -> None:
        agent_of = {folder: agent for agent, folder in self.folders.items() if folder in folders}
        for agent in agent_of.values():
            drafted.setdefault(agent, {})
        for path, when, commit in self.repo.listings.adds(folders, since):
            folder, _, name = path.rpartition("/")
            stem, dot, suffix = name.rpartition(".")
            if folder in agent_of and dot and f".{suffix}" in ITEM_SUFFIXES:
                adds = drafted[agent_of[folder]].setdefault(stem, [])
                if [when, commit[:12]] not in adds:
                    adds.append([when, commit[:12]])


# --- what is kept -----------------------------------------------------------------------------
def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(read_file_bytes(path))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _keep(path: Path, value: dict[str, Any]) -> None:
    """Keep what was worked out, for the next call; a copy of what git holds, so without fsync,
    and nothing is lost when it cannot be written (a read-only workspace)."""
    try:
        data = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
        atomic_write_bytes(path, data, durable=False)
    except OSError as error:
        log.debug("could not keep %s: %s", path, error)
