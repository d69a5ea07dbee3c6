"""A rating and what self-optimisation changes, as pure plans: one core/changes.py Change each.

The application reads (the ratings, SOUL.md, the ledgers, which memory lines are written) and
hands the values here; the plan says what to append, write and remove, and the one commit that
records it; app/commits/recording.py applies it, as it applies curation's. Nothing here touches
the disk, git, the clock or randomness.

Each change starts with its ledger line (the rating line, the price ledger's line): once it is
written the change counts as made, and a pass killed before the commit is finished by the next
one, which plans the same change again from what it finds (`stored`, `remembered`: what is
written already is not written twice) and commits it as the uninterrupted one would have.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from pathlib import Path

from feedbackd.core.changes import Action, Append, Change, CommitRequest, Remove, Write
from feedbackd.core.commitmsg import PRICE_NEW_KEY, PRICE_OLD_KEY, TRANSACTION_KEY, one_line
from feedbackd.core.ids import validate_id
from feedbackd.core.people import Person, agent_person
from feedbackd.core.ratings.memory import (
    PATTERNS,
    PRICING_ADJUSTMENT,
    MemoryRecord,
    memory_file,
    new_record,
    rental_memories,
)
from feedbackd.core.ratings.priceledger import PriceRecord
from feedbackd.core.ratings.records import Rating, rating_line
from feedbackd.core.ratings.soul import set_price
from feedbackd.core.ratings.storedratings import AnyRating
from feedbackd.core.workspacepaths import AgentPaths, Workspace

MEMORY_CHARS = 4000  # a memory record's content is cut to this


# --- a rating ---------------------------------------------------------------------------------
def rating_path(workspace: Workspace, rating: Rating) -> Path:
    """`{provider}/ratings/{skill}/{YYYY-MM}.jsonl`: where the rating's line goes."""
    skill = validate_id(rating.skill_id, "skill id")
    return workspace.agent(rating.provider_agent).ratings / skill / f"{rating.month}.jsonl"


def plan_rating(
    workspace: Workspace,
    rating: Rating,
    now: datetime,
    earlier: Sequence[AnyRating],
    committer: Person,
    *,
    stored: bool = False,
    remembered: Collection[str] = (),
    also: Sequence[Path] = (),
) -> Change:
    """The provider's rating line (unless `stored`), the buyer's memory of the rental (its
    records but those whose id is `remembered`), `also` removed (the inbox file that held the
    rating, once the line is stored), in one `rating` commit.

    `earlier`: the buyer's recent ratings of the provider, which its profile sums up."""
    line = rating_path(workspace, rating)
    memory = [
        (memory_file(workspace, agent, record.category), record)
        for agent, record in rental_memories(rating, now, earlier)
    ]
    actions: list[Action] = [] if stored else [Append(line, rating_line(rating))]
    actions += [Append(path, rec.line()) for path, rec in memory if rec.id not in remembered]
    actions += [Remove(path) for path in also]
    paths = [line, *(path for path, _ in memory), *also]
    return Change(rating_commit(rating, paths, committer), tuple(actions))


def rating_commit(rating: Rating, paths: Sequence[Path], committer: Person) -> CommitRequest:
    """The commit of one rating: its line, the buyer's memory and whatever else it holds;
    authored by the buyer, whose act it is."""
    return CommitRequest(
        "rating",
        rating.provider_agent,
        rating_summary(rating),
        list(paths),
        author=agent_person(rating.requester_agent, committer),
        skill=rating.skill_id,
        body=_rating_body(rating),
        trailers=[(TRANSACTION_KEY, rating.transaction_id)],
    )


def rating_summary(rating: Rating) -> str:
    return (
        f"{rating.rating}/5 {rating.result_quality} from {rating.requester_agent}"
        f" ({rating.cost_value_ratio})"
    )


def _rating_body(rating: Rating) -> list[str]:
    lines = [f"- would reuse: {'yes' if rating.would_reuse else 'no'}"]
    if rating.quality_details:
        lines.append(f'- details: "{one_line(rating.quality_details)}"')
    return lines


# --- a price change ---------------------------------------------------------------------------
def plan_price_change(
    agent: AgentPaths,
    patterns: Path,
    record: PriceRecord,
    soul: str,
    now: datetime,
    *,
    stored: bool = False,
    remembered: bool = False,
) -> Change:
    """The price ledger's line (unless `stored`), SOUL.md's `pricing:` line (unless `soul`
    says the new price already), the provider's memory of it (unless `remembered`), in one
    `pricing` commit with the old and new prices in its trailers."""
    actions: list[Action] = [] if stored else [Append(agent.price_ledger, record.line())]
    new_soul = set_price(soul, record.skill, float(record.priceNew))
    if new_soul != soul:
        actions.append(Write(agent.soul, new_soul, exact=True))
    if not remembered:
        memory = skill_memory(
            record.skill,
            PRICING_ADJUSTMENT,
            record.memory_text,
            "pricing",
            now,
            price_memory_id(record),
        )
        actions.append(Append(patterns, memory.line()))
    commit = CommitRequest(
        "pricing",
        agent.agent_id,
        record.summary,
        [agent.soul, agent.price_ledger, patterns],
        skill=record.skill,
        trailers=[(PRICE_OLD_KEY, record.priceOld), (PRICE_NEW_KEY, record.priceNew)],
    )
    return Change(commit, tuple(actions))


def price_memory_id(record: PriceRecord) -> str:
    """The id of the memory record of a price change: its own, so that it is written once."""
    return f"mem-{record.id}"


# --- lessons and descriptions -----------------------------------------------------------------
def plan_optimization(
    agent: AgentPaths,
    skill: str,
    written: Write,
    memory: MemoryRecord,
    patterns: Path,
    message: tuple[str, Sequence[str]],
    *,
    stored: bool = False,
    remembered: bool = False,
) -> Change:
    """A skill's lessons file or SOUL.md rewritten (unless `stored`: a killed pass wrote it),
    and the provider's memory of why (unless `remembered`), in one `optimize` commit whose
    `message` is (summary, body)."""
    summary, body = message
    commit = CommitRequest(
        "optimize", agent.agent_id, summary, [written.path, patterns], skill=skill, body=body
    )
    actions: list[Action] = [] if stored else [written]
    if not remembered:
        actions.append(Append(patterns, memory.line()))
    return Change(commit, tuple(actions))


def skill_memory(
    skill: str, importance: float, content: str, kind: str, now: datetime, record_id: str
) -> MemoryRecord:
    """The provider's `patterns` record of a change to one of its skills."""
    return new_record(
        PATTERNS,
        importance,
        one_line(content, MEMORY_CHARS),
        subject=skill,
        source=f"{kind}:{skill}",
        now=now,
        record_id=record_id,
    )
