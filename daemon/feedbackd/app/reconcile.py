"""Level-triggered reconcile: look at disk and the ledger, do what is missing.

The daemon, `run --once` and the writing commands all come through here; file events only say
which agent to look at. Each agent is one pass (agentpass.py); this module chooses the agents,
keeps a user's rebase or merge safe from writes, and turns what stops one agent into a problem
of that agent alone.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from feedbackd.app.commits.ledgers import CommittedLedgers
from feedbackd.app.commits.openrepo import open_repo, open_repo_for_writing
from feedbackd.app.curation.agentpass import AgentPass
from feedbackd.app.curation.agentread import Lookups, ReadScope
from feedbackd.app.curation.decidedfiles import ChangedDecisions
from feedbackd.app.curation.draftmemory import DraftAdds, FirstVersions
from feedbackd.app.curation.quietagents import QuietAgents
from feedbackd.app.curation.webhousequeue import with_queue_agents
from feedbackd.app.ratings import rentals
from feedbackd.app.report import Report
from feedbackd.app.workspace.decisionwarnings import DECISION_EVENTS, remember
from feedbackd.app.workspace.problems import DISK_FULL_RETRY_S, Problem, out_of_space
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.errors import GitError, PathProblem, WorkspaceError
from feedbackd.core.wording import Progress
from feedbackd.core.workspacepaths import DECISION_FOLDERS
from feedbackd.edges.files import NO_SPACE, TMP_SUFFIX, agent_ids
from feedbackd.edges.git.repo import GitRepo

__all__ = [
    "AgentFolderUnusable",
    "Lookups",
    "reconcile_all",
    "reconcile_ratings",
    "shared_lookups",
]

log = logging.getLogger("feedbackd")
_READ_AHEAD_FROM = 8  # a git process costs about what this many round trips to the helper do
# Read ahead, at most: what the long-lived reader keeps of it is bounded too (edges/git/batch.py).
_READ_AHEAD_BYTES = 1 << 20


def reconcile_all(
    runtime: Runtime,
    agents: Sequence[str] | None = None,
    *,
    keep_going: Callable[[], bool] | None = None,
    progress: Progress | None = None,
    ledgers: CommittedLedgers | None = None,
    lookups: Lookups | None = None,
    written_whole: frozenset[Path] = frozenset(),
    on_decision: Callable[[str, int, int], None] | None = None,
    only_items: frozenset[str] | None = None,
    skip_quiet: bool = False,
) -> Report:
    """Reconcile the chosen agents (all by default).

    keep_going is asked before each agent and each decision: False once the daemon was told to
    stop (the decision in hand is finished); it is the daemon's heartbeat too. progress hears
    (agents done, agents in all); on_decision (agent, decisions done, decisions found). ledgers:
    the daemon's memory of the files it committed (else the last process's, in `.feedbackd/`);
    lookups asks git for many agents at once (shared by a daemon's pass). written_whole: files
    a command wrote in one piece (decided without settling); only_items confines the pass to a
    command's own item (no burst's work under the write lock); skip_quiet leaves out the agents
    as a quiet pass left them (quietagents.py).

    A pass over chosen agents raises what stops it (the daemon retries the agent with backoff,
    a command fails with the reason). A full pass reports a user's rebase or merge in progress
    as a problem and writes nothing, and an agent folder that cannot be used (a folder named
    feedback.json, a file named prompt, a full disk) as a problem of that agent alone.
    """
    report = Report()
    chosen = with_queue_agents(runtime, agent_ids(runtime.workspace)) if agents is None else agents
    full_pass = agents is None
    lookups = lookups or shared_lookups(runtime, chosen, full_pass)
    scope = ReadScope(lookups, written_whole, only_items)
    with open_repo(runtime) as repo, _remembered(runtime, ledgers) as known:
        if not _may_write(runtime, repo, report, full_pass):
            return report
        quiet = _quiet_agents(runtime, repo, chosen, skip_quiet and full_pass)
        if full_pass:
            _full_pass_start(runtime, repo, report, chosen, known, quiet)
        for done, agent_id in enumerate(chosen, start=1):
            if keep_going is not None and not keep_going():
                break
            if agent_id not in quiet.left_out:
                heard = _for_agent(on_decision, agent_id)
                agent_pass = AgentPass(runtime, repo, agent_id, known, keep_going, scope, heard)
                report.extend(_run(agent_pass, full_pass, quiet))
            _progress(progress, done, len(chosen))
        quiet.save()
    return report


def _progress(progress: Progress | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


def _full_pass_start(
    runtime: Runtime,
    repo: GitRepo | None,
    report: Report,
    chosen: Sequence[str],
    ledgers: CommittedLedgers,
    quiet: QuietAgents,
) -> None:
    """A full pass first records the ratings, then asks git ahead for the agents it reads."""
    _reconcile_ratings(runtime, repo, report)
    _read_ahead(runtime, repo, [a for a in chosen if a not in quiet.left_out], ledgers)


def _quiet_agents(
    runtime: Runtime, repo: GitRepo | None, chosen: Sequence[str], wanted: bool
) -> QuietAgents:
    """The agents a full pass may leave out (`left_out`); none unless `wanted` (and git is
    on). Their state is looked at now, before any agent's pass reads its folder."""
    head = repo.settled_head() if wanted and repo is not None else None
    quiet = QuietAgents(runtime, head)
    if repo is None or quiet.context is None:
        return quiet
    agents = [runtime.workspace.agent(agent_id) for agent_id in chosen]
    at_head = repo.file_ids_at_head([runtime.workspace.relative(a.root) for a in agents])
    quiet.left_out = {
        agent.agent_id
        for agent in agents
        if quiet.unchanged(agent, at_head[runtime.workspace.relative(agent.root)])
    }
    return quiet


