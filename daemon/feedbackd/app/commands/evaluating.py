"""`feedbackd eval AGENT` and `GET /api/agents/{id}/eval`: would the lessons as of a revision
have saved the curators the corrections they made after it? (SPEC section 14.)

The items are the agent's approvals decided after REV (no leakage: the lessons of REV cannot
hold what they taught), each run by the agent command with REV's lessons and with the
baseline's (`--against`: another revision, or none); the scores are compared item by item, with
a paired bootstrap interval. `--note` keeps the report as a git note on REV.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from feedbackd.app.commands.evalitems import (
    History,
    Ranker,
    check_examples_mode,
    lessons_at,
    open_history,
    revision_of,
)
from feedbackd.app.commands.evalruns import Outcome, agent_command, run_tasks
from feedbackd.app.commits.openrepo import open_repo
from feedbackd.app.curation.exportread import folder_at
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.errors import EvalFailed, NotFound, UsageError, WorkspaceError
from feedbackd.core.evaluation.agentio import Task
from feedbackd.core.evaluation.notes import note_with, report_of
from feedbackd.core.evaluation.scoring import ItemScore, paired_ci95, totals
from feedbackd.core.ids import validate_id
from feedbackd.edges.evaluation.revisions import (
    add_note,
    commit_info,
    commits_changing,
    note_of,
    noted_commits,
)
from feedbackd.edges.git.repo import GitRepo
from feedbackd.edges.git.runner import identity_env

DEFAULT_ITEMS = 50
NOTES_READ = 50  # the newest notes a page reads looking for an agent's: a page stays quick


@dataclass(frozen=True)
class EvalAsk:
    """What `eval` was asked."""

    agent: str
    at: str | None = None
    against: str = "none"
    items: int = DEFAULT_ITEMS
    examples: str = "recent"
    command: str | None = None
    jobs: int | None = None
    cache: bool = True
    note: bool = False
    rank: Ranker | None = None  # with examples "relevant": app/commands/evalrelevant.py's


def _ranker(ask: EvalAsk) -> Ranker | None:
    if check_examples_mode(ask.examples) == "recent":
        return None
    if ask.rank is None:
        raise RuntimeError("--examples relevant needs evalrelevant.relevant_lessons as rank")
    return ask.rank


def run_eval(runtime: Runtime, ask: EvalAsk) -> dict[str, Any]:
    """The report of SPEC section 14's `eval --json`."""
    validate_id(ask.agent, "agent id")
    rank = _ranker(ask)
    if ask.items < 1:
        raise UsageError(f"--items {ask.items}", hint="evaluate at least one item")
    command = agent_command(runtime, ask.command, ask.jobs, ask.cache)
    with open_repo(runtime) as repo:
        if repo is None:
            raise WorkspaceError(
                "eval reads the git history, and git is switched off here",
                hint="set git.enabled: true in feedbackd.yaml",
            )
        history = open_history(runtime, repo, ask.agent)
        at = _revision(repo, history, ask)
        history = history.after(at)
        against = None if ask.against == "none" else revision_of(repo, ask.against, "--against")
        chosen = history.decided_after(at, ask.items)
        if not chosen:
            raise NotFound(
                f"no approval of {ask.agent} was decided after {at[:12]}",
                hint="give an earlier --at: eval scores the approvals made after it",
            )
        tasks = history.tasks(chosen)
        ready = [task for task in tasks if isinstance(task, Task)]
        with_lessons = lessons_at(runtime, repo, ask.agent, at, rank)
        baseline = lessons_at(runtime, repo, ask.agent, against, rank)
    runs = [(task, with_lessons(task)) for task in ready]
    runs += [(task, baseline(task)) for task in ready]
    outcomes = run_tasks(runtime, command, runs)
    report = eval_report(
        ask.agent, at, against, tasks, outcomes[: len(ready)], outcomes[len(ready) :]
    )
    if ask.note:
        root = runtime.workspace.root
        add_note(root, at, note_with(note_of(root, at), report), _notes_identity(runtime))
    return report


