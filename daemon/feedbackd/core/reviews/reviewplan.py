"""What a curator's review leads to (SPEC section 15), as a pure plan.

With `review.required` N ≥ 2 a curator's move of a draft to approved/ or rejected/ is a review.
Given the item's reviews so far, the curator, the verdict and their version, the review is:
- refused: the curator reviewed this item already (the draft goes back to review/ unchanged, and
  `{file}.error` says who reviewed it and that another curator must);
- recorded: review n of N, a line in `reviews.jsonl`, the draft back in review/ as first drafted;
- the deciding one: all verdicts agree (all approve with the same version, or all reject) and the
  item is decided once, naming every reviewer; or they differ and the item waits in disputed/.

`outcome` reads a set of reviews whatever order they came in, so two clones that each recorded
a review of one item, merged, reach the same outcome.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from feedbackd.core.changes import Action, Append, Change, CommitRequest, Remove, Write
from feedbackd.core.commitmsg import ITEM_KEY
from feedbackd.core.curation.items import normalised
from feedbackd.core.ids import Draw
from feedbackd.core.people import Person
from feedbackd.core.reviews.reviewlog import ReviewRecord, Verdict, new_review
from feedbackd.core.timeutil import parse_iso

VERDICT_KEY = "Feedback-Verdict"
REVIEWERS_KEY = "Feedback-Reviewers"
ADJUDICATOR_KEY = "Feedback-Adjudicator"
CO_AUTHOR_KEY = "Co-authored-by"
REVIEWS_KEY = "reviews"  # the top-level key of a disputed file


@dataclass(frozen=True)
class Pending:
    """Fewer curators than required have reviewed the item."""

    reviews: tuple[ReviewRecord, ...]
    required: int


@dataclass(frozen=True)
class Agreed:
    """Every reviewer gave the same verdict (and, approving, the same version): one decision."""

    reviews: tuple[ReviewRecord, ...]
    verdict: Verdict
    content: dict[str, Any] | None  # the agreed version of an approval
    notes: str | None  # a rejection's notes, joined

    @property
    def reviewers(self) -> tuple[Person, ...]:
        return tuple(r.curator for r in self.reviews)


@dataclass(frozen=True)
class Disputed:
    """The reviews disagree: the item waits in disputed/ for a curator to settle it."""

    reviews: tuple[ReviewRecord, ...]

    def counts(self) -> str:
        """`approve 1, reject 1`: how the verdicts split."""
        approvals = sum(r.verdict == "approve" for r in self.reviews)
        return f"approve {approvals}, reject {len(self.reviews) - approvals}"


Outcome = Pending | Agreed | Disputed


def outcome(reviews: Sequence[ReviewRecord], required: int) -> Outcome:
    """What an item's reviews amount to: one review per curator (their first), oldest first."""
    kept = _one_per_curator(reviews)
    if len(kept) < required:
        return Pending(kept, required)
    verdicts = {r.verdict for r in kept}
    if verdicts == {"reject"}:
        notes = "\n\n".join(dict.fromkeys(n for r in kept if (n := (r.notes or "").strip())))
        return Agreed(kept, "reject", None, notes)
    first = kept[0].content or {}
    if verdicts == {"approve"} and all(same_version(first, r.content or {}) for r in kept):
        return Agreed(kept, "approve", first, None)
    return Disputed(kept)


def _one_per_curator(reviews: Sequence[ReviewRecord]) -> tuple[ReviewRecord, ...]:
    ordered = sorted(reviews, key=lambda r: (parse_iso(r.at), r.id))
    first: dict[str, ReviewRecord] = {}
    for review in ordered:
        first.setdefault(review.curator.email.lower(), review)
    return tuple(first.values())


