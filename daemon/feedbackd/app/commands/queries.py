"""What the faces of feedbackd read: the command line's `--json` objects and the HTTP API's
answers are the same values, built here once, so a script gets the same numbers from either.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from feedbackd.app.commands.skillnames import unknown_skill
from feedbackd.app.commits.openrepo import open_repo
from feedbackd.app.curation.draftmemory import DraftAdds, kept_in_git
from feedbackd.app.daemon.statusfile import describe
from feedbackd.app.events.hookreport import events_summary
from feedbackd.app.ratings.publishing import publish_problems
from feedbackd.app.remotesync import problem_line, sync_status
from feedbackd.app.reviews.reviewqueue import waiting_for
from feedbackd.app.workspace.agentfiles import (
    existing_agent,
    read_feedback,
    read_item,
    read_lessons,
    read_price_ledger,
    read_soul,
    unknown_agent,
)
from feedbackd.app.workspace.decisionwarnings import decision_warnings
from feedbackd.app.workspace.itemfiles import listed_item_problem, refuse_outside_agent
from feedbackd.app.workspace.problems import reported_problems
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.commitmsg import LogEntry, follow_renames, former_names
from feedbackd.core.curation.feedback import FeedbackEntry
from feedbackd.core.curation.items import diff_content, flatten_strings, parse_item
from feedbackd.core.curation.prompts import examples, render_snippet
from feedbackd.core.curation.reverts import with_reverts
from feedbackd.core.errors import (
    FeedbackdError,
    GitError,
    NotFound,
    UsageError,
    WorkspaceError,
)
from feedbackd.core.ids import is_valid_id, validate_id
from feedbackd.core.ratings.reputation import feedback_list_report, score
from feedbackd.core.ratings.soul import Skill, Soul
from feedbackd.core.timeutil import (
    EPOCH,
    iso_ms,
    parse_duration,
    parse_iso,
    parse_moment_by,
    since_start,
)
from feedbackd.core.wording import Progress, quoted
from feedbackd.core.workspacepaths import (
    ITEM_FOLDERS,
    ITEM_SUFFIXES,
    REVIEW_FOLDERS,
    AgentPaths,
    other_format,
)
from feedbackd.edges.clock import utcnow
from feedbackd.edges.files import (
    NotAPlainFile,
    agent_ids,
    is_inside,
    read_file_bytes,
    read_file_text,
)
from feedbackd.edges.git.repo import GitRepo, log_and_reverts
from feedbackd.edges.ratingstore import RatingStore

LOG_KEYS = (
    "commit",
    "date",
    "event",
    "agent",
    "item",
    "skill",
    "curator",
    "fields",
    "price_old",
    "price_new",
    "reverted",
    "reverts",
)


def recent_feedback(runtime: Runtime, agent_id: str, limit: int) -> dict[str, Any]:
    """`recent --json`: `{"entries": [...newest first], "total": N}`."""
    entries = _feedback_of(runtime, agent_id)
    newest = list(reversed(entries))[: max(0, limit)]
    return {"entries": [entry.to_json() for entry in newest], "total": len(entries)}


def _feedback_of(runtime: Runtime, agent_id: str) -> list[FeedbackEntry]:
    return read_feedback(existing_agent(runtime, agent_id).feedback)


def prompt_text(runtime: Runtime, agent_id: str, at: str | None = None) -> str:
    """The snippet file as written; rendered from feedback.json when it was never generated.
    With `at` (a revision or a date), the snippet the agent read then, from git."""
    if at is not None:
        return snippet_at(runtime, agent_id, at)[1]
    agent = existing_agent(runtime, agent_id)
    try:
        # As the agent reads it: a byte that is no UTF-8 is shown, replaced, not refused.
        return read_file_text(agent.prompt, "replace")
    except FileNotFoundError:
        pass
    except NotAPlainFile as error:  # a pipe would hold the reader, so it is not opened
        raise WorkspaceError(
            f"{runtime.workspace.relative(agent.prompt)}: {error.strerror or error}",
            hint="remove it: the daemon writes the snippet again at its next pass",
        ) from None
    text = render_snippet(read_feedback(agent.feedback), runtime.settings.prompt)
    return text + "\n" if text and not text.endswith("\n") else text


def snippet_at(runtime: Runtime, agent_id: str, at: str) -> tuple[str, str]:
    """The commit `at` names and the snippet the agent read then."""
    agent = runtime.workspace.agent(validate_id(agent_id, "agent id"))
    with open_repo(runtime) as repo:
        if repo is None:
            raise WorkspaceError("--at reads git history: the workspace has no git repository")
        commit = _commit_at(repo, at)
        text = repo.file_at(commit, runtime.workspace.relative(agent.prompt))
        if text is None:  # maybe the folder had another name then
            text = file_of_former_names(runtime, repo, agent_id, commit, lambda a: a.prompt)
        if text is None and not _in_history(repo, agent_id):
            existing_agent(runtime, agent_id)  # a typo is told as one, not as an empty past
    if text is None:
        raise NotFound(
            f"{agent_id} had no prompt snippet at {at} (commit {commit[:12]})",
            hint=f"`feedbackd log {agent_id}` shows when it learned",
        )
    return commit, text.decode("utf-8", errors="replace")


def file_of_former_names(
    runtime: Runtime,
    repo: GitRepo,
    agent_id: str,
    commit: str,
    which: Callable[[AgentPaths], Path],
) -> bytes | None:
    """An agent's file (`which` of its paths) at `commit` under a name the agent's folder had
    before a rename."""
    for name in former_names(follow_renames(repo.log(), agent_id)):
        old = runtime.workspace.agent(name)
        text = repo.file_at(commit, runtime.workspace.relative(which(old)))
        if text is not None:
            return text
    return None


def _commit_at(repo: GitRepo, at: str) -> str:
    """The commit a revision names, or the last one made by a date; not_found when none was."""
    commit = commit_by(repo, at)
    if commit is None:
        raise NotFound(f"no commit was made by {at}", hint="give a later date")
    return commit


def commit_by(repo: GitRepo, at: str) -> str | None:
    """The commit a revision names, or the last one made by a time or by the end of a date
    (`2026-11-30`: that whole day); None when no commit was made by then. `--at` that is
    neither is a usage error."""
    with contextlib.suppress(GitError):  # not even shaped like a revision
        commit = repo.rev(at)
        if commit is not None:
            return commit
    try:
        moment = parse_moment_by(at)
    except ValueError:
        raise UsageError(
            f"--at {quoted(at)} is neither a revision nor a date",
            hint="give a commit (e.g. HEAD~3, a sha from `feedbackd log`) or a date (2026-11-30)",
        ) from None
    return repo.commit_before(moment) if moment >= EPOCH else None  # git has no older commit


def learning_log(runtime: Runtime, agent_id: str | None, since: str | None) -> list[LogEntry]:
    """The learning history from git, newest first (`log`): the commits a `git revert` undid
    marked `reverted`, and the reverts as rows of their own. An agent with neither a folder nor
    a commit in history is a typo: NotFound, naming the closest agent."""
    if agent_id is not None:
        runtime.workspace.agent(agent_id)  # validates the id
    start = utcnow() - parse_duration(since) if since else None
    with open_repo(runtime) as repo:
        # Whether a commit stands reverted takes every revert, whatever `since` keeps.
        everything = with_reverts(log_and_reverts(repo)) if repo is not None else []
    entries = everything
    if start is not None:
        entries = [entry for entry in everything if _at_or_after(entry.date, start)]
    if agent_id is None:
        return entries
    own = follow_renames(entries, agent_id)
    if not own and not follow_renames(everything, agent_id):
        existing_agent(runtime, agent_id)  # a removed agent's history is still its own
    return own


def _in_history(repo: GitRepo | None, agent_id: str) -> bool:
    """Whether any commit names the agent (or a name its folder had): a removed agent's
    history is still its own, and no typo."""
    return repo is not None and bool(follow_renames(repo.log(), agent_id))


def _at_or_after(date: str, start: datetime) -> bool:
    try:
        return parse_iso(date) >= start
    except ValueError:
        return False


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
    start = since_start(since, now)
    store = RatingStore(runtime.workspace, progress=progress)
    if agent:
        providers = [refuse_outside_agent(runtime, agent).agent_id]
    else:
        providers = _providers_of(runtime, skill)
    found = [r for p in providers for r in store.ratings(p, skill, start)]
    report = feedback_list_report(
        skill, agent, since, found, runtime.settings.reputation, now, limit
    )
    unknown = unknown_agent(runtime, agent) if agent else {}
    if not report["count"] and not unknown:  # a typo of the skill is no typo of the agent
        unknown = unknown_skill(runtime, skill, [agent] if agent else agent_ids(runtime.workspace))
    return {**report, **unknown}


def _providers_of(runtime: Runtime, skill: str) -> list[str]:
    return [
        a
        for a in agent_ids(runtime.workspace)
        if (runtime.workspace.agent(a).ratings / skill).is_dir()
    ]


def reputation(
    runtime: Runtime, agent: str, skill: str | None, progress: Progress | None = None
) -> dict[str, Any]:
    """`reputation --json`: the provider's score, overall and per skill."""
    unknown = unknown_agent(runtime, agent)
    if skill is not None:
        validate_id(skill, "skill id")
    store = RatingStore(runtime.workspace, progress=progress)
    report = store.reputation_report(agent, runtime.settings.reputation, utcnow(), skill)
    if skill is not None and not report["feedback_count"] and not unknown:
        unknown = unknown_skill(runtime, skill, [agent])
    return {**report, **unknown}


