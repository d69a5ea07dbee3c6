"""What a pass reads for reviews by several curators (SPEC section 15):
- the agent's `reviews.jsonl`, and which of its lines HEAD lacks (a pass killed after writing
  one, before its commit), so that the next pass finishes that review rather than refuse it as
  a second one;
- each moved file's draft as first drafted, which the next curator reviews;
- the drafts in review/ edited where they wait, and those whose reviews are all in with no move
  left to decide them (a merge brought the last one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from feedbackd.app.commits.ledgers import CommittedLedgers
from feedbackd.app.workspace import problems
from feedbackd.app.workspace.agentfiles import read_item
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.curation.agentplan import FirstDraft, ItemFile, ReadItem
from feedbackd.core.errors import FeedbackdError, WorkspaceError
from feedbackd.core.reviews.disputefiles import as_first_drafted
from feedbackd.core.reviews.reviewlog import ReviewRecord, read_reviews
from feedbackd.core.workspacepaths import DECISION_FOLDERS, ITEM_SUFFIXES, AgentPaths
from feedbackd.edges.files import file_state, read_file_bytes
from feedbackd.edges.git.repo import GitRepo


@dataclass(frozen=True)
class Reviews:
    """What a pass read for reviews: reviews.jsonl (or why it cannot be used), the ids of its
    lines HEAD lacks, and the drafts in review/ edited where they wait."""

    records: list[ReviewRecord] | FeedbackdError
    unfinished: frozenset[str] = frozenset()
    edited: tuple[Path, ...] = ()


NO_REVIEWS = Reviews([])


@dataclass(frozen=True)
class ReviewReading:
    """What a pass over one agent folder reads for its reviews."""

    runtime: Runtime
    repo: GitRepo | None
    agent: AgentPaths
    committed: CommittedLedgers
    snapshot_of: Callable[[str], Path]  # a draft's file name → this machine's snapshot of it

    def read(self, files: Sequence[ItemFile]) -> Reviews:
        """The agent's reviews and the drafts edited in review/ (among `files`)."""
        read = self._reviews()
        return replace(read, edited=self._edited(files))

    def _reviews(self) -> Reviews:
        """The agent's reviews (or why reviews.jsonl cannot be used) and the ids of those HEAD
        lacks. Git is asked only while the file differs from what this process committed."""
        path, where = self.agent.reviews, self.runtime.workspace.relative(self.agent.reviews)
        try:
            data = read_file_bytes(path)
        except FileNotFoundError:
            return NO_REVIEWS
        except OSError as error:
            return Reviews(WorkspaceError(f"{where}: {error.strerror}", hint="check its rights"))
        try:
            records = read_reviews(data.decode("utf-8", errors="replace"))
        except FeedbackdError as error:
            return Reviews(error)
        if self.repo is None or self.committed.unchanged(self.runtime, self.repo, path):
            return Reviews(records)
        return Reviews(records, self._not_in_head(self.repo, data, records))

    def _edited(self, files: Sequence[ItemFile]) -> tuple[Path, ...]:
        """The drafts in review/ that differ from HEAD's (edited where they wait, as first
        drafted, for the next curator); one as HEAD holds it loses the `.error` an edit left.
        Git is asked once per change of a file: one found as HEAD holds it is remembered."""
        repo, waiting = self.repo, [f.path for f in files if f.folder == "review"]
        if repo is None or not waiting:
            return ()
        known = self.committed.unchanged_among(self.runtime, repo, waiting)
        edited = []
        for path in waiting:
            at_head = None if path in known else repo.object_at_head(self.rel(path))
            state = file_state(path)
            if at_head is None or state is None:
                continue  # as this process committed it, or not committed yet, or gone
            if read_file_bytes(path) != at_head.content:
                edited.append(path)
                continue
            self.committed.remember(self.runtime, repo, path, state, at_head.sha)
            problems.clear(path)
        return tuple(edited)

    def rel(self, path: Path) -> str:
        return self.runtime.workspace.relative(path)

    def _not_in_head(
        self, repo: GitRepo, data: bytes, records: list[ReviewRecord]
    ) -> frozenset[str]:
        path = self.agent.reviews
        at_head = repo.object_at_head(self.runtime.workspace.relative(path))
        if at_head is not None and at_head.content == data:
            state = file_state(path)
            if state is not None:
                self.committed.remember(self.runtime, repo, path, state, at_head.sha)
            return frozenset()
        try:
            text = at_head.content.decode("utf-8", errors="replace") if at_head else ""
            known = {record.id for record in read_reviews(text)}
        except FeedbackdError:
            known = set()  # HEAD's own copy damaged: every line is taken as not committed yet
        return frozenset(record.id for record in records if record.id not in known)

    def waiting(
        self,
        files: Sequence[ItemFile],
        records: Sequence[ReviewRecord],
        draft_commits: Callable[[ItemFile], Mapping[str, bytes]],
    ) -> list[ReadItem]:
        """The drafts in review/ that enough curators reviewed and no move is left to decide
        (a merge brought the last review), with their first draft: the plan gives them their
        outcome. Only those whose item has `required` curators in the log are read."""
        required = self.runtime.settings.review.required_for(self.agent.agent_id)
        curators: dict[str, set[str]] = {}
        for record in records:
            curators.setdefault(record.item, set()).add(record.curator.email.lower())
        moved = {f.item_id for f in files if f.folder in DECISION_FOLDERS}
        found = [
            f
            for f in files
            if f.folder == "review" and f.item_id not in moved and f.path.stem == f.item_id
        ]
        enough = [f for f in found if len(curators.get(f.item_id, ())) >= required]
        return [self.with_first_draft(_read(f), draft_commits) for f in enough]

    def with_first_draft(
        self, read: ReadItem, draft_commits: Callable[[ItemFile], Mapping[str, bytes]]
    ) -> ReadItem:
        """A file moved to a decision folder, with its draft as first drafted: the snapshot this
        machine took of it in queue/ (of its draft commit's version, or of the file as it was
        first committed), else its draft commit (read from git only then), else the moved
        file as it is (a draft git never held)."""
        if read.item is None:
            return read
        return replace(read, first_draft=self._first_draft(read.file, draft_commits))

    def _first_draft(
        self, moved: ItemFile, draft_commits: Callable[[ItemFile], Mapping[str, bytes]]
    ) -> FirstDraft:
        """A file moved to a decision folder, as first drafted: the copy in review/ that HEAD
        holds (the earlier reviews put it there), else the snapshot this machine took of it in
        queue/, else its draft commit (git asked only then), else the moved file without what
        its curator added (a draft git never held)."""
        first = moved.path.suffix
        waiting = self._in_review_at_head(moved.item_id)
        if waiting is not None:
            return waiting
        suffixes = (first, *(other for other in ITEM_SUFFIXES if other != first))
        for suffix in suffixes:
            snapshot = self.snapshot_of(moved.item_id + suffix)
            if snapshot.exists():
                return FirstDraft(suffix, read_file_bytes(snapshot))
        in_git = draft_commits(moved)
        for suffix in suffixes:
            data = in_git.get(self.rel(self.agent.queue / (moved.item_id + suffix)))
            if data is not None:
                return FirstDraft(suffix, data)
        try:
            return FirstDraft(first, as_first_drafted(read_file_bytes(moved.path), moved.path))
        except OSError:
            return FirstDraft(first, b"")  # gone meanwhile: the step is read again first

    def _in_review_at_head(self, item_id: str) -> FirstDraft | None:
        """The draft as it waits in review/ at HEAD: what a refused review puts back, and what
        every later review starts from (the first review wrote it as first drafted)."""
        if self.repo is None:
            return None
        where = {
            self.runtime.workspace.relative(self.agent.review / (item_id + s)): s
            for s in ITEM_SUFFIXES
        }
        for path, object_id in self.repo.file_ids_at_head(list(where)).items():
            found = self.repo.object_at_head(path) if object_id is not None else None
            if found is not None:
                return FirstDraft(where[path], found.content)
        return None


def _read(item_file: ItemFile) -> ReadItem:
    try:
        return ReadItem(item_file, read_item(item_file.path))
    except FeedbackdError as error:
        return ReadItem(item_file, error=error)
