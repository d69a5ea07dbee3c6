"""Reviews in the agent pass (SPEC section 15): where several curators review each draft, what
a file moved to approved/ or rejected/ stands for, as steps of the pass's plan.

- A draft's move (from queue/ or review/) is a review, planned by reviewplan.py: recorded (the
  draft back in review/ as first drafted), the deciding one (one decision naming every
  reviewer, or a dispute), or refused (its curator reviewed the item already).
- A disputed item's move is the decision of the curator who settles it, once the file no longer
  holds the dispute's `reviews` key.
- A decided item moved from one decision folder to the other is a decision, as with one curator.

The agent pass (core/curation/agentplan.py) knows nothing of reviews: it hands each moved file
to `ReviewSteps.judge` and puts `ReviewSteps.before` first.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial

from feedbackd.core.changes import Action, Append, Change, Remove, Write
from feedbackd.core.curation import decisions
from feedbackd.core.curation.agentplan import (
    AgentView,
    BadFile,
    Decision,
    FirstDraft,
    ItemFile,
    PlanNotes,
    ReadItem,
    Refusal,
    Step,
    item_and_author,
    judge,
    to_decide,
)
from feedbackd.core.curation.decisions import DecisionRecord
from feedbackd.core.curation.items import Item, decode_text, diff_content, parse_item
from feedbackd.core.errors import FeedbackdError
from feedbackd.core.ids import Draw
from feedbackd.core.people import Person
from feedbackd.core.reviews.disputefiles import agreed_text, reviews_left, with_reviews
from feedbackd.core.reviews.reviewlog import ReviewRecord, Verdict, reviews_of
from feedbackd.core.reviews.reviewplan import (
    Agreed,
    Deciding,
    Disputed,
    Refused,
    ReviewAct,
    ReviewPaths,
    adjudicator_trailers,
    agreed_author,
    dispute_change,
    finishing,
    outcome,
    plan_review,
    reviewers_trailers,
    reviews_key,
)
from feedbackd.core.timeutil import parse_iso
from feedbackd.core.workspacepaths import DECISION_FOLDERS, ITEM_SUFFIXES, AgentPaths

# Where a draft waits for its next review: the folders a review's commit takes it from.
_WAITING = ("queue", "review")
# A draft edited where it waits in review/: kept as it is, and explained beside it.
_EDITED = (
    "edited where it waits for the next curator's review, who would see these edits",
    "to record them as your review, move it to approved/ or rejected/; to take them back,"
    " `git checkout` the file",
)
# The folder each verdict's decision is in.
_FOLDERS: dict[Verdict, str] = {"approve": "approved", "reject": "rejected"}


@dataclass(frozen=True)
class ReviewSteps:
    """The reviews of one agent whose drafts `required` curators review (2 or more)."""

    required: int

    def before(self, view: AgentView, notes: PlanNotes) -> list[Step | Decision]:
        """The commits a pass killed after a review's files were written, before its commit,
        left to make; then the outcome of drafts waiting in review/ whose reviews are all in
        (a merge brought the last one); a damaged reviews.jsonl is told once, and reviews wait
        for it. A draft edited where it waits in review/ is explained beside it."""
        notes.problems.extend(BadFile(path, *_EDITED) for path in view.edited_in_review)
        if isinstance(view.reviews, FeedbackdError):
            if view.undecided or view.waiting:
                notes.problems.append(BadFile.of(view.agent.reviews, view.reviews, settles=False))
            return []
        finished: list[Step | Decision] = [*_finish_unfinished(view, self.required)]
        return finished + _reached(view, self.required, notes)

    def judge(
        self, view: AgentView, read: ReadItem, notes: PlanNotes, now: datetime, draw: Draw
    ) -> Decision | Step | Refusal | None:
        """What a file moved to approved/ or rejected/ stands for: a decision (one curator's,
        the reviews' agreed one, or a dispute settled), a review's step, or a review refused;
        None when it must wait (a problem says why)."""
        latest = decisions.latest_states(view.ledger)
        if not _may_be_review(read.file, latest):
            return judge(view, read, notes)
        if isinstance(view.reviews, FeedbackdError):
            return None  # `before` says why
        found = item_and_author(view, read, notes)
        if found is None:
            return None
        item, curator = found
        item_id = read.file.item_id
        earlier = reviews_of(_records(view), item_id, _round_start(latest, item_id))
        so_far = outcome(earlier, self.required)
        if isinstance(so_far, Disputed) and not _replaying(view, earlier, curator):
            return _settling(view, read, item, so_far, notes)
        review = _Review(view, read, item, curator, notes)
        if isinstance(so_far, Agreed) and read.file.folder == _FOLDERS[so_far.verdict]:
            # Decided by the reviews already: a killed pass's deciding review, or the file
            # a pass wrote for reviews a merge completed, whoever's pass finds it.
            return review.agreed(so_far, None)
        return review.plan(earlier, self.required, now, draw)

    def decided_trailers(
        self,
        ledger: Sequence[DecisionRecord],
        reviews: Sequence[ReviewRecord],
        record: DecisionRecord,
        author: Person,
    ) -> list[tuple[str, str]]:
        """The trailers naming the reviewers of the decision `record` (its ledger line), for the
        commit that completes it after an interruption, as its own commit would have: none
        where no reviews decided it (a decided item moved to the other decision folder)."""
        before = list(ledger[: ledger.index(record)]) if record in ledger else list(ledger)
        latest = decisions.latest_states(before)
        if not _a_draft(latest, record.item):
            return []
        found = reviews_of(reviews, record.item, _round_start(latest, record.item))
        result = outcome(found, self.required)
        if isinstance(result, Agreed):
            return reviewers_trailers(result.reviews)
        if isinstance(result, Disputed):
            return adjudicator_trailers(author, result.reviews)
        return []


def _records(view: AgentView) -> list[ReviewRecord]:
    assert not isinstance(view.reviews, FeedbackdError)
    return list(view.reviews)


def _may_be_review(item_file: ItemFile, latest: dict[str, DecisionRecord]) -> bool:
    """A draft's first move to a decision folder since it was drafted (or queued again); not a
    decided item moved from one decision folder to the other, nor a webhouse queue's entry."""
    whole_file = item_file.path.stem == item_file.item_id
    return whole_file and _a_draft(latest, item_file.item_id)


def _a_draft(latest: dict[str, DecisionRecord], item_id: str) -> bool:
    """Never decided, or queued again since."""
    state = latest.get(item_id)
    return state is None or state.state == "queued"


def _round_start(latest: dict[str, DecisionRecord], item_id: str) -> str | None:
    """When the item last became a draft again: only the reviews since count."""
    state = latest.get(item_id)
    return state.at if state is not None and state.state == "queued" else None


def _replaying(view: AgentView, earlier: Sequence[ReviewRecord], curator: Person) -> bool:
    """The curator's review is among `earlier` but HEAD lacks it: a killed pass's, replayed."""
    email = curator.email.lower()
    return any(
        r.id in view.unfinished_reviews and r.curator.email.lower() == email for r in earlier
    )


@dataclass(frozen=True)
class _Review:
    """One curator's move of a draft, read as a review."""

    view: AgentView
    read: ReadItem
    item: Item
    curator: Person
    notes: PlanNotes

    def plan(
        self, earlier: Sequence[ReviewRecord], required: int, now: datetime, draw: Draw
    ) -> Decision | Step | Refusal | None:
        """The review planned (reviewplan.py) and made a step of the pass."""
        agent, moved = self.view.agent, self.read.file
        first = self.read.first_draft or FirstDraft(moved.path.suffix, b"")
        name = moved.item_id + first.suffix
        paths = ReviewPaths(moved.path, agent.review / name, agent.disputed / name, agent.reviews)
        approving = moved.folder == "approved"
        version = self.item.content if approving else (self.item.rejection_feedback or "")
        act = ReviewAct(
            agent.agent_id,
            moved.item_id,
            self.curator,
            "approve" if approving else "reject",
            version,
        )
        dispute_text = partial(with_reviews, first.data, paths.disputed)
        planned = plan_review(
            act,
            earlier,
            required,
            paths,
            decode_text(first.data),
            dispute_text,
            now,
            draw,
            self.view.unfinished_reviews,
        )
        if isinstance(planned, Refused):
            return Refusal(paths.review, planned.message, planned.hint, planned.actions)
        if planned.change is not None:  # recorded, or disputed
            return _review_step(agent, moved.item_id, planned.change)
        assert isinstance(planned, Deciding) and isinstance(planned.result, Agreed)
        return self.agreed(planned.result, planned.line)

    def agreed(self, agreed: Agreed, line: Append | None) -> Decision | None:
        """The decision the reviewers agree on: the first reviewer's, naming the others;
        `line`, the deciding review's, where the log lacks it. A copy of the draft left in
        review/ (a killed pass wrote the decided file, not yet removing it) goes with it."""
        decision = judge(self.view, self.read, self.notes)  # an approval's corrections, warnings
        if decision is None:
            return None
        item_id = self.read.file.item_id
        left = [f.path for f in self.view.files if f.folder == "review" and f.item_id == item_id]
        first = ((line,) if line else ()) + tuple(Remove(path) for path in left)
        return _as_agreed(self.view, decision, agreed, first + self._noted(agreed))

    def _noted(self, agreed: Agreed) -> tuple[Write, ...]:
        """Agreeing rejections whose notes differ: the decided file gets them all, joined, as
        its rejectionFeedback (the draft as first drafted with the decision's note), so that
        the file says what feedback.json records, and `export` tells it."""
        first, path = self.read.first_draft, self.read.file.path
        if agreed.verdict != "reject" or self.item.rejection_feedback == agreed.notes:
            return ()
        if first is None or not first.data or first.suffix != path.suffix:
            return ()
        return (Write(path, agreed_text(first.data, path, None, agreed.notes or ""), exact=True),)


def _review_step(agent: AgentPaths, item_id: str, change: Change) -> Step:
    """A review's (or a dispute's) change as a step; its commit holds the draft's departure
    from queue/ or review/ too."""
    origins = [agent.folder(f) / (item_id + s) for f in _WAITING for s in ITEM_SUFFIXES]
    commit = replace(change.commit, paths=tuple(dict.fromkeys((*change.commit.paths, *origins))))
    return Step(commit, first=change.actions)


def _settling(
    view: AgentView, read: ReadItem, item: Item, dispute: Disputed, notes: PlanNotes
) -> Decision | None:
    """A disputed item moved to approved/ or rejected/: the decision of the curator who settles
    it, once they dropped the dispute's `reviews` key from the file."""
    left = reviews_left(item)
    if left is not None:
        notes.problems.append(BadFile.of(read.file.path, left))
        return None
    decision = judge(view, read, notes)
    if decision is None:
        return None
    trailers = adjudicator_trailers(decision.author, dispute.reviews)
    return replace(decision, trailers=tuple(trailers), log=view.agent.reviews)


def _finish_unfinished(view: AgentView, required: int) -> list[Step]:
    """The commits of reviews whose files a killed pass wrote (the moved file gone already);
    those whose moved file is still there are replayed from it instead."""
    if not view.unfinished_reviews:
        return []
    latest = decisions.latest_states(view.ledger)
    moved = {f.item_id for f in to_decide(view.files, view.ledger)}
    left = {
        r.item: r
        for r in _records(view)
        if r.id in view.unfinished_reviews and r.item not in moved and _a_draft(latest, r.item)
    }
    steps = []
    for item_id, review in sorted(left.items()):
        round_reviews = reviews_of(_records(view), item_id, _round_start(latest, item_id))
        folders = ("queue", "review", "disputed", *DECISION_FOLDERS)
        paths = [view.agent.folder(f) / (item_id + s) for f in folders for s in ITEM_SUFFIXES]
        where = ReviewPaths(paths[0], paths[0], paths[0], view.agent.reviews)
        change = finishing(review, round_reviews, required, view.agent.agent_id, where)
        if change is not None:  # the files as they stand
            commit = replace(change.commit, paths=(view.agent.reviews, *paths), needed=())
            steps.append(Step(commit))
    return steps


def _as_agreed(
    view: AgentView, decision: Decision, agreed: Agreed, first: tuple[Action, ...]
) -> Decision:
    """`decision` made the reviewers': authored by the first, naming the others."""
    return replace(
        decision,
        author=agreed_author(agreed),
        notes=agreed.notes if agreed.verdict == "reject" else None,
        trailers=tuple(reviewers_trailers(agreed.reviews)),
        log=view.agent.reviews,
        first=first,
    )


def _reached(view: AgentView, required: int, notes: PlanNotes) -> list[Step | Decision]:
    """The outcome of each draft waiting in review/ whose reviews are all in, with no move
    left to decide it: two clones each recorded a review ("1 of 2"), and a merge brought them
    together. The pass reaches the outcome the last move would have: the agreed decision
    (feedbackd writes the decided file), or the dispute."""
    latest = decisions.latest_states(view.ledger)
    reached: list[Step | Decision] = []
    for read in view.waiting:
        item_id, first = read.file.item_id, read.first_draft
        if first is None or not first.data or not _a_draft(latest, item_id):
            if read.error is not None:
                notes.problems.append(BadFile.of(read.file.path, read.error))
            continue
        reviews = reviews_of(_records(view), item_id, _round_start(latest, item_id))
        result = outcome(reviews, required)
        if isinstance(result, Disputed):
            reached.append(_disputed_waiting(view, read.file, first, result))
        elif isinstance(result, Agreed):
            reached.append(_agreed_waiting(view, read.file, first, result))
    return reached


def _disputed_waiting(
    view: AgentView, waiting: ItemFile, first: FirstDraft, dispute: Disputed
) -> Step:
    """A waiting draft's dispute, authored by its last reviewer (as a move would have)."""
    agent, name = view.agent, waiting.item_id + first.suffix
    paths = ReviewPaths(waiting.path, waiting.path, agent.disputed / name, agent.reviews)
    text = with_reviews(first.data, paths.disputed, reviews_key(dispute.reviews))
    last = dispute.reviews[-1].curator
    change = dispute_change(agent.agent_id, last, dispute, paths, None, text)
    return _review_step(agent, waiting.item_id, change)


def _agreed_waiting(
    view: AgentView, waiting: ItemFile, first: FirstDraft, agreed: Agreed
) -> Decision:
    """A waiting draft's agreed decision: the decided file written from the first draft with
    the agreed version (or notes), the draft's departure from review/ in the same commit."""
    folder = _FOLDERS[agreed.verdict]
    target = view.agent.folder(folder) / (waiting.item_id + first.suffix)
    text = agreed_text(first.data, target, agreed.content, agreed.notes or "")
    item = parse_item(text.encode("utf-8"), target.suffix, waiting.item_id, target)
    drafted = parse_item(first.data, first.suffix, waiting.item_id)
    original = item.original if item.original is not None else drafted.content
    approved = agreed.verdict == "approve"
    corrections = diff_content(original, item.content) if approved else []
    decision = Decision(
        ItemFile(folder, waiting.item_id, target),
        item,
        "approved" if approved else "rejected",
        agreed_author(agreed),
        corrections,
    )
    moves = (Write(target, text, exact=True), Remove(waiting.path))
    # Every clone that reaches this outcome (each pulled the other's review) makes the same
    # decision: at the last review's time, its ids drawn from the reviews, so the merge of
    # their ledgers and feedback keeps one, and the sync's rebase drops the second commit.
    last = max(parse_iso(review.at) for review in agreed.reviews)
    made = (last, _drawn_from("\0".join(sorted(review.id for review in agreed.reviews))))
    return replace(_as_agreed(view, decision, agreed, moves), made=made)


def _drawn_from(seed: str) -> Draw:
    """A draw of characters that depends on `seed` alone: the same ids wherever it is used."""
    counter = itertools.count()

    def draw(alphabet: str, count: int) -> str:
        digest = hashlib.sha256(f"{seed}\0{next(counter)}".encode()).digest()
        return "".join(alphabet[byte % len(alphabet)] for byte in digest[:count])

    return draw