@contextlib.contextmanager
def _remembered(runtime: Runtime, ledgers: CommittedLedgers | None) -> Iterator[CommittedLedgers]:
    """The daemon's memory of committed files; else the last process's, and what this call
    learns is left for the next one."""
    if ledgers is not None:
        yield ledgers
        return
    kept = CommittedLedgers.kept_in(runtime.workspace.state_dir)
    yield kept
    kept.save()


def _read_ahead(
    runtime: Runtime, repo: GitRepo | None, chosen: Sequence[str], ledgers: CommittedLedgers
) -> None:
    """Ask git together for what each agent's pass asks of HEAD: the trees of the agents'
    folders, decision folders and snippet folders (where the ids of the files remembered
    committed, decided ones first, are looked up); feedback.json where the file is gone from
    disk (agentread.deleted_feedback: a big site of new agents has none); decisions.jsonl and
    the snippet where they are not known committed as they are (a killed pass's lines, a
    snippet left behind; every agent's on a machine that remembers none). Hundreds of round
    trips to git become a few processes; worth it only for a few files or more."""
    if repo is None:
        return
    agents = [runtime.workspace.agent(agent_id) for agent_id in chosen]
    deciding = [a for a in agents if os.path.isdir(a.approved) or os.path.isdir(a.rejected)]
    if len(agents) >= _READ_AHEAD_FROM and (ledgers.files_remembered or deciding):
        agents_dir = runtime.workspace.relative(runtime.workspace.agents_dir)
        folders = (*DECISION_FOLDERS, agents[0].prompt.parent.name)
        repo.listings.read_ahead_folders(agents_dir, folders)
    gone = [agent.feedback for agent in agents if not os.path.lexists(agent.feedback)]
    kept = _within_budget(path for agent in agents for path in (agent.decisions, agent.prompt))
    known = ledgers.unchanged_among(runtime, repo, kept)
    wanted = [*gone, *(path for path in kept if path not in known)]
    if len(wanted) >= _READ_AHEAD_FROM:
        repo.read_ahead_at_head([runtime.workspace.relative(path) for path in wanted])


def _within_budget(paths: Iterable[Path]) -> list[Path]:
    """The files that exist and hold something, in order, while their sizes add up to
    _READ_AHEAD_BYTES: what is read ahead is held in memory until asked for (a long ledger is
    asked for on its own, and an empty one is not asked for)."""
    chosen, total = [], 0
    for path in paths:
        try:
            size = os.stat(path).st_size
        except OSError:
            continue
        if not size:
            continue
        total += size
        if total > _READ_AHEAD_BYTES:
            break
        chosen.append(path)
    return chosen


def _keep_decision_warnings(runtime: Runtime, found: Report) -> None:
    """What an agent's pass warned of its decisions, for `status` (decisionwarnings.py)."""
    decided = {event.agent for event in found.events if event.event in DECISION_EVENTS}
    for agent_id in decided:
        remember(runtime.workspace, agent_id, found.decision_warnings)


def shared_lookups(
    runtime: Runtime, chosen: Sequence[str], full_pass: bool, adds: DraftAdds | None = None
) -> Lookups:
    """What the agents of a pass ask git together (see Lookups); `adds`, the drafts' commits
    a daemon keeps from one pass to the next."""
    adds = adds or DraftAdds(runtime)
    return Lookups(
        FirstVersions(runtime, chosen, adds) if len(chosen) > 1 else None,
        ChangedDecisions(runtime, None if full_pass else chosen),
        adds,
    )