def workspace_status(runtime: Runtime, config_problems: list[str]) -> dict[str, Any]:
    """`status --json`: the daemon's state, with what the commands know besides (a failed
    pricing sync command, a stopped remote sync, `.error` files when no daemon runs)."""
    state = describe(runtime.workspace.state_dir)
    problems: list[str] = config_problems + [
        _relative_line(line, runtime.workspace.root) for line in state["problems"]
    ]
    line = problem_line(sync_status(runtime))
    extras = [*decision_warnings(runtime.workspace), *publish_problems(runtime.workspace.state_dir)]
    for extra in [*extras, *([line] if line else [])]:
        problems += [extra] if extra not in problems else []
    if not state["running"]:  # what the last pass left explained in `.error` files
        problems += [
            p
            for p in reported_problems(runtime.workspace.data, runtime.workspace.root)
            if p not in problems
        ]
    state["problems"] = problems
    state["events"] = events_summary(runtime)  # webhooks: owed deliveries, the last error
    state["agents"] = {  # the drafts that wait for more reviews, or to be settled
        agent_id: waiting_counts(runtime, runtime.workspace.agent(agent_id), REVIEW_FOLDERS)
        for agent_id in agent_ids(runtime.workspace)
    }
    return state


def _relative_line(line: str, root: Path) -> str:
    """A problem line of the daemon's status file with its file relative to the workspace (the
    daemon names files by their full path there); status and the HTTP API show no server path."""
    return line.removeprefix(f"{root}/")


