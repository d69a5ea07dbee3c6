"""What `eval` and `bisect` run on, read from git objects alone (SPEC section 14): the agent's
approvals decided after a revision, each as a task (INPUT, the draft as first written, the
approved content: section 13's export rows), and the lessons the agent would have read at a
revision (the snippet, or `--examples relevant`: section 13's `prompt --for` at that revision).
The work tree, the index, HEAD and the branches are never touched.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from feedbackd.app.curation.exportread import (
    Standing,
    decision_commits,
    export_rows,
    folder_at,
    read_standing,
)
from feedbackd.app.workspace.agentfiles import existing_agent
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.config import PromptSettings
from feedbackd.core.curation.exportrows import Decided, ExportRow
from feedbackd.core.curation.feedback import FeedbackEntry, parse_feedback
from feedbackd.core.curation.prompts import examples, render_snippet
from feedbackd.core.errors import FeedbackdError, NotFound, UsageError
from feedbackd.core.evaluation.agentio import (
    NO_LESSONS,
    BadAnswer,
    Example,
    Lessons,
    Task,
    markdown_content,
)
from feedbackd.core.evaluation.agentio import parse_answer as parse_content
from feedbackd.core.timeutil import EPOCH, parse_moment_by
from feedbackd.edges.evaluation.revisions import commits_between
from feedbackd.edges.git.repo import GitRepo

EXAMPLE_MODES = ("recent", "relevant")


def revision_of(repo: GitRepo, text: str, option: str) -> str:
    """The commit a revision names, or the last one made by a date; a usage error naming the
    option when it is neither, not_found when no commit was made by that date."""
    try:
        commit = repo.rev(text)
    except FeedbackdError:
        commit = None
    if commit is not None:
        return commit
    try:
        moment = parse_moment_by(text)
    except ValueError:
        raise UsageError(
            f"{option} {text!r} is neither a revision nor a date",
            hint="give a commit (HEAD~3, a sha from `feedbackd log`) or a date (2026-11-30)",
        ) from None
    found = repo.commit_before(moment) if moment >= EPOCH else None
    if found is None:
        raise NotFound(f"no commit was made by {text} ({option})", hint="give a later date")
    return found


def check_examples_mode(mode: str) -> str:
    if mode not in EXAMPLE_MODES:
        raise UsageError(f"--examples {mode!r}", hint="use recent or relevant")
    return mode


@dataclass(frozen=True)
class History:
    """The agent's standing decisions as HEAD holds them (its ledger), and the decision commits
    read so far: only those made after a revision (`after`), so that a long history is not
    walked for the few decisions eval and bisect ask about."""

    runtime: Runtime
    repo: GitRepo
    agent: str
    head: str
    standing: Standing

    def approvals(self) -> list[Decided]:
        return [d for d in self.standing.decided if d.state == "approved"]

    def commit_of(self, decided: Decided) -> str | None:
        found = self.standing.commits.of(decided)
        return found.sha if found else None

    def after(self, revision: str) -> History:
        """With the decision commits `revision` does not hold read: of the items decided
        after it, each one's commit (and the first one's draft, before its first decision
        after `revision`)."""
        items = [d.item for d in self.standing.decided]
        commits, _ = decision_commits(
            self.repo, self.standing.folder, self.head, items, after=revision
        )
        return dataclasses.replace(
            self, standing=dataclasses.replace(self.standing, commits=commits)
        )

    def before_last(self, count: int) -> str | None:
        """The commit just before the decision commit of the oldest of the last `count`
        approvals; None when it has none. The newest decision commits are read, more each
        time, until that one is among them: the start of the whole walk, in its order."""
        approvals = self.approvals()[-count:]
        if not approvals:
            return None
        oldest = approvals[0]
        since = len(self.standing.decided) - self.standing.decided.index(oldest)
        limit = 2 * since + 20  # its decisions since, and room for other agents'
        while True:
            commits, read = decision_commits(
                self.repo, self.standing.folder, self.head, [oldest.item], limit=limit
            )
            found = commits.of(oldest)
            if found is not None or read < limit:  # found, or the whole history read
                return self.repo.rev(f"{found.sha}^") if found else None
            limit *= 4

    def decided_after(self, revision: str, count: int) -> list[Decided]:
        """The first `count` approvals, in decision order, whose decision commit `revision`
        does not hold: decided after it. (Read `after(revision)` first.)"""
        later = set(commits_between(self.runtime.workspace.root, revision, self.head))
        return [d for d in self.approvals() if self.commit_of(d) in later][:count]

    def tasks(self, chosen: Sequence[Decided]) -> list[Task | tuple[str, str]]:
        """Each chosen approval as a task, or (item, why not) when its draft cannot be told."""
        wanted = dataclasses.replace(self.standing, decided=list(chosen))
        template = self.runtime.settings.export.input_template
        rows = {row.item: row for row in export_rows(self.repo, wanted, template)}
        return [_task(self.agent, d, rows.get(d.item)) for d in chosen]


def open_history(runtime: Runtime, repo: GitRepo, agent: str) -> History:
    """The agent's history at HEAD; not_found for an agent with no folder and no history."""
    head = repo.head()
    folder = folder_at(repo, runtime.workspace, agent, head) if head else None
    if head is None or folder is None:
        existing_agent(runtime, agent)  # a typo is told as one
        raise NotFound(
            f"{agent} has no decisions in the history yet",
            hint="eval scores the approvals curators made: decide some drafts first",
        )
    # The ledger alone: the decision commits are read as eval or bisect needs them.
    standing = read_standing(repo, agent, head, folder, after=head)
    return History(runtime, repo, agent, head, standing)


