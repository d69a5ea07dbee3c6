"""What the last decisions of each agent warned of, kept for `status` until its next decision.

A decision can stand and still need a person: an approval whose draft changed only outside its
content records no correction, and says what the curator should do instead. Whoever made the
decision (the daemon's pass over a moved file, `feedbackd approve`, the panel, `run --once`)
leaves its warnings in `.feedbackd/decision-warnings.json`, one list per agent, so that `status`
shows them alike, in a process other than the one that decided. The next pass that records a
decision of that agent replaces its list, and a removed agent folder takes its list along.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from feedbackd.core.ids import is_valid_id
from feedbackd.core.workspacepaths import Workspace
from feedbackd.edges.files import (
    atomic_write_json,
    read_file_text,
)

log = logging.getLogger("feedbackd")

FILE_NAME = "decision-warnings.json"  # in the state folder (git-ignored)
DECISION_EVENTS = ("approve", "reject")


def remember(workspace: Workspace, agent_id: str, warnings: Sequence[str]) -> None:
    """Keep `warnings` as what the agent's last decisions warned of (none: forget them). The
    caller holds the write lock, as every pass that records a decision does. The decisions are
    committed by then: a file that cannot be written is logged, never their failure."""
    kept = _read(workspace)
    if kept.get(agent_id, []) == list(warnings):
        return
    if warnings:
        kept[agent_id] = list(warnings)
    else:
        kept.pop(agent_id, None)
    path = workspace.state_dir / FILE_NAME
    try:
        atomic_write_json(path, dict(sorted(kept.items())))
    except OSError as error:
        log.warning("%s cannot be written (%s); `status` may miss these warnings", path, error)


def decision_warnings(workspace: Workspace) -> list[str]:
    """The kept warnings of the agents whose folder is still there, by agent."""
    kept = _read(workspace)
    there = [agent for agent in kept if is_valid_id(agent) and workspace.agent(agent).root.is_dir()]
    return [line for agent in there for line in kept[agent]]


def _read(workspace: Workspace) -> dict[str, list[str]]:
    """The kept lists; none when the file is missing or unreadable (status then shows only what
    it knows otherwise, and the next decision writes the file anew)."""
    path = workspace.state_dir / FILE_NAME
    try:
        value = json.loads(read_file_text(path))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        log.warning("%s cannot be read (%s); the decisions' warnings start anew", path, error)
        return {}
    if not isinstance(value, dict):
        return {}
    return {
        agent: [line for line in lines if isinstance(line, str)]
        for agent, lines in value.items()
        if isinstance(agent, str) and isinstance(lines, list)
    }
