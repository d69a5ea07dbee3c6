"""The commands a user configures for a provider's skills, and asking `optimizer.command`.

Each gets an argv list (never a shell), the workspace as its folder, FEEDBACKD_* variables naming
the workspace, agent, skill and SOUL.md, its own process group (a time-out stops its children
too) and a deadline. Their failures are logged and never fatal.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.commitmsg import one_line
from feedbackd.core.ratings.optimizer_command import Answer, UnusableAnswer, parse_answer
from feedbackd.core.workspacepaths import AgentPaths
from feedbackd.edges.process import CommandResult, run_command

log = logging.getLogger("feedbackd")

# What a command may print that is kept for logs and the problem file.
MAX_OUTPUT_CHARS = 4000


def run_for_skill(
    runtime: Runtime,
    agent: AgentPaths,
    skill: str,
    argv: Sequence[str],
    *,
    stdin: str,
    timeout: float,
    env: Mapping[str, str] | None = None,
) -> CommandResult:
    """Run a configured command about one skill; `env` adds to the FEEDBACKD_* variables."""
    return run_command(
        argv,
        stdin=stdin,
        timeout=timeout,
        cwd=runtime.workspace.root,
        env={
            "FEEDBACKD_WORKSPACE": str(runtime.workspace.root),
            "FEEDBACKD_AGENT": agent.agent_id,
            "FEEDBACKD_SKILL": skill,
            "FEEDBACKD_SOUL": str(agent.soul),
            **(env or {}),
        },
    )


def ask_optimizer(
    runtime: Runtime, agent: AgentPaths, skill: str, context: dict[str, Any]
) -> Answer | None:
    """optimizer.command's answer to the context; None (logged) when it gives no usable one."""
    command = runtime.settings.optimizer.command
    if command is None:
        return None
    result = run_for_skill(
        runtime,
        agent,
        skill,
        command,
        stdin=json.dumps(context, ensure_ascii=False),
        timeout=runtime.settings.optimizer.timeout_s,
    )
    if not result.ok:
        log.warning(
            "optimizer.command %s; nothing changed%s", result.reason, last_line(result.stderr)
        )
        return None
    try:
        answer = parse_answer(result.stdout)
    except UnusableAnswer as exc:
        log.warning("optimizer.command %s; nothing changed", exc)
        return None
    if answer is None:
        log.info("optimizer.command gave no answer; nothing changed")
    return answer


def tail(text: str) -> str:
    """The last MAX_OUTPUT_CHARS of a command's output, marked `…` when cut."""
    return text if len(text) <= MAX_OUTPUT_CHARS else "…" + text[-MAX_OUTPUT_CHARS:]


def last_line(text: str) -> str:
    """` (the last non-blank line)` of a command's output, for a log line; empty when none."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f" ({one_line(lines[-1], 200)})" if lines else ""


def log_output(name: str, result: CommandResult) -> None:
    """The last lines of what the command printed, then whether it finished."""
    for stream, text in (("stdout", result.stdout), ("stderr", result.stderr)):
        for line in tail(text).splitlines()[-20:]:
            if line.strip():
                log.info("%s %s: %s", name, stream, one_line(line, 500))
    if result.ok:
        log.info("%s finished", name)