def _revision(repo: GitRepo, history: History, ask: EvalAsk) -> str:
    """--at, else the commit just before the oldest of the agent's last --items approvals."""
    if ask.at is not None:
        return revision_of(repo, ask.at, "--at")
    before = history.before_last(ask.items)
    if before is None:
        raise NotFound(
            f"{ask.agent} has no approval with a commit before it to take the lessons from",
            hint="give --at REV, or decide some drafts first",
        )
    return before


def _notes_identity(runtime: Runtime) -> dict[str, str]:
    person = runtime.committer
    return {**identity_env("AUTHOR", person), **identity_env("COMMITTER", person)}


def eval_report(
    agent: str,
    at: str,
    against: str | None,
    tasks: Sequence[Task | tuple[str, str]],
    with_lessons: Sequence[Outcome],
    baseline: Sequence[Outcome],
) -> dict[str, Any]:
    """The JSON report; EvalFailed when no item was scored."""
    paired = {a.item: (a, b) for a, b in zip(with_lessons, baseline, strict=True)}
    results: list[dict[str, Any]] = []
    scored: list[tuple[ItemScore, ItemScore]] = []
    for task in tasks:
        result, pair = _result(task, paired)
        results.append(result)
        if pair is not None:
            scored.append(pair)
    failed = [r for r in results if "error" in r]
    if not scored:
        first = failed[0] if failed else {"item": "", "error": "no item"}
        raise EvalFailed(
            f"every item failed; the first, {first['item']}: {first['error']}",
            hint="run the agent command by hand on one item (docs/learning.md shows its input)",
        )
    mine, theirs = totals([a for a, _ in scored]), totals([b for _, b in scored])
    differences = [a.score - b.score for a, b in scored]
    interval = paired_ci95(differences)
    return {
        "agent": agent,
        "at": at,
        "items": len(tasks),
        "failed": len(failed),
        **mine,
        "against": {"at": against, **theirs},
        "delta": round(mine["score"] - theirs["score"], 4),
        "ci95": list(interval) if interval else None,
        "results": results,
    }


def _result(
    task: Task | tuple[str, str], paired: dict[str, tuple[Outcome, Outcome]]
) -> tuple[dict[str, Any], tuple[ItemScore, ItemScore] | None]:
    if not isinstance(task, Task):
        return {
            "item": task[0],
            "score": None,
            "exact": None,
            "against_score": None,
            "error": task[1],
        }, None
    mine, theirs = paired[task.item]
    if mine.score is None or theirs.score is None:
        error = mine.error or f"(against) {theirs.error}"
        return {
            "item": task.item,
            "score": None,
            "exact": None,
            "against_score": None,
            "error": error,
        }, None
    result = {
        "item": task.item,
        "score": round(mine.score.score, 4),
        "exact": mine.score.exact,
        "against_score": round(theirs.score.score, 4),
    }
    return result, (mine.score, theirs.score)


# --- the saved eval the panel shows -----------------------------------------------------------
def saved_eval(runtime: Runtime, agent: str) -> dict[str, Any] | None:
    """The newest eval of `agent` kept with `--note` on a revision HEAD holds: `{"report": the
    note's JSON object as it is (a user may have edited it: the reader checks every value),
    "date": the revision's time, "lessons_since": the commits that changed the agent's lessons
    after it}`; None when there is none. A note that is not a JSON object naming the agent is
    passed over. (The lessons HEAD holds cannot be evaluated yet: no approval came after them;
    the newest noted revision is the nearest eval of them.)"""
    with open_repo(runtime) as repo:
        head = repo.head() if repo is not None else None
        if repo is None or head is None:
            return None
        root = runtime.workspace.root
        for commit in noted_commits(root)[:NOTES_READ]:
            report = report_of(note_of(root, commit), agent)
            if report is None or not repo.is_ancestor(commit, head):
                continue
            folder = folder_at(repo, runtime.workspace, agent, head)
            paths = [f"{folder}/feedback.json"] if folder else []
            since = commits_changing(root, commit, head, paths) if paths else []
            date = commit_info(root, commit).date.strip()
            return {"commit": commit, "report": report, "date": date, "lessons_since": len(since)}
    return None
