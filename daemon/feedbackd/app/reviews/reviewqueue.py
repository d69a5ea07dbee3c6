"""The drafts that wait for one curator (SPEC section 15): those in queue/ and review/ they have
not reviewed in the draft's current round, and every disputed one, each with what the panel
shows of it (review n + 1 of N; each curator's version of a dispute). Read from the work tree,
as the curator's next move will be.
"""

from __future__ import annotations

from typing import Any

from feedbackd.app.workspace.agentfiles import read_item, read_ledger
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.errors import FeedbackdError
from feedbackd.core.people import parse_person
from feedbackd.core.reviews.reviewlog import ReviewRecord, read_reviews
from feedbackd.core.reviews.reviewplan import REVIEWS_KEY
from feedbackd.core.reviews.waiting import (
    current_rounds,
    dispute_versions,
    reviewed_by,
    reviewers,
    round_starts,
)
from feedbackd.core.workspacepaths import ITEM_SUFFIXES, AgentPaths
from feedbackd.edges.files import read_file_bytes

# Where a draft waits: a curator's queue/, review/ for the next reviewer, disputed/ to settle.
WAITS = ("queue", "review", "disputed")


def round_reviews(runtime: Runtime, agent: AgentPaths) -> dict[str, list[ReviewRecord]]:
    """item → its reviews in its current round (after the ledger's latest `queued` line for
    it). A damaged reviews.jsonl is an error naming its line: who may review what is unknown."""
    try:
        text = read_file_bytes(agent.reviews).decode("utf-8", errors="replace")
    except (FileNotFoundError, NotADirectoryError):
        return {}
    reviews = read_reviews(text, runtime.workspace.relative(agent.reviews))
    if not reviews:
        return {}
    return current_rounds(reviews, round_starts(read_ledger(agent.decisions)))


def waiting_for(
    runtime: Runtime,
    agent: AgentPaths,
    drafts: dict[str, list[dict[str, Any]]],
    curator: str | None,
) -> list[dict[str, Any]]:
    """The drafts of each folder (`drafts` by WAITS) that wait for `curator` (everyone's, for
    None), each with `waits` saying where; a draft in review/ with `review` (how many
    reviewed it, how many must), a disputed one with each curator's `versions`."""
    person = parse_person(curator, "curator") if curator is not None else None
    rounds = round_reviews(runtime, agent)
    required = runtime.settings.review.required_for(agent.agent_id)
    shown: list[dict[str, Any]] = []
    for folder in WAITS:
        for draft in drafts.get(folder, []):
            reviews = rounds.get(draft["id"], [])
            if folder != "disputed" and person is not None and reviewed_by(reviews, person):
                continue  # theirs is in: the draft waits for the others
            shown.append(_annotated(agent, folder, draft, reviews, required))
    return shown


def _annotated(
    agent: AgentPaths,
    folder: str,
    draft: dict[str, Any],
    reviews: list[ReviewRecord],
    required: int,
) -> dict[str, Any]:
    shown = {**draft, "waits": folder}
    if folder == "review":
        # How many, not who nor how: the next curator reviews blind.
        shown["review"] = {"done": len(reviewers(reviews)), "of": required}
    if folder == "disputed" and "error" not in draft:
        shown["versions"] = _versions(agent, draft)
    return shown


def _versions(agent: AgentPaths, draft: dict[str, Any]) -> list[dict[str, Any]]:
    """Each curator's version of a disputed draft, from its file's `reviews` key."""
    found = [agent.disputed / (draft["id"] + suffix) for suffix in ITEM_SUFFIXES]
    try:
        item = read_item(next(path for path in found if path.is_file()))
    except (StopIteration, FeedbackdError):
        return []
    return dispute_versions(item.content, item.document.get(REVIEWS_KEY))