def agents_overview(runtime: Runtime) -> list[dict[str, Any]]:
    """Every agent with its counts (`GET /api/agents`, the panel's first page)."""
    return [agent_summary(runtime, agent_id) for agent_id in agent_ids(runtime.workspace)]


def agent_summary(runtime: Runtime, agent_id: str) -> dict[str, Any]:
    """One agent: its drafts by folder, feedback entries, snippet examples and skills."""
    agent = existing_agent(runtime, agent_id)
    counts = waiting_counts(runtime, agent, ITEM_FOLDERS)
    try:
        entries: list[FeedbackEntry] | None = read_feedback(agent.feedback)
    except FeedbackdError:
        entries = None  # corrupt: the panel says so, `doctor` explains
    soul = _soul_of(agent)
    return {
        "agent_id": agent_id,
        "name": soul.name if soul else None,
        "queued": counts["queue"],
        "approved": counts["approved"],
        "rejected": counts["rejected"],
        **waiting_counts(runtime, agent, REVIEW_FOLDERS),
        "feedback_entries": None if entries is None else len(entries),
        "examples_injected": None if entries is None else _examples_injected(runtime, entries),
        "skills": [_skill_json(skill) for skill in (soul.skills if soul else ())],
    }


def waiting_counts(runtime: Runtime, agent: AgentPaths, folders: tuple[str, ...]) -> dict[str, int]:
    """How many items each of `folders` holds (0 for a folder that is not there)."""
    return {folder: len(_item_files(runtime, agent, folder)) for folder in folders}


