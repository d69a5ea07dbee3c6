"""The commands' side of reviews by several curators (SPEC section 15): `approve`, `reject`, the
panel and HTTP move a draft from queue/, review/ or disputed/ as a curator would by hand, and
the pass records the review or the decision. What only a command can do better than a move by
hand is done here: refuse a curator's second review before anything is moved (the pass would
move the draft back and explain it beside the file), and drop a dispute's `reviews` key for the
curator who settles it.
"""

from __future__ import annotations

from pathlib import Path

from feedbackd.app.commits.openrepo import open_repo
from feedbackd.app.workspace.agentfiles import read_item, read_ledger
from feedbackd.app.workspace.runtime import Runtime, choose_author
from feedbackd.core.curation.decisions import latest_states
from feedbackd.core.errors import AlreadyDecided
from feedbackd.core.people import Person
from feedbackd.core.reviews.disputefiles import without_reviews
from feedbackd.core.reviews.reviewlog import read_reviews, reviews_of
from feedbackd.core.workspacepaths import AgentPaths
from feedbackd.edges.files import atomic_write_bytes, read_file_bytes, read_file_text


def draft_folders(runtime: Runtime, agent: AgentPaths) -> list[Path]:
    """Where a command looks for a draft: queue/, and where several curators review the
    agent's drafts (or did: the setting may have changed since), review/ and disputed/."""
    folders = [agent.queue]
    if runtime.settings.review.required_for(agent.agent_id) > 1 or agent.review.is_dir():
        folders.append(agent.review)
    if runtime.settings.review.required_for(agent.agent_id) > 1 or agent.disputed.is_dir():
        folders.append(agent.disputed)
    return folders


def refuse_second_review(runtime: Runtime, agent: AgentPaths, item_id: str, draft: Path) -> None:
    """AlreadyDecided (409 over HTTP) when the curator of this command reviewed the draft
    already in its current round: another curator must. Nothing is moved."""
    if runtime.settings.review.required_for(agent.agent_id) < 2 or draft.parent == agent.disputed:
        return
    try:
        text = read_file_text(agent.reviews)
    except FileNotFoundError:
        return
    state = latest_states(read_ledger(agent.decisions)).get(item_id)
    after = state.at if state is not None and state.state == "queued" else None
    earlier = reviews_of(
        read_reviews(text, runtime.workspace.relative(agent.reviews)), item_id, after
    )
    if not earlier:
        return
    curator = _curator(runtime, draft)
    for review in earlier:
        if review.curator.email.lower() == curator.email.lower():
            raise AlreadyDecided(
                f"{item_id} was reviewed already by {review.curator} ({review.verdict},"
                f" {review.at}); another curator must review it",
                hint="leave it for a curator who has not reviewed it: it stays where it is",
            )


def _curator(runtime: Runtime, draft: Path) -> Person:
    """Who the pass will take for this command's curator (agentread.py's rule)."""
    with open_repo(runtime) as repo:
        user = repo.user_identity() if repo is not None else None
    return choose_author(read_item(draft).curator, runtime, user)


def settle(draft: Path) -> None:
    """A disputed draft without its `reviews` key, before a command moves it to decide it."""
    data = read_file_bytes(draft)
    settled = without_reviews(data, draft)
    if settled != data:
        atomic_write_bytes(draft, settled)