def _task(agent: str, decided: Decided, row: ExportRow | None) -> Task | tuple[str, str]:
    if row is None or row.approved is None:
        return decided.item, "its approved file is no longer in the history"
    if row.draft is None:
        return decided.item, "the draft as first written is nowhere in the history"
    item_format = "md" if (decided.file or "").endswith(".md") else "json"
    try:
        draft = _content(row.draft, item_format)
        approved = _content(row.approved, item_format)
    except BadAnswer as error:
        return decided.item, f"its content does not read: {error}"
    return Task(agent, decided.item, item_format, row.input, draft, approved)


def _content(text: str, item_format: str) -> dict[str, object]:
    return markdown_content(text) if item_format == "md" else parse_content(text, "json")


# --- the lessons at a revision -------------------------------------------------------------------
LessonsFor = Callable[[Task], Lessons]
# `--examples relevant`: the lessons for each task, given feedback.json's entries then
# (app/commands/evalrelevant.py; the command line loads its ranking only when asked).
Ranker = Callable[[Sequence[FeedbackEntry], PromptSettings], LessonsFor]


def lessons_at(
    runtime: Runtime, repo: GitRepo, agent: str, commit: str | None, rank: Ranker | None = None
) -> LessonsFor:
    """What the agent would have read at `commit` for each task (None: no lessons at all): the
    snippet as the commit held it, or with `rank`, the lessons it picks for each task."""
    if commit is None:
        return lambda task: NO_LESSONS
    settings = runtime.settings.prompt
    folder = folder_at(repo, runtime.workspace, agent, commit)
    entries = _feedback_at(repo, folder, commit)
    if rank is not None:
        return rank(entries, settings)
    snippet = repo.file_at(commit, f"{folder}/prompt/feedback.md") if folder else None
    text = snippet.decode("utf-8", errors="replace") if snippet is not None else None
    fixed = snippet_lessons(examples(entries, settings.max_examples), settings, text, entries)
    return lambda task: fixed


def feedback_at(
    runtime: Runtime, repo: GitRepo, agent: str, commit: str | None
) -> list[FeedbackEntry]:
    """The agent's feedback.json as `commit` held it (none for no commit)."""
    if commit is None:
        return []
    return _feedback_at(repo, folder_at(repo, runtime.workspace, agent, commit), commit)


def _feedback_at(repo: GitRepo, folder: str | None, commit: str) -> list[FeedbackEntry]:
    data = repo.file_at(commit, f"{folder}/feedback.json") if folder else None
    if data is None:
        return []
    try:
        return parse_feedback(data.decode("utf-8", errors="replace"))
    except FeedbackdError:  # a damaged feedback.json then: the agent read no lessons from it
        return []


def snippet_lessons(
    shown: Sequence[FeedbackEntry],
    settings: PromptSettings,
    text: str | None = None,
    entries: Sequence[FeedbackEntry] | None = None,
) -> Lessons:
    """The snippet's text (when the commit held none, rendered from `entries`, else from the
    entries `shown`) and the examples among the entries shown."""
    if text is None:
        text = render_snippet(shown if entries is None else entries, settings)
        text = text + "\n" if text and not text.endswith("\n") else text
    chosen = tuple(
        Example(e.field, e.original or "", e.corrected or "") for e in shown if e.is_example
    )
    return Lessons(text, chosen)
