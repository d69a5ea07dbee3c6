"""`feedbackd why AGENT`: each example and note of the agent's snippet, with the decision commit
that put it there. The joining is pure (core/curation/prompts.py, lesson_sources); this reads
feedback.json and the agent's learning history, the history with one `git log` whatever the
number of lessons (one more when the agent's folder was renamed)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from feedbackd.app.commits.openrepo import open_repo
from feedbackd.app.workspace.agentfiles import existing_agent, read_feedback
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.commitmsg import AGENT_KEY, LogEntry, follow_renames
from feedbackd.core.curation.prompts import lesson_sources, snippet_lessons


def why(
    runtime: Runtime, agent_id: str, history: Sequence[LogEntry] | None = None
) -> dict[str, Any]:
    """`why --json`: `{"agent": ID, "lines": [...]}`, a line per lesson in the snippet's order.
    `history`: the agent's learning history (newest first) when the caller has read it already,
    as the panel has."""
    agent = existing_agent(runtime, agent_id)
    entries = read_feedback(agent.feedback)
    settings = runtime.settings.prompt
    if history is None:
        # An empty snippet has nothing to trace: git is not asked.
        history = agent_history(runtime, agent_id) if snippet_lessons(entries, settings) else []
    return {"agent": agent_id, "lines": lesson_sources(entries, settings, history)}


def agent_history(runtime: Runtime, agent_id: str) -> list[LogEntry]:
    """The commits of the agent's learning history, newest first. git picks them by their
    Feedback-Agent trailer, so a workspace of many agents is not read whole; past a rename of
    the folder, the commits under its former names come from the whole history (`log AGENT`)."""
    with open_repo(runtime) as repo:
        if repo is None:
            return []
        own = repo.trailer_log({AGENT_KEY: agent_id})
        if any(entry.event == "rename" and entry.renamed_from for entry in own):
            return follow_renames(repo.log(), agent_id)
        return follow_renames(own, agent_id)
