"""A webhouse CMS site's curation queue, fed to the agent passes as items to decide.

With `webhouse.queue_file` set, an agent pass also reads that file (core/curation/webhouseitems.py
says what its entries mean) and hands each entry whose status says decided, and that the ledger does
not record yet, to the planner as an item in approved/ or rejected/ would be: the same pipeline
decides it, and its commit holds the queue file as webhouse left it beside feedback.json.

feedbackd never writes the queue file. webhouse rewrites it in place, then appends to
feedback.json once per corrected field: a decision is taken only once both files have been
unchanged for daemon.settle_ms, so webhouse's own entries are read (and never written twice)
and a half-written queue is waited for.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from feedbackd.app.workspace import problems
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.curation import webhouseitems
from feedbackd.core.curation.agentplan import BadFile, ItemFile, ReadItem
from feedbackd.core.curation.decisions import DecisionRecord
from feedbackd.core.curation.webhouseitems import CurationQueue
from feedbackd.core.errors import FeedbackdError, InvalidItem
from feedbackd.core.workspacepaths import AgentPaths
from feedbackd.edges.files import is_inside
from feedbackd.edges.sharedfile import read_shared

log = logging.getLogger("feedbackd")


@dataclass
class QueueDecisions:
    """What the queue holds for one agent's pass."""

    items: list[ReadItem] = field(default_factory=list)  # decided entries not recorded yet
    problems: list[BadFile] = field(default_factory=list)  # the queue file cannot be read
    warnings: list[str] = field(default_factory=list)  # entries that cannot be used
    settling: list[tuple[Path, float]] = field(default_factory=list)  # when to look again
    changed_at: float = 0.0  # when the queue file last changed


def queue_file(runtime: Runtime) -> Path | None:
    """The curation queue's path, None when the webhouse adapter is off."""
    name = runtime.settings.webhouse.queue_file
    return runtime.workspace.root / name if name is not None else None


def decisions_for(
    runtime: Runtime, agent: AgentPaths, ledger: Sequence[DecisionRecord]
) -> QueueDecisions:
    """The entries of the queue that this agent's pass decides now."""
    found = QueueDecisions()
    path = queue_file(runtime)
    if path is None:
        return found
    queue = read_queue(runtime, path, found)
    if queue is None:
        return found
    found.warnings += queue.warnings_for(agent.agent_id)
    pending = webhouseitems.to_decide(queue, agent.agent_id, ledger)
    if not pending:
        return found
    settled_at = _settled_at(runtime, found.changed_at, agent.feedback)
    if time.time() < settled_at:
        found.settling.append((path, settled_at))
        return found
    found.items = [
        ReadItem(ItemFile(entry.state, entry.item.item_id, path), entry.item) for entry in pending
    ]
    return found


def read_queue(runtime: Runtime, path: Path, found: QueueDecisions) -> CurationQueue | None:
    """The queue, or None (no queue file yet; or a problem in `found` says why not)."""
    try:
        if path.is_symlink() and not is_inside(runtime.workspace, path):
            raise OSError("a symbolic link that leads outside the workspace")
        read = read_shared(path, webhouseitems.MAX_QUEUE_BYTES)
    except OSError as error:
        unreadable = InvalidItem(
            f"the curation queue cannot be read: {error.strerror or error}",
            hint="make webhouse.queue_file name webhouse's curation-queue.json, a plain file",
        )
        found.problems.append(BadFile.of(path, unreadable))
        return None
    if read is None:
        return None
    found.changed_at = read.changed_at
    try:
        queue = webhouseitems.parse_queue(read.data, path)
    except FeedbackdError as error:
        found.problems.append(BadFile.of(path, error))  # webhouse may be writing it: it settles
        return None
    problems.clear(path)
    return queue


def _settled_at(runtime: Runtime, queue_changed: float, feedback: Path) -> float:
    """When the queue and the agent's feedback.json are both settled (wall-clock time)."""
    changes = [queue_changed]
    if feedback.exists():
        changes.append(problems.changed_at(feedback, time.time()))
    return max(changes) + runtime.settings.daemon.settle_ms / 1000


def with_queue_agents(runtime: Runtime, agents: list[str]) -> list[str]:
    """The agents to pass over: those on disk and those the queue has decisions for. An agent
    folder webhouse has not made yet (it makes one when it first writes feedback) is made."""
    path = queue_file(runtime)
    if path is None:
        return agents
    found = QueueDecisions()
    queue = read_queue(runtime, path, found)
    if not agents:  # no agent pass will say what is wrong with the queue: say it here
        _tell(runtime, found.problems)
    named = queue.agents() if queue is not None else []
    for agent_id in named:
        if agent_id not in agents:
            _make_agent_folder(runtime, agent_id)
    return sorted({*agents, *named})


def _tell(runtime: Runtime, bad_files: list[BadFile]) -> None:
    """Explain a queue that cannot be read beside it, once it stayed so for settle_ms."""
    for bad in bad_files:
        problem = problems.judge(bad.path, bad, runtime.settings.daemon.settle_ms)
        if problem.settled:
            log.warning("%s: %s", runtime.workspace.relative(bad.path), bad.message)


def _make_agent_folder(runtime: Runtime, agent_id: str) -> None:
    folder = runtime.workspace.agent(agent_id).root
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:  # a file of that name: the agent's decisions wait
        log.error(
            "%s: cannot make the folder of agent %s (%s); its curation queue decisions wait"
            " until it can be made",
            runtime.workspace.relative(folder),
            agent_id,
            error.strerror or error,
        )


def doctor_checks(runtime: Runtime) -> list[tuple[Path, Callable[[], None]]]:
    """`feedbackd doctor`: the queue file read as a pass reads it (none while webhouse has not
    written one); its entries that cannot be used are a finding too."""
    path = queue_file(runtime)
    if path is None or not path.exists():
        return []

    def check() -> None:
        found = QueueDecisions()
        queue = read_queue(runtime, path, found)
        if found.problems:  # doctor tells a failed check's message and hint
            raise InvalidItem(found.problems[0].message, hint=found.problems[0].hint)
        skipped = queue.skipped if queue is not None else ()
        if skipped:
            more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
            raise InvalidItem(
                skipped[0].reason + more,
                hint="fix the entry in webhouse (or by hand); the other entries are decided",
            )

    return [(path, check)]
