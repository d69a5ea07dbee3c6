"""The agent command run on tasks for `eval` and `bisect`: each answer taken from the cache in
`.feedbackd/` when the same (command line, item, input, draft, snippet) was seen, else from
the command, `jobs` at once; then scored against the approved content. A command that fails on
an item (exit status, timeout, an answer that does not parse, one missing) makes that item
failed with the reason."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.errors import UsageError
from feedbackd.core.evaluation.agentio import (
    BUILTIN,
    BadAnswer,
    Lessons,
    Task,
    answer_key,
    apply_lessons,
    parse_answer,
    request,
    split_command,
)
from feedbackd.core.evaluation.scoring import ItemScore, score_item
from feedbackd.edges.evaluation.agentcommand import run_agent_command
from feedbackd.edges.evaluation.answers import Answers


@dataclass(frozen=True)
class Outcome:
    """One task's score, or why it has none."""

    item: str
    score: ItemScore | None
    error: str = ""


@dataclass(frozen=True)
class AgentCommand:
    """The command that plays the agent, as configured or given, and how to run it."""

    line: str
    argv: tuple[str, ...]  # empty for the built-in command
    timeout: float
    jobs: int
    cache: bool


def agent_command(
    runtime: Runtime, given: str | None, jobs: int | None, cache: bool
) -> AgentCommand:
    """The command to run: --command, else eval.command; a usage error when neither is set."""
    settings = runtime.settings.eval
    line = given if given is not None else settings.command
    if line is None or not line.strip():
        raise UsageError(
            "no agent command to run",
            hint=f"set eval.command in feedbackd.yaml or pass --command (try {BUILTIN})",
        )
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs {jobs}", hint="run at least one command at once")
    argv = () if line.strip() == BUILTIN else tuple(split_command(line))
    return AgentCommand(line.strip(), argv, settings.timeout_s, jobs or settings.jobs, cache)


def run_tasks(
    runtime: Runtime, command: AgentCommand, runs: Sequence[tuple[Task, Lessons]]
) -> list[Outcome]:
    """Each task run with its lessons, in the order given."""
    answers = Answers(runtime.workspace.state_dir)
    env = {"FEEDBACKD_WORKSPACE": str(runtime.workspace.root)}

    def one(run: tuple[Task, Lessons]) -> Outcome:
        task, lessons = run
        if not command.argv:
            return Outcome(
                task.item, score_item(apply_lessons(task.draft, lessons.examples), task.approved)
            )
        key = answer_key(command.line, task, lessons)
        kept = answers.get(key) if command.cache else None
        text = kept
        if text is None:
            ran = run_agent_command(
                command.argv,
                request(task, lessons),
                cwd=runtime.workspace.root,
                env={**env, "FEEDBACKD_AGENT": task.agent},
                timeout=command.timeout,
            )
            if ran.reason:
                return Outcome(task.item, None, ran.reason)
            text = ran.stdout
        try:
            content = parse_answer(text, task.format)
        except BadAnswer as error:
            return Outcome(task.item, None, f"the command {error}")
        if kept is None:  # kept once it parses: a garbled answer is asked for again
            answers.put(key, text)
        return Outcome(task.item, score_item(content, task.approved))

    if not command.argv or command.jobs == 1 or len(runs) < 2:
        return [one(run) for run in runs]
    with ThreadPoolExecutor(max_workers=min(command.jobs, len(runs))) as pool:
        return list(pool.map(one, runs))
