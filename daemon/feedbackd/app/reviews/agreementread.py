"""`feedbackd agreement` and `GET /api/agreement`: how far curators agree, from the reviews and
the decisions HEAD holds (the work tree's files when git is off), so a reverted decision or a
review dropped by a reset counts for nothing. The figures are core/reviews/agreementfigures.py.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from feedbackd.app.commits.openrepo import open_repo
from feedbackd.app.workspace.agentfiles import existing_agent
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.curation.decisions import latest_states, parse_ledger
from feedbackd.core.reviews.agreementfigures import agreement
from feedbackd.core.reviews.reviewlog import ReviewRecord, Verdict, read_reviews
from feedbackd.core.timeutil import iso_ms, since_start
from feedbackd.edges.clock import utcnow
from feedbackd.edges.files import agent_ids, read_file_bytes
from feedbackd.edges.git.repo import GitRepo

_VERDICT_OF_STATE: dict[str, Verdict] = {"approved": "approve", "rejected": "reject"}


def curator_agreement(
    runtime: Runtime, agent_id: str | None, since: str | None = None
) -> dict[str, Any]:
    """The figures for one agent, or (agent_id None) for every agent together, each item
    known by its agent and id."""
    start = since_start(since, utcnow())
    if agent_id is None:
        agents = agent_ids(runtime.workspace)
    else:
        agents = [existing_agent(runtime, agent_id).agent_id]
    reviews: list[ReviewRecord] = []
    decided: dict[str, Verdict] = {}
    with open_repo(runtime) as repo:
        for agent in agents:
            held, verdicts = _agent_reviews(runtime, repo, agent)
            prefix = "" if agent_id else f"{agent}/"  # items of several agents kept apart
            reviews += [replace(r, item=prefix + r.item) for r in held]
            decided.update({prefix + item: verdict for item, verdict in verdicts.items()})
    figures = agreement(reviews, decided, start)
    since_text = iso_ms(start) if start else None
    return {"agent": agent_id, "since": since_text, **figures.to_json()}


def _agent_reviews(
    runtime: Runtime, repo: GitRepo | None, agent_id: str
) -> tuple[list[ReviewRecord], dict[str, Verdict]]:
    """The agent's reviews, and the verdict of each item decided now."""
    paths = runtime.workspace.agent(agent_id)
    reviews_text = _text(runtime, repo, paths.reviews)
    if not reviews_text:
        return [], {}
    reviews = read_reviews(reviews_text, runtime.workspace.relative(paths.reviews))
    ledger = parse_ledger(_text(runtime, repo, paths.decisions), str(paths.decisions))
    decided = {
        item: _VERDICT_OF_STATE[record.state]
        for item, record in latest_states(ledger).items()
        if record.state in _VERDICT_OF_STATE
    }
    return reviews, decided


def _text(runtime: Runtime, repo: GitRepo | None, path: Path) -> str:
    if repo is not None:
        data = repo.file_at_head(runtime.workspace.relative(path))
    else:
        try:
            data = read_file_bytes(path)
        except (FileNotFoundError, NotADirectoryError):
            data = None
    return data.decode("utf-8", errors="replace") if data else ""
