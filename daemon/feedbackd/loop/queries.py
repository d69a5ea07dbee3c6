"""What the faces of feedbackd read: the command line's `--json` objects and the HTTP API's
answers are the same values, built here once, so a script gets the same numbers from either.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from feedbackd.core.commitmsg import LogEntry
from feedbackd.core.errors import NotFound
from feedbackd.core.feedback import FeedbackEntry
from feedbackd.core.prompts import render_snippet
from feedbackd.core.reputation import feedback_list_report
from feedbackd.core.timeutil import parse_duration, utcnow
from feedbackd.core.workspace import AgentPaths, validate_id
from feedbackd.edges.ratingstore import RatingStore
from feedbackd.loop.agentfiles import read_feedback
from feedbackd.loop.problems import reported_problems
from feedbackd.loop.repo import open_repo
from feedbackd.loop.runtime import Runtime
from feedbackd.loop.selfopt import sync_problems
from feedbackd.loop.statusfile import describe
from feedbackd.loop.sync import problem_line, sync_status

Progress = Callable[[int, int], None]
LOG_KEYS = (
    "commit", "date", "event", "agent", "item", "skill",
    "curator", "fields", "price_old", "price_new",
)  # fmt: skip


def existing_agent(runtime: Runtime, agent_id: str) -> AgentPaths:
    """The agent's folder; NotFound when the id is valid but no such folder exists."""
    agent = runtime.workspace.agent(validate_id(agent_id, "agent id"))
    if not agent.root.is_dir():
        raise NotFound(
            f"no agent {agent_id} in {runtime.workspace.relative(runtime.workspace.agents_dir)}/",
            hint="check the spelling; `ls _data/agents` lists the agents",
        )
    return agent


def recent_feedback(runtime: Runtime, agent_id: str, limit: int) -> dict[str, Any]:
    """`recent --json`: `{"entries": [...newest first], "total": N}`."""
    entries = _feedback_of(runtime, agent_id)
    newest = list(reversed(entries))[: max(0, limit)]
    return {"entries": [entry.as_json() for entry in newest], "total": len(entries)}


def _feedback_of(runtime: Runtime, agent_id: str) -> list[FeedbackEntry]:
    return read_feedback(runtime.workspace.agent(agent_id).feedback)


def prompt_text(runtime: Runtime, agent_id: str) -> str:
    """The snippet file as written; rendered from feedback.json when it was never generated."""
    agent = runtime.workspace.agent(agent_id)
    if agent.prompt.exists():
        return agent.prompt.read_text(encoding="utf-8")
    text = render_snippet(read_feedback(agent.feedback), runtime.settings.prompt)
    return text + "\n" if text and not text.endswith("\n") else text


def learning_log(runtime: Runtime, agent_id: str | None, since: str | None) -> list[LogEntry]:
    """The learning history from git, newest first (`log`)."""
    if agent_id is not None:
        runtime.workspace.agent(agent_id)  # validates the id
    start = utcnow() - parse_duration(since) if since else None
    with open_repo(runtime) as repo:
        return repo.log(agent=agent_id, since=start) if repo is not None else []


def log_json(entry: LogEntry) -> dict[str, object]:
    """One `log --json` object."""
    return {key: getattr(entry, key) for key in LOG_KEYS}


def feedback_list(
    runtime: Runtime,
    skill: str,
    agent: str | None,
    since: str | None,
    limit: int | None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """`feedback list --json`: a skill's ratings, newest first, with the reputation score."""
    validate_id(skill, "skill id")
    now = utcnow()
    start = now - parse_duration(since) if since else None
    store = RatingStore(runtime.workspace, progress=progress)
    providers = [validate_id(agent, "agent id")] if agent else _providers_of(runtime, skill)
    found = [r for p in providers for r in store.ratings(p, skill, start)]
    return feedback_list_report(skill, agent, since, found, runtime.settings.reputation, now, limit)


def _providers_of(runtime: Runtime, skill: str) -> list[str]:
    return [
        a
        for a in runtime.workspace.agent_ids()
        if (runtime.workspace.agent(a).ratings / skill).is_dir()
    ]


def reputation(
    runtime: Runtime, agent: str, skill: str | None, progress: Progress | None = None
) -> dict[str, Any]:
    """`reputation --json`: the provider's score, overall and per skill."""
    validate_id(agent, "agent id")
    if skill is not None:
        validate_id(skill, "skill id")
    store = RatingStore(runtime.workspace, progress=progress)
    return store.reputation_report(agent, runtime.settings.reputation, utcnow(), skill)


def workspace_status(runtime: Runtime, config_problems: list[str]) -> dict[str, Any]:
    """`status --json`: the daemon's state, with what the commands know besides (a failed
    pricing sync command, a stopped remote sync, `.error` files when no daemon runs)."""
    state = describe(runtime.workspace.state_dir)
    problems: list[str] = config_problems + state["problems"]
    line = problem_line(sync_status(runtime))
    for extra in [*sync_problems(runtime.workspace.state_dir), *([line] if line else [])]:
        problems += [extra] if extra not in problems else []
    if not state["running"]:  # what the last pass left explained in `.error` files
        problems += [p for p in reported_problems(runtime.workspace.data) if p not in problems]
    state["problems"] = problems
    return state