def _for_agent(
    on_decision: Callable[[str, int, int], None] | None, agent_id: str
) -> Progress | None:
    if on_decision is None:
        return None
    return lambda done, total: on_decision(agent_id, done, total)


def _run(agent_pass: AgentPass, full_pass: bool, quiet: QuietAgents) -> Report:
    """The agent's pass; an agent folder that cannot be used is a problem of that agent alone
    in a full pass, and the reason a pass over chosen agents fails. A pass that finds nothing
    to do is kept in `quiet`."""
    try:
        found = agent_pass.run()
    except OSError as error:
        unusable = _unusable(agent_pass.runtime, error)
        if not full_pass:
            raise unusable from error
        log.error("%s: %s; its decisions wait", agent_pass.agent.agent_id, unusable.message)
        retry_at = time.time() + DISK_FULL_RETRY_S if out_of_space(error) else 0.0
        where = unusable.problem
        problem = Problem(where.path, where.message, where.hint, True, retry_at)
        return Report(problems=[problem])
    _keep_decision_warnings(agent_pass.runtime, found)
    quiet.passed(agent_pass.agent, found, agent_pass.saw_links)
    return found


def _may_write(runtime: Runtime, repo: GitRepo | None, report: Report, full_pass: bool) -> bool:
    """False (a problem reported) while a user's rebase or merge is in progress; a pass over
    chosen agents raises the GitError instead."""
    if repo is None:
        return True
    try:
        repo.refuse_during_operation()
    except GitError as error:
        if not full_pass:
            raise
        log.error("%s", error)
        git_dir = runtime.workspace.root / ".git"
        report.problems.append(Problem(git_dir, error.message, error.hint, True, 0.0))
        return False
    return True


class AgentFolderUnusable(WorkspaceError):
    """A path of an agent folder that the pass cannot read or write: `problem` says which and
    what is wrong with it (the message names both)."""

    def __init__(self, where: str, what: str, *, hint: str, path: Path) -> None:
        super().__init__(f"{where}: {what}", hint=hint)
        self.problem = PathProblem(path, what, hint)


def _unusable(runtime: Runtime, error: OSError) -> AgentFolderUnusable:
    """Say which path stands in the way and what is wrong with it, in a user's words.

    Every step of a pass is redone by the next one, so nothing half-done is lost meanwhile.
    """
    path = _blocking_path(Path(error.filename or runtime.workspace.data))
    if error.errno in NO_SPACE:
        what = f"the disk is full ({error.strerror})"
    elif error.errno in (errno.EEXIST, errno.ENOTDIR):
        what = "a file stands where feedbackd needs a folder"
    elif error.errno == errno.EISDIR:
        what = "a folder stands where feedbackd needs a file"
    else:
        what = error.strerror or str(error)
    try:
        where = runtime.workspace.relative(path)
    except ValueError:
        where = str(path)
    return AgentFolderUnusable(
        where,
        what,
        hint="move it away or fix it (see the workspace layout in the README), make sure"
        " feedbackd may write there and the disk has room; the agent's pending work is done"
        " once it is fixed",
        path=path,
    )


def _blocking_path(path: Path) -> Path:
    """The first ancestor of path that exists but is not a folder (else path itself); a
    temporary file stands for the file it would have replaced."""
    for ancestor in reversed(path.parents):
        if ancestor.exists() and not ancestor.is_dir():
            return ancestor
    if path.name.endswith(TMP_SUFFIX):  # `.{name}.{8 hex}{TMP_SUFFIX}`
        return path.with_name(path.name[1:].removesuffix(TMP_SUFFIX).rsplit(".", 1)[0])
    return path


def reconcile_ratings(runtime: Runtime, keep_going: Callable[[], bool] | None = None) -> Report:
    """The ratings part of a full pass on its own (the daemon runs it apart from the agents);
    keep_going is asked before each inbox file, as reconcile_all asks before each decision."""
    report = Report()
    with open_repo_for_writing(runtime) as repo:
        _reconcile_ratings(runtime, repo, report, keep_going)
    return report


def _reconcile_ratings(
    runtime: Runtime,
    repo: GitRepo | None,
    report: Report,
    keep_going: Callable[[], bool] | None = None,
) -> None:
    """A full pass also finishes interrupted rating commits and reads the rating inbox."""
    report.events.extend(rentals.commit_interrupted(runtime, repo))
    report.events.extend(rentals.rules_for_arrived(runtime, repo))
    events, found = rentals.ingest_inbox(runtime, repo, keep_going)
    report.events.extend(events)
    report.problems.extend(found)
