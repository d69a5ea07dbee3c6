"""What each MCP tool answers (SPEC section 16): the object the matching command prints with
`--json`, built by the same functions of app/commands, and the text a model reads. Arguments
are checked as the command line checks them, with its error codes and messages.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from feedbackd.app.commands import actions, learningstats, queries, submitting
from feedbackd.app.commands import lessonsources as lessons
from feedbackd.app.commands.snippet import prompt_json, snippet_json
from feedbackd.app.workspace.agentfiles import existing_agent
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.curation.feedback import check_record
from feedbackd.core.curation.learningcurve import check_period
from feedbackd.core.errors import UsageError
from feedbackd.core.ratings.records import parse_rating
from feedbackd.core.timeutil import iso_ms
from feedbackd.edges.clock import utcnow

MAX_EXAMPLES = 100  # as prompt.max_examples allows


@dataclass(frozen=True)
class Answer:
    """A tool's structured answer and the text beside it (by default the same JSON)."""

    value: dict[str, Any]
    text: str | None = None

    def shown(self) -> str:
        return self.text if self.text is not None else json.dumps(self.value, ensure_ascii=False)


def lessons_for(runtime: Runtime, agent: str, task: str, limit: int | None) -> Answer:
    """`prompt AGENT --for - --json` with `task` on standard input; `limit` stands for
    prompt.max_examples."""
    # Ranking loads numpy: imported on the first call, as the command line does.
    from feedbackd.app.commands.promptfor import snippet_for
    from feedbackd.core.curation.relevance import task_text

    existing_agent(runtime, agent)  # a typo is told before the task is read
    chosen_runtime = runtime if limit is None else _with_examples(runtime, limit)
    text, chosen = snippet_for(chosen_runtime, agent, task_text(_encoded(task), None))
    return Answer(snippet_json(agent, text, chosen), text)


def _encoded(task: str) -> bytes:
    # A lone surrogate from a JSON escape is kept as the bytes standard input would carry.
    return task.encode("utf-8", errors="surrogatepass")


def _with_examples(runtime: Runtime, limit: int) -> Runtime:
    if not 0 <= limit <= MAX_EXAMPLES:
        raise UsageError(
            f"limit {limit} is out of range", hint=f"give 0 to {MAX_EXAMPLES} examples"
        )
    prompt = runtime.settings.prompt.model_copy(update={"max_examples": limit})
    return replace(runtime, settings=runtime.settings.model_copy(update={"prompt": prompt}))


def snippet(runtime: Runtime, agent: str, at: str | None) -> Answer:
    """`prompt AGENT [--at REV|DATE] --json`."""
    value = prompt_json(runtime, agent, at)
    return Answer(value, value["text"])


def recent_feedback(runtime: Runtime, agent: str, limit: int) -> Answer:
    """`recent AGENT --limit N --json`."""
    _at_least(limit, 1, "limit")
    return Answer(queries.recent_feedback(runtime, agent, limit))


def list_ratings(
    runtime: Runtime, skill_id: str, agent: str | None, since: str | None, limit: int | None
) -> Answer:
    """`feedback list --skill SKILL [--agent] [--since] [--limit] --json`."""
    if limit is not None:
        _at_least(limit, 0, "limit")
    return Answer(queries.feedback_list(runtime, skill_id, agent, since, limit))


def reputation(runtime: Runtime, agent: str, skill: str | None) -> Answer:
    """`reputation AGENT [--skill SKILL] --json`."""
    return Answer(queries.reputation(runtime, agent, skill))


def why(runtime: Runtime, agent: str) -> Answer:
    """`why AGENT --json`."""
    return Answer(lessons.why(runtime, agent))


def stats(runtime: Runtime, agent: str, by: str, since: str | None) -> Answer:
    """`stats AGENT [--by] [--since] --json`."""
    check_period(by)
    return Answer(learningstats.agent_stats(runtime, agent, by, since))


def record_feedback(runtime: Runtime, agent: str, fields: dict[str, Any]) -> Answer:
    """`record AGENT --json '{...}'`: the entry stored, after the checks the command makes."""
    data = check_record({key: value for key, value in fields.items() if value is not None})
    return Answer(actions.record(runtime, agent, data).to_json())


def submit_rating(runtime: Runtime, rating: dict[str, Any]) -> Answer:
    """A rating as `POST /api/feedback` takes it (the rating names its own requester) and its
    answer: `feedback_id`, `received_at`, the commit and the warnings."""
    # Every problem at once, as invalid_feedback; over MCP, as over HTTP, the configured
    # agent_id is the server's, not the caller's, so the rating names its requester itself.
    parse_rating(rating, requester=None, now=utcnow(), ask="add requester_agent")
    event, _ = submitting.submit_rating(runtime, json.dumps(rating), None)
    received = {"feedback_id": rating.get("transaction_id"), "received_at": iso_ms(utcnow())}
    return Answer({**received, "commit": event.commit, "warnings": list(event.warnings)})


def _at_least(value: int, least: int, name: str) -> None:
    """As the command line refuses an option below its minimum."""
    if value < least:
        raise UsageError(
            f"Invalid value for '--{name}': Input should be greater than or equal to {least}",
            hint=f"give {name} {least} or more",
        )