def same_version(a: Any, b: Any) -> bool:
    """Two versions of the content the same as curators read them: text compared after
    normalising line endings and trailing white space, everything else as it is."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_version(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_version(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, str) and isinstance(b, str):
        return normalised(a) == normalised(b)
    return type(a) is type(b) and a == b


# --- one review planned ------------------------------------------------------------------------
@dataclass(frozen=True)
class ReviewAct:
    """A curator's move of a draft, read as a review: who, which way, and their version (the
    content fields of an approval, the note of a rejection)."""

    agent: str
    item: str
    curator: Person
    verdict: Verdict
    version: dict[str, Any] | str


@dataclass(frozen=True)
class ReviewPaths:
    """Where the draft is and goes: the file the curator moved, review/, disputed/, the log."""

    moved: Path
    review: Path
    disputed: Path
    log: Path


@dataclass(frozen=True)
class Refused:
    """The review is not taken: the draft goes back to review/ as it was, and a `.error` file
    beside it says why (`message`) and what to do (`hint`)."""

    message: str
    hint: str
    actions: tuple[Write | Remove, ...]

    @property
    def error(self) -> str:
        """The two lines of the `.error` file."""
        return f"feedbackd: {self.message}\n{self.hint}\n"


@dataclass(frozen=True)
class Recorded:
    """Review n of N recorded; the draft waits in review/ as first drafted."""

    review: ReviewRecord
    change: Change


@dataclass(frozen=True)
class Deciding:
    """The N-th review: `result` is Agreed (the caller makes the decision, appending `line`
    with it and naming the reviewers) or Disputed (`change` puts the item in disputed/)."""

    review: ReviewRecord
    result: Agreed | Disputed
    line: Append | None  # None: the log holds it already (a killed pass's, replayed)
    change: Change | None  # the dispute's; None for an agreement


ReviewPlan = Refused | Recorded | Deciding


def plan_review(
    act: ReviewAct,
    earlier: Sequence[ReviewRecord],
    required: int,
    paths: ReviewPaths,
    first_draft: str,
    dispute_text: Callable[[list[dict[str, Any]]], str],
    now: datetime,
    draw: Draw,
    unfinished: frozenset[str] = frozenset(),
) -> ReviewPlan:
    """The plan of one review. `earlier`: the item's reviews in its current round;
    `first_draft`: the draft's text as first drafted; `dispute_text`: that draft with a
    `reviews` key of the value given, in the draft's own format; `unfinished`: the ids of the
    log's reviews that HEAD lacks (a pass killed after writing the line, before its commit).

    A curator's review already in the log is refused, unless it is unfinished and this move
    is that same review: then the rest of it is planned again, and no line is added twice."""
    mine = [r for r in earlier if r.curator.email.lower() == act.curator.email.lower()]
    if mine and not _replayed(mine[0], act, unfinished):
        return _refused(act, mine[0], paths, first_draft)
    review = (
        mine[0] if mine else new_review(act.item, act.curator, act.verdict, act.version, now, draw)
    )
    result = outcome([*earlier] if mine else [*earlier, review], required)
    line = None if mine else Append(paths.log, review.line())
    if isinstance(result, Pending):
        return Recorded(review, _recorded_change(act, result, paths, line, first_draft))
    if isinstance(result, Agreed):
        return Deciding(review, result, line, None)
    text = dispute_text(reviews_key(result.reviews))
    change = dispute_change(act.agent, act.curator, result, paths, line, text)
    return Deciding(review, result, line, change)


def _replayed(review: ReviewRecord, act: ReviewAct, unfinished: frozenset[str]) -> bool:
    """The curator's review in the log is this move, written by a pass that did not finish."""
    if review.id not in unfinished or review.verdict != act.verdict:
        return False
    if review.verdict == "reject":
        return review.notes == act.version
    return same_version(review.content or {}, act.version)


def _refused(act: ReviewAct, mine: ReviewRecord, paths: ReviewPaths, first_draft: str) -> Refused:
    message = (
        f"{act.item} was reviewed already by {mine.curator} ({mine.verdict}, {mine.at});"
        " another curator must review it"
    )
    hint = "Leave it in review/ for a curator who has not reviewed it; it is back there as it was."
    # No commit: review/ holds the draft as HEAD does; only the curator's move is undone.
    back = Write(paths.review, first_draft, exact=True)
    return Refused(message, hint, (back, *_moved_away(paths, paths.review)))


def _moved_away(paths: ReviewPaths, kept: Path) -> tuple[Remove, ...]:
    return () if paths.moved == kept else (Remove(paths.moved),)


def _recorded_change(
    act: ReviewAct, pending: Pending, paths: ReviewPaths, line: Append | None, first_draft: str
) -> Change:
    # The line first: a pass killed after it replays this review from the moved file (or,
    # when that is gone already, commits what it left: `finishing`), and nothing is lost.
    actions: list[Action] = [line] if line else []
    actions += [Write(paths.review, first_draft, exact=True), *_moved_away(paths, paths.review)]
    return Change(_review_commit(act.agent, act.curator, pending, paths), tuple(actions))


