"""What a pass reads for reviews by several curators (SPEC section 15): an agent's
`reviews.jsonl`, and which of its lines HEAD lacks (a pass killed after writing one, before
its commit), so that the next pass finishes that review rather than refuse it as a second one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from feedbackd.app.commits.ledgers import CommittedLedgers
from feedbackd.app.workspace import problems
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.curation.agentplan import FirstDraft, ItemFile, ReadItem
from feedbackd.core.errors import FeedbackdError, WorkspaceError
from feedbackd.core.reviews.reviewlog import ReviewRecord, read_reviews
from feedbackd.core.workspacepaths import ITEM_SUFFIXES, AgentPaths
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

    def with_first_draft(
        self, read: ReadItem, draft_commits: Callable[[ItemFile], Mapping[str, bytes]]
    ) -> ReadItem:
        """A file moved to a decision folder, with its draft as first drafted: the snapshot this
        machine took of it in queue/ (of its draft commit's version, or of the file as it was
        first committed), else its draft commit (read from git only then), else the moved
        file as it is (a draft git never held)."""
        if read.item is None:
            return read
        moved = read.file
        first = moved.path.suffix
        suffixes = (first, *(other for other in ITEM_SUFFIXES if other != first))
        for suffix in suffixes:
            snapshot = self.snapshot_of(moved.item_id + suffix)
            if snapshot.exists():
                return replace(read, first_draft=FirstDraft(suffix, read_file_bytes(snapshot)))
        in_git = draft_commits(moved)
        for suffix in suffixes:
            data = in_git.get(self.rel(self.agent.queue / (moved.item_id + suffix)))
            if data is not None:
                return replace(read, first_draft=FirstDraft(suffix, data))
        try:
            return replace(read, first_draft=FirstDraft(first, read_file_bytes(moved.path)))
        except OSError:  # gone meanwhile: the step is read again before anything is written
            return replace(read, first_draft=FirstDraft(first, b""))