def _examples_injected(runtime: Runtime, entries: list[FeedbackEntry]) -> int:
    return len(examples(entries, runtime.settings.prompt.max_examples))


def _skill_json(skill: Skill) -> dict[str, Any]:
    return {"skill_id": skill.skill_id, "name": skill.name, "price": skill.price}


def _soul_of(agent: AgentPaths) -> Soul | None:
    found = read_soul(agent)  # None: no SOUL.md, or one `doctor` explains
    return found[1] if found is not None else None


def _item_files(runtime: Runtime, agent: AgentPaths, folder: str) -> list[Path]:
    """The item files of one folder, as the daemon reads them (no link out of the workspace,
    whether the file or the folder is the link)."""
    directory = agent.folder(folder)
    if not directory.is_dir() or not is_inside(runtime.workspace, directory):
        return []
    with os.scandir(directory) as listing:
        return sorted(
            Path(entry.path)
            for entry in listing
            if os.path.splitext(entry.name)[1] in ITEM_SUFFIXES
            and not entry.name.startswith(".")
            and listed_item_problem(runtime.workspace, entry) is None
        )


def queue(runtime: Runtime, agent_id: str, curator: str | None = None) -> list[dict[str, Any]]:
    """Each draft waiting for `curator` (None: for anyone) with its text fields, original
    beside current, and where it waits (`GET .../queue`): the queued ones, then those in
    review/ they have not reviewed, then the disputed ones (SPEC section 15)."""
    agent = existing_agent(runtime, agent_id)
    paths = _item_files(runtime, agent, "queue")
    from_git = _first_versions_in_git(runtime, agent, paths)
    drafts = [_draft_json(runtime, agent, path, from_git.get(path.name)) for path in paths]
    waiting = {"queue": drafts + _other_files(runtime, agent)}
    for folder in REVIEW_FOLDERS:  # as first drafted: nothing in them is an edit to show
        found = _item_files(runtime, agent, folder)
        waiting[folder] = [_draft_json(runtime, agent, path, None) for path in found]
    return waiting_for(runtime, agent, waiting, curator)


def _other_files(runtime: Runtime, agent: AgentPaths) -> list[dict[str, Any]]:
    """The files of another format in queue/ (a draft saved as .txt), listed as a draft that
    cannot be read is: the panel shows the curator why it waits for ever."""
    directory = agent.queue
    if not directory.is_dir() or not is_inside(runtime.workspace, directory):
        return []
    with os.scandir(directory) as listing:
        found = sorted(
            (entry.name, wrong)
            for entry in listing
            if (wrong := other_format(entry.name, "queue")) is not None
            and entry.is_file(follow_symlinks=False)
        )
    return [_unread(name, message) for name, (message, _) in found]


def _unread(name: str, message: str) -> dict[str, Any]:
    """A file of another format as the queue lists a draft that cannot be read."""
    stem, dot, suffix = name.rpartition(".")
    return {"id": stem if dot else name, "format": suffix if dot else "", "error": message}


def _first_versions_in_git(
    runtime: Runtime, agent: AgentPaths, paths: list[Path]
) -> dict[str, bytes]:
    """file name → first version, for the drafts remembered as git first had them, from the
    drafts' commits kept in `.feedbackd/` (a history walk only when those are lost or out of
    reach)."""
    names = kept_in_git(runtime, agent)
    wanted = [runtime.workspace.relative(path) for path in paths if path.name in names]
    if not wanted:
        return {}
    with open_repo(runtime) as repo:
        if repo is None:
            return {}
        found = DraftAdds(runtime).of(repo, wanted, together=True)
    return {Path(rel).name: data for rel, data in found.items()}