def _review_commit(
    agent: str, curator: Person, pending: Pending, paths: ReviewPaths
) -> CommitRequest:
    mine = next(r for r in pending.reviews if r.curator.email.lower() == curator.email.lower())
    item, number = mine.item, pending.reviews.index(mine) + 1
    return CommitRequest(
        event="review",
        agent=agent,
        summary=f"{item} by {curator.name} ({number} of {pending.required})",
        paths=_paths(paths.moved, paths.review, paths.log),
        author=curator,
        item=item,
        trailers=((ITEM_KEY, item), (VERDICT_KEY, mine.verdict)),
        within=paths.log.parent,
        needed=(paths.review,),  # what the next curator reviews: never committed away
    )


def dispute_change(
    agent: str,
    curator: Person,
    dispute: Disputed,
    paths: ReviewPaths,
    line: Append | None,
    text: str,
) -> Change:
    """The item to disputed/ (`text`, the draft with its `reviews` key), in a commit authored
    by `curator`; `line` first, where the review that disputes it is not in the log yet."""
    actions: list[Action] = [line] if line else []
    actions.append(Write(paths.disputed, text))
    actions += [Remove(path) for path in _paths(paths.moved, paths.review)]
    return Change(_dispute_commit(agent, curator, dispute, paths), tuple(actions))


def _dispute_commit(
    agent: str, curator: Person, dispute: Disputed, paths: ReviewPaths
) -> CommitRequest:
    item = dispute.reviews[0].item
    return CommitRequest(
        event="dispute",
        agent=agent,
        summary=f"{item} ({dispute.counts()})",
        paths=_paths(paths.moved, paths.review, paths.disputed, paths.log),
        author=curator,
        item=item,
        body=tuple(_review_line(r) for r in dispute.reviews),
        trailers=((ITEM_KEY, item), *reviewers_trailers(dispute.reviews, co_authors=False)),
        within=paths.log.parent,
        needed=(paths.disputed,),
    )


def finishing(
    review: ReviewRecord,
    reviews: Sequence[ReviewRecord],
    required: int,
    agent: str,
    paths: ReviewPaths,
) -> Change | None:
    """The commit a pass killed after writing `review` (a line HEAD lacks) and its files, but
    before its commit, left to make: the files are committed as they stand. None when the
    item's reviews decide it (the decision's own recovery commits the line with its ledger
    line) or the review is not one of them."""
    result = outcome(reviews, required)
    if review not in result.reviews:
        return None
    if isinstance(result, Pending):
        return Change(_review_commit(agent, review.curator, result, paths))
    if isinstance(result, Disputed):
        return Change(_dispute_commit(agent, review.curator, result, paths))
    return None


def _paths(*paths: Path) -> tuple[Path, ...]:
    return tuple(dict.fromkeys(paths))


def _review_line(review: ReviewRecord) -> str:
    if review.verdict == "reject":
        return f'- {review.curator.name}: reject, "{review.notes or ""}"'
    return f"- {review.curator.name}: approve"


def reviews_key(reviews: Sequence[ReviewRecord]) -> list[dict[str, Any]]:
    """The `reviews` key of a disputed file: each curator's verdict, version and notes."""
    key = []
    for review in reviews:
        value = review.to_json()
        del value["id"], value["item"]
        key.append(value)
    return key


# --- what the decision's commit says of its reviewers ------------------------------------------
def reviewers_trailers(
    reviews: Sequence[ReviewRecord], co_authors: bool = True
) -> list[tuple[str, str]]:
    """`Feedback-Reviewers: A <a>, B <b>`, and (for a decision, authored by the first reviewer)
    a `Co-authored-by` for each of the others."""
    people = [str(r.curator) for r in reviews]
    trailers = [(REVIEWERS_KEY, ", ".join(people))]
    if co_authors:
        trailers += [(CO_AUTHOR_KEY, person) for person in people[1:]]
    return trailers


def agreed_author(agreed: Agreed) -> Person:
    """The author of an agreed decision: its first reviewer."""
    return agreed.reviews[0].curator


def adjudicator_trailers(
    adjudicator: Person, reviews: Sequence[ReviewRecord]
) -> list[tuple[str, str]]:
    """A dispute settled: `Feedback-Adjudicator` (the decision's author) and the reviewers."""
    return [(ADJUDICATOR_KEY, str(adjudicator)), *reviewers_trailers(reviews, co_authors=False)]
