"""An agent's decided items as one commit held them, read from git alone for `feedbackd export`
(the work tree is never read, so the same commit always gives the same rows).

At that commit: the decision ledger says which decisions stand (a reverted one has no line
there), forgotten.jsonl which lessons were taken back; one walk of the history finds each
decision's commit (following the agent's folder back through renames), and one listing of each
decision folder the decided files. The files are then read as the rows go, by a `cat-file` of
its own for each group of names (edges/git/history.py): one file is held at a time, and what the
export holds for the whole history is a small record of each decision.

The draft as first written is the item's originalContentData, else queue/ as the parent of the
item's first decision commit held it (the draft commit's version: feedbackd never commits a
queued draft's edits), else the version of the oldest commit that added it to queue/. A webhouse
site's items come from its queue file, as the commit held it, else as the decision's commit did
(webhouse purges decided items after a while).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from feedbackd.core.curation import exportrows
from feedbackd.core.curation.exportrows import (
    Decided,
    DecisionCommits,
    ExportRow,
    RowSource,
)
from feedbackd.core.curation.feedback import Identity
from feedbackd.core.curation.forgetting import forgotten_identities
from feedbackd.core.curation.items import Item, parse_item
from feedbackd.core.curation.webhouseitems import parse_queue
from feedbackd.core.errors import FeedbackdError, UsageError
from feedbackd.core.workspacepaths import DECISION_FOLDERS, Workspace
from feedbackd.edges.git.history import History
from feedbackd.edges.git.repo import GitRepo, history_of

log = logging.getLogger("feedbackd")

CHUNK = 500  # rows whose object names are listed at once


def folder_at(repo: GitRepo, workspace: Workspace, agent_id: str, commit: str) -> str | None:
    """The agent's folder at `commit` (relative to the workspace): its own, or the name it had
    then if its folder was renamed since; None when it had none (it did not exist yet)."""
    history = history_of(repo)
    own = workspace.relative(workspace.agent(agent_id).root)
    if history.is_folder(commit, own):
        return own
    head = repo.head()
    if head is None:
        return None
    # Only the rename commits are read: a history of many decisions is not parsed for them.
    renames = DecisionCommits(agent_id, ())
    for sha, trailers in history.trailers(head, exportrows.TRAILER_KEYS, exportrows.RENAME_GREP):
        renames.add(sha, trailers)
    for name in renames.names[1:]:
        old = workspace.relative(workspace.agent(name).root)
        if history.is_folder(commit, old):
            return old
    return None


@dataclass(frozen=True)
class Standing:
    """What `commit` held of one agent, in `folder` (its folder then)."""

    agent: str
    commit: str
    folder: str
    decided: list[Decided]
    forgotten: frozenset[Identity]
    commits: DecisionCommits
    files: dict[str, dict[str, str]]  # approved, rejected → file name → object id


def read_standing(
    repo: GitRepo, agent_id: str, commit: str, folder: str, *, after: str | None = None
) -> Standing:
    """`after`: only the decision commits that revision does not hold are read, where eval and
    bisect ask about decisions made after it alone: a long history is not walked for them."""
    ledger = repo.file_at(commit, f"{folder}/decisions.jsonl") or b""
    text = ledger.decode("utf-8", errors="replace")
    del ledger  # a big ledger is held once, as text
    decided = exportrows.standing_decisions(exportrows.ledger_lines(text))
    del text
    forgotten = repo.file_at(commit, f"{folder}/forgotten.jsonl") or b""
    history = history_of(repo)
    commits, _ = decision_commits(repo, folder, commit, [d.item for d in decided], after=after)
    return Standing(
        agent=agent_id,
        commit=commit,
        folder=folder,
        decided=decided,
        forgotten=forgotten_identities(forgotten.decode("utf-8", errors="replace")),
        commits=commits,
        files={name: history.files_in(commit, f"{folder}/{name}") for name in DECISION_FOLDERS},
    )


def decision_commits(
    repo: GitRepo,
    folder: str,
    commit: str,
    items: Iterable[str],
    *,
    after: str | None = None,
    limit: int | None = None,
) -> tuple[DecisionCommits, int]:
    """The decision commits of `items` in `commit`'s history (`folder` the agent's folder
    then), newest first: those `after` does not hold, or the first `limit` decision commits
    (of any agent); and how many decision commits were read."""
    commits, read = DecisionCommits(PurePosixPath(folder).name, items), 0
    walk = history_of(repo).trailers(
        commit, exportrows.TRAILER_KEYS, exportrows.DECISION_GREP, after=after, limit=limit
    )
    for sha, trailers in walk:
        commits.add(sha, trailers)
        read += 1
    return commits, read


SOUL = "soul"  # export.system's word for the agent's persona


def soul_at(repo: GitRepo, commit: str, folder: str) -> str:
    """The persona of the agent's SOUL.md as `commit` held it: its name and description, up to
    the first skill; a usage error when it has none that reads."""
    data = repo.file_at(commit, f"{folder}/SOUL.md")
    try:
        text = data.decode("utf-8") if data is not None else ""
    except UnicodeDecodeError:
        text = ""
    persona = re.split(r"^## ", text.replace("\r\n", "\n"), maxsplit=1, flags=re.M)[0].strip()
    if not persona:
        what = "has no SOUL.md" if data is None else "has a SOUL.md with no persona that reads"
        raise UsageError(
            f"export.system is soul, and {folder} {what} at {commit[:12]}",
            hint="commit a SOUL.md (# Name, then a description), or set export.system to a text",
        )
    return persona


def export_rows(
    repo: GitRepo, standing: Standing, template: str, with_snippet: bool = False
) -> Iterator[ExportRow]:
    """The rows, by decision time then item id; a decided item whose file the history no
    longer holds is left out, with a warning. `with_snippet`: each with the lessons the agent
    read when it drafted (prompt/feedback.md as the commit before its draft's held it)."""
    reader = _Reader(repo, standing, with_snippet)
    for start in range(0, len(standing.decided), CHUNK):
        for source in reader.sources(standing.decided[start : start + CHUNK]):
            yield exportrows.export_row(standing.agent, source, standing.forgotten, template)
    if reader.missing:
        shown = ", ".join(reader.missing[:5]) + (", …" if len(reader.missing) > 5 else "")
        log.warning(
            "export of %s: %d decided items left out, their files are not in the history (%s)",
            standing.agent,
            len(reader.missing),
            shown,
        )


class _Reader:
    """The files of decided items, a chunk at a time."""

    def __init__(self, repo: GitRepo, standing: Standing, with_snippet: bool = False) -> None:
        self.history = history_of(repo)
        self.standing = standing
        self.with_snippet = with_snippet
        self.agents = str(PurePosixPath(standing.folder).parent)  # the agents' folder
        self.queues = _QueueFiles(self.history)
        self.missing: list[str] = []
        self.adds: dict[str, str] | None = None  # queue/ path → its first adding commit

    def sources(self, chunk: Sequence[Decided]) -> Iterator[RowSource]:
        """Each decided item of the chunk with its draft, read as it comes."""
        names: list[str | None] = []
        for decided in chunk:
            names += [self._decided_name(decided), self._draft_name(decided)]
            names.append(self._snippet_name(decided) if self.with_snippet else None)
        answers = self.history.blobs([name for name in names if name is not None])
        for index, decided in enumerate(chunk):
            data, draft, snippet = (
                next(answers) if name else None for name in names[3 * index : 3 * index + 3]
            )
            item = self._item(decided, data)
            if item is None:
                self.missing.append(decided.item)
                continue
            first = _parsed(draft, decided)
            if first is None and item.original is None:
                first = self._added_draft(decided)
            commit = self.standing.commits.of(decided)
            lessons = snippet.decode("utf-8", errors="replace") if snippet else None
            yield RowSource(decided, item, first, commit.sha if commit else None, lessons)

    def _added_draft(self, decided: Decided) -> Item | None:
        """The draft as the oldest commit that added it to queue/ has it, for an item whose
        first decision commit's parent has no draft (a curator moved and committed the file by
        hand before feedbackd saw it): one history walk for the whole export, made when first
        needed."""
        if _decision_file(decided) is None:
            return None
        if self.adds is None:
            self.adds = self.history.first_adds(self.standing.commit, self._queues())
        file_name = PurePosixPath(decided.file or "").name
        for agent in self.standing.commits.names:
            path = f"{self.agents}/{agent}/queue/{file_name}"
            if path in self.adds:
                return _parsed(self.history.blob(f"{self.adds[path]}:{path}"), decided)
        return None

    def _snippet_name(self, decided: Decided) -> str | None:
        """prompt/feedback.md as the agent read it when it drafted: before the commit that
        added its draft to queue/, else (a queue file's item) before its first decision."""
        where, first = _decision_file(decided), self.standing.commits.first(decided.item)
        if first is None:
            return None
        before = f"{first.sha}^"
        if where is not None:
            if self.adds is None:
                self.adds = self.history.first_adds(self.standing.commit, self._queues())
            for agent in self.standing.commits.names:
                added = self.adds.get(f"{self.agents}/{agent}/queue/{where[1]}")
                if added is not None:
                    return f"{added}^:{self.agents}/{agent}/prompt/feedback.md"
        return f"{before}:{self.agents}/{first.agent}/prompt/feedback.md"

    def _queues(self) -> list[str]:
        return [f"{self.agents}/{name}/queue" for name in self.standing.commits.names]

    def _decided_name(self, decided: Decided) -> str | None:
        """The object that holds the decided file: as the commit holds it, else (a file
        deleted since) as the decision's commit did."""
        where = _decision_file(decided)
        if where is None:
            return None
        folder, name = where
        blob = self.standing.files[folder].get(name)
        if blob is not None:
            return blob
        commit = self.standing.commits.of(decided)
        return f"{commit.sha}:{self.agents}/{commit.agent}/{folder}/{name}" if commit else None

    def _draft_name(self, decided: Decided) -> str | None:
        """queue/ as it was before the item's first decision: the draft as committed."""
        where, first = _decision_file(decided), self.standing.commits.first(decided.item)
        if where is None or first is None:
            return None
        return f"{first.sha}^:{self.agents}/{first.agent}/queue/{where[1]}"

    def _item(self, decided: Decided, data: bytes | None) -> Item | None:
        if _decision_file(decided) is None and decided.file:  # one file of many items
            commit = self.standing.commits.of(decided)
            tried = [self.standing.commit] + ([commit.sha] if commit else [])
            return self.queues.item(tried, decided.file, self.standing, decided.item)
        return _parsed(data, decided)


def _decision_file(decided: Decided) -> tuple[str, str] | None:
    """(approved or rejected, file name) of a file in an agent's decision folder. (Split as
    text: a hundred thousand paths through pathlib cost seconds.)"""
    if not decided.file:
        return None
    folder, _, name = decided.file.rpartition("/")
    parent = folder.rpartition("/")[2]
    return (parent, name) if parent in DECISION_FOLDERS else None


def _parsed(data: bytes | None, decided: Decided) -> Item | None:
    """The item in `data`, None when there is none or it does not read (then it was never
    decided from that version: a file is decided only once it reads)."""
    if data is None or not decided.file:
        return None
    name = decided.file.rpartition("/")[2]
    suffix = name[name.rfind(".") :] if "." in name else ""
    try:
        return parse_item(data, suffix, decided.item)
    except FeedbackdError:
        return None


class _QueueFiles:
    """webhouse's curation queue, one file of many items: read and parsed once per commit
    asked (the last one kept)."""

    def __init__(self, history: History) -> None:
        self.history = history
        self.held: tuple[str, dict[tuple[str, str], Item]] | None = None

    def item(
        self, commits: Sequence[str], path: str, standing: Standing, item_id: str
    ) -> Item | None:
        """The item of the standing's agent in the queue file `path`, as the first of
        `commits` that holds it has it."""
        agent_then = PurePosixPath(standing.folder).name
        for commit in commits:
            found = self._items(f"{commit}:{path}").get((agent_then, item_id))
            if found is not None:
                return found
        return None

    def _items(self, name: str) -> dict[tuple[str, str], Item]:
        if self.held is None or self.held[0] != name:
            data = self.history.blob(name)
            try:
                queue = parse_queue(data) if data is not None else None
            except FeedbackdError:
                queue = None
            entries = queue.decided if queue is not None else ()
            self.held = (name, {(e.agent_id, e.item.item_id): e.item for e in entries})
        return self.held[1]