def _draft_json(
    runtime: Runtime, agent: AgentPaths, path: Path, from_git: bytes | None
) -> dict[str, Any]:
    try:
        item = read_item(path)
    except FeedbackdError as error:
        return {"id": path.stem, "format": path.suffix[1:], "error": error.message}
    first = _first_seen(runtime, agent, path) or _parsed(from_git, path)
    original = item.original or first or item.content
    before, now = flatten_strings(original), flatten_strings(item.content)
    fields = [
        {
            "field": name,
            "original": before.get(name),
            "current": value,
            "changed": name in before and diff_content({name: before[name]}, {name: value}) != [],
        }
        for name, value in now.items()
    ]
    title = item.document.get("title") or now.get("title") or item.item_id
    return {"id": item.item_id, "format": item.format, "title": title, "fields": fields}


def _first_seen(runtime: Runtime, agent: AgentPaths, path: Path) -> dict[str, Any] | None:
    snapshot = runtime.workspace.snapshot(agent.agent_id, path.name)
    try:
        return parse_item(read_file_bytes(snapshot), path.suffix, path.stem).content
    except (OSError, FeedbackdError):
        return None  # not seen yet: the draft is its own original


def _parsed(data: bytes | None, path: Path) -> dict[str, Any] | None:
    try:
        return parse_item(data, path.suffix, path.stem).content if data else None
    except FeedbackdError:
        return None


CHART_POINTS = 200  # the newest ratings a skill's charts show


def skill_history(runtime: Runtime, agent_id: str, skill_id: str) -> dict[str, Any]:
    """A skill's ratings, its reputation after each of them, and its price changes, oldest
    first: what the panel draws."""
    agent = existing_agent(runtime, agent_id)
    validate_id(skill_id, "skill id")
    store = RatingStore(runtime.workspace)
    rated = sorted(store.ratings(agent_id, skill_id, None), key=lambda r: r.timestamp)
    rated = rated[-CHART_POINTS:]
    settings = runtime.settings.reputation
    reputation = [
        {
            "time": r.timestamp,
            "score": score(rated[: i + 1], settings, parse_iso(r.timestamp)).score,
        }
        for i, r in enumerate(rated)
    ]
    return {
        "skill_id": skill_id,
        "ratings": [{"time": r.timestamp, "rating": r.rating} for r in rated],
        "reputation": reputation,
        "prices": _price_history(agent, skill_id),
    }


def _price_history(agent: AgentPaths, skill_id: str) -> list[dict[str, Any]]:
    changes = [r for r in read_price_ledger(agent) if r.skill == skill_id]
    points = (
        [{"time": changes[0].createdAt, "price": float(changes[0].priceOld)}] if changes else []
    )
    points += [{"time": r.createdAt, "price": float(r.priceNew)} for r in changes]
    soul = _soul_of(agent)
    skill = soul.skill(skill_id) if soul else None
    if skill is not None:
        points.append({"time": iso_ms(utcnow()), "price": skill.price})
    return points


def skill_lessons(runtime: Runtime, agent_id: str) -> list[dict[str, str]]:
    """Each `prompt/skills/{skill}.md` of the agent as the agent reads it: the skills of SOUL.md
    first, in its order, then any other (a skill taken out of SOUL.md keeps its file)."""
    agent = existing_agent(runtime, agent_id)
    folder = agent.prompt.parent / "skills"
    if not folder.is_dir() or not is_inside(runtime.workspace, folder):
        return []
    found = [
        path.stem
        for path in folder.glob("*.md")
        if is_valid_id(path.stem) and path.is_file() and is_inside(runtime.workspace, path)
    ]
    soul = _soul_of(agent)
    order = [skill.skill_id for skill in soul.skills] if soul else []
    ranked = sorted(
        found, key=lambda skill: (order.index(skill) if skill in order else len(order), skill)
    )
    return [
        {
            "skill_id": skill,
            "file": f"prompt/skills/{skill}.md",
            "text": read_lessons(agent, skill) or "",
        }
        for skill in ranked
    ]
