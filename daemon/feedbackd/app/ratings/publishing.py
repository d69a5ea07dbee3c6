"""Publishing a changed SOUL.md: `pricing.sync_command`, and the problem its failure leaves.

After each price or description change is committed, the configured command (an argv list such
as `["agentbnb", "openclaw", "sync"]`) runs so that the marketplace shows the new SOUL.md. Its
failure is logged and never fatal: it leaves `.feedbackd/problems-sync.json`, which `status`
shows until a later run of the command succeeds.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from pathlib import Path

from feedbackd.app.ratings.skillcommands import last_line, log_output, run_for_skill, tail
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.timeutil import iso_ms
from feedbackd.core.workspacepaths import AgentPaths
from feedbackd.edges.files import (
    atomic_write_json,
    read_file_text,
)
from feedbackd.edges.process import CommandResult

log = logging.getLogger("feedbackd")

COMMAND_NAME = "pricing.sync_command"  # the setting, as logs and problems name it
PROBLEM_FILE = "problems-sync.json"  # in the state folder; scripts and `status` read it


def publish_soul(
    runtime: Runtime,
    agent: AgentPaths,
    skill: str,
    now: datetime,
    prices: tuple[str, str] | None = None,
) -> None:
    """Run pricing.sync_command, if configured, after the skill changed; `prices` (old, new)
    when its price did. Remembers a failure for `status`, and forgets it on success."""
    command = runtime.settings.pricing.sync_command
    if command is None:
        return
    env = {"FEEDBACKD_PRICE_OLD": prices[0], "FEEDBACKD_PRICE_NEW": prices[1]} if prices else {}
    result = run_for_skill(
        runtime,
        agent,
        skill,
        command,
        stdin="",
        timeout=runtime.settings.pricing.sync_timeout_s,
        env=env,
    )
    log_output(COMMAND_NAME, result)
    path = runtime.workspace.state_dir / PROBLEM_FILE
    if result.ok:
        path.unlink(missing_ok=True)
    else:
        _note_failure(path, command, agent.agent_id, skill, now, result)


def publish_problems(state_dir: Path) -> list[str]:
    """The `status` problem line of the last failed publish, if it has not succeeded since."""
    try:
        data = json.loads(read_file_text(state_dir / PROBLEM_FILE))
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        return [f"{state_dir / PROBLEM_FILE} is unreadable; delete it"]
    problem = data.get("problem") if isinstance(data, dict) else None
    return [problem] if isinstance(problem, str) else []


def _note_failure(
    path: Path, command: list[str], agent: str, skill: str, now: datetime, result: CommandResult
) -> None:
    problem = (
        f"{COMMAND_NAME} failed for {agent}/{skill} at {iso_ms(now)}: {result.reason}"
        f"{last_line(result.stderr or result.stdout)}"
    )
    log.warning("%s", problem)
    atomic_write_json(
        path,
        {
            "problem": problem,
            "command": command,
            "agent": agent,
            "skill": skill,
            "at": iso_ms(now),
            "reason": result.reason,
            "output": tail(result.stderr + result.stdout),
        },
    )
