"""`feedbackd bisect AGENT --good REV --bad REV`: the decision that made the lessons worse
(SPEC section 14).

The candidates are the commits after --good up to --bad that changed the agent's feedback.json
(decisions, `record`, `forget`, reverts); every revision is scored on the same items, the
approvals decided after --bad, with its own lessons (no baseline is run). The search halves the
candidates (core/evaluation/bisection.py), so it evaluates at most ⌈log2(candidates + 1)⌉ + 2
revisions. The history is read from git objects alone: the user's `git bisect`, work tree,
index, HEAD and branches are never touched.
"""

from __future__ import annotations

from typing import Any

from feedbackd.app.commands.evalitems import (
    History,
    feedback_at,
    lessons_at,
    open_history,
    revision_of,
)
from feedbackd.app.commands.evalruns import AgentCommand, agent_command, run_tasks
from feedbackd.app.commits.openrepo import open_repo
from feedbackd.app.curation.exportread import folder_at
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.commitmsg import ITEM_KEY, parse_trailers
from feedbackd.core.curation.feedback import FeedbackEntry
from feedbackd.core.errors import EvalFailed, NotFound, NotWorse, UsageError, WorkspaceError
from feedbackd.core.evaluation.agentio import Task
from feedbackd.core.evaluation.bisection import first_bad
from feedbackd.core.evaluation.scoring import mean
from feedbackd.core.ids import validate_id
from feedbackd.edges.evaluation.revisions import commit_info, commits_changing
from feedbackd.edges.git.repo import GitRepo


class _Scorer:
    """Each revision's score on the tasks, evaluated once, in the order asked."""

    def __init__(
        self, runtime: Runtime, repo: GitRepo, agent: str, command: AgentCommand, tasks: list[Task]
    ) -> None:
        self.runtime, self.repo, self.agent = runtime, repo, agent
        self.command, self.tasks = command, tasks
        self.steps: list[dict[str, Any]] = []
        self.known: dict[str, float] = {}

    def score(self, commit: str) -> float:
        if commit in self.known:
            return self.known[commit]
        lessons = lessons_at(self.runtime, self.repo, self.agent, commit)
        outcomes = run_tasks(self.runtime, self.command, [(t, lessons(t)) for t in self.tasks])
        scored = [o.score.score for o in outcomes if o.score is not None]
        found = mean(scored)
        if found is None:
            first = next(o for o in outcomes if o.error)
            raise EvalFailed(
                f"every item failed at {commit[:12]}; the first, {first.item}: {first.error}",
                hint="run the agent command by hand on one item (docs/learning.md)",
            )
        self.known[commit] = round(found, 4)
        self.steps.append({"commit": commit, "score": self.known[commit]})
        return self.known[commit]


def run_bisect(
    runtime: Runtime, agent: str, good: str, bad: str, items: int, command_line: str | None
) -> dict[str, Any]:
    """The report of `bisect --json`; NotWorse when bad does not score below good."""
    validate_id(agent, "agent id")
    if items < 1:
        raise UsageError(f"--items {items}", hint="score at least one item")
    command = agent_command(runtime, command_line, None, True)
    with open_repo(runtime) as repo:
        if repo is None:
            raise WorkspaceError(
                "bisect reads the git history, and git is switched off here",
                hint="set git.enabled: true in feedbackd.yaml",
            )
        history = open_history(runtime, repo, agent)
        good_sha, bad_sha = revision_of(repo, good, "--good"), revision_of(repo, bad, "--bad")
        if good_sha == bad_sha or not repo.is_ancestor(good_sha, bad_sha):
            raise UsageError(
                f"--good {good} is not before --bad {bad}",
                hint="--good names an older revision than --bad, on the same history",
            )
        scorer = _Scorer(runtime, repo, agent, command, _tasks(history, bad_sha, items))
        candidates = _candidates(runtime, repo, agent, good_sha, bad_sha)
        good_score, bad_score = scorer.score(good_sha), scorer.score(bad_sha)
        if not bad_score < good_score:
            raise NotWorse(
                f"--bad scores {bad_score:.4f}, not below --good's {good_score:.4f}:"
                " the lessons did not get worse on these items",
                hint="pick a --bad whose lessons score worse (feedbackd eval --at REV shows it)",
            )
        last_is_bad = bool(candidates) and candidates[-1] == bad_sha
        found = first_bad(
            len(candidates),
            good_score,
            bad_score,
            lambda n: scorer.score(candidates[n]),
            last_is_bad,
        )
        first = _first_bad(runtime, repo, agent, candidates[found]) if found is not None else None
    return {
        "agent": agent,
        "good": good_sha,
        "bad": bad_sha,
        "candidates": len(candidates),
        "items": len(scorer.tasks),
        "first_bad": first,
        "steps": scorer.steps,
        "todo": _todo(agent, first),
    }


def _tasks(history: History, bad: str, items: int) -> list[Task]:
    history = history.after(bad)
    chosen = history.decided_after(bad, items)
    tasks = [task for task in history.tasks(chosen) if isinstance(task, Task)]
    if not tasks:
        raise NotFound(
            f"no approval of {history.agent} was decided after --bad {bad[:12]}",
            hint="bisect scores every revision on the approvals made after --bad:"
            " give an earlier --bad",
        )
    return tasks


def _candidates(runtime: Runtime, repo: GitRepo, agent: str, good: str, bad: str) -> list[str]:
    """The commits of good..bad that changed the agent's lessons, oldest first."""
    folder = folder_at(repo, runtime.workspace, agent, bad)
    if folder is None:
        return []
    return commits_changing(runtime.workspace.root, good, bad, [f"{folder}/feedback.json"])


def _first_bad(runtime: Runtime, repo: GitRepo, agent: str, commit: str) -> dict[str, Any]:
    info = commit_info(runtime.workspace.root, commit)
    items = parse_trailers(f"{info.subject}\n\n{info.body}").get(ITEM_KEY, [])
    before = {e.id for e in feedback_at(runtime, repo, agent, repo.rev(f"{commit}^"))}
    added = [e for e in feedback_at(runtime, repo, agent, commit) if e.id not in before]
    return {
        "commit": info.sha,
        "subject": info.subject,
        "curator": info.author,
        "item": items[-1] if items else None,
        "entries": [_entry_json(e) for e in added],
    }


def _entry_json(entry: FeedbackEntry) -> dict[str, Any]:
    return entry.to_json()


def _todo(agent: str, first: dict[str, Any] | None) -> list[str]:
    if first is None:
        return []
    lines = [f"feedbackd forget {agent} {entry['id']}" for entry in first["entries"]]
    return [*lines, f"git revert {first['commit'][:12]}"]
