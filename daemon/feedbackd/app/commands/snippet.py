"""`prompt --json`: the snippet as `prompt` prints it, with the examples it shows as values.

An agent runner that reads the text can also take the examples one by one (as
`load_feedback_for_prompt` gives them, plus each entry's id for `why` and `forget`), without
parsing the Markdown back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from feedbackd.app.commands.queries import file_of_former_names, prompt_text, snippet_at
from feedbackd.app.commits.openrepo import open_repo
from feedbackd.app.workspace.agentfiles import existing_agent, read_feedback
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.curation.feedback import FeedbackEntry, parse_feedback
from feedbackd.core.curation.prompts import examples
from feedbackd.core.ids import validate_id


def prompt_json(runtime: Runtime, agent_id: str, at: str | None = None) -> dict[str, Any]:
    """`{"agent", "text", "examples"}`: the snippet now, or `at` a revision or date, and the
    corrections its examples show, oldest first, from feedback.json as it was then."""
    if at is None:
        text = prompt_text(runtime, agent_id)  # refuses what `prompt` refuses
        entries = read_feedback(existing_agent(runtime, agent_id).feedback)
    else:  # the revision is resolved once: the examples come from the snippet's commit
        commit, text = snippet_at(runtime, agent_id, at)
        entries = _feedback_at(runtime, agent_id, commit)
    return snippet_json(agent_id, text, examples(entries, runtime.settings.prompt.max_examples))


def snippet_json(agent_id: str, text: str, chosen: Sequence[FeedbackEntry]) -> dict[str, Any]:
    """The JSON form of a snippet's text and the entries chosen for it (`prompt --for` gives its
    own choice); the rejection notes among them are in the text alone."""
    shown = [entry for entry in chosen if entry.is_example]
    return {"agent": agent_id, "text": text, "examples": [example_json(e) for e in shown]}


def example_json(entry: FeedbackEntry) -> dict[str, Any]:
    """One example, its values whole (the text may shorten a long one around its change)."""
    return {
        "id": entry.id,
        "field": entry.field,
        "original": entry.original,
        "corrected": entry.corrected,
    }


def _feedback_at(runtime: Runtime, agent_id: str, commit: str) -> list[FeedbackEntry]:
    """The agent's feedback.json as `commit` held it (under the folder's name then); none when
    it had none."""
    agent = runtime.workspace.agent(validate_id(agent_id, "agent id"))
    with open_repo(runtime) as repo:
        if repo is None:  # snippet_at has refused it already
            return []
        data = repo.file_at(commit, runtime.workspace.relative(agent.feedback))
        if data is None:
            data = file_of_former_names(runtime, repo, agent_id, commit, lambda a: a.feedback)
    return [] if data is None else parse_feedback(data.decode("utf-8", errors="replace"))
