"""The agent pass as a pure plan: given what was read from one agent folder, what is missing.

A pass reads one agent folder (its item files in queue/, approved/ and rejected/, the decision
ledger, feedback.json, the snippet) and asks `plan_agent` what that calls for. The answer is a
Plan that app/ applies in order: ledger lines for items moved back to queue/ and a commit of
the new drafts (with a new agent's empty feedback files, so that no decision creates them and no
`git revert` of one deletes them); then one step per decision (feedback.json, the snippet, its
ledger line, one commit of exactly its paths); then the snippet, when it no longer matches
feedback.json. Nothing here touches the disk, git, the clock or randomness: `now` comes in, and
so does what draws the random characters of new entries' and ledger lines' ids (`draw`).

Each decision is recorded exactly once because the plan follows the ledger: an item in approved/
or rejected/ is decided unless the ledger's latest line for it says so already. A plan applied in
part (a crash) is planned again by the next pass: a decision whose ledger line was written is
done; one whose line was not is decided again, and the entries it adds are in feedback.json
already, so none is written twice.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from feedbackd.core import commitmsg
from feedbackd.core.changes import Action, Append, Change, CommitRequest, Remove, Write
from feedbackd.core.config import Settings
from feedbackd.core.curation import decisions, items
from feedbackd.core.curation.decisions import DecisionRecord, State
from feedbackd.core.curation.feedback import (
    FeedbackEntry,
    Identity,
    dump_feedback,
    merge_new,
    new_entry,
)
from feedbackd.core.curation.forgetting import without_forgotten
from feedbackd.core.curation.items import Correction, Item
from feedbackd.core.curation.prompts import render_snippet
from feedbackd.core.errors import FeedbackdError, PathProblem
from feedbackd.core.ids import Draw
from feedbackd.core.people import Person, parse_person
from feedbackd.core.wording import counted
from feedbackd.core.workspacepaths import (
    ALL_ITEM_FOLDERS,
    DECISION_FOLDERS,
    ITEM_SUFFIXES,
    AgentPaths,
)


# --- what was read ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)  # a pass holds one for every file of the agent's folders
class ItemFile:
    """An item file in `folder` (queue, approved or rejected); its name is the item's id."""

    folder: str
    item_id: str
    path: Path


@dataclass(frozen=True)
class FirstDraft:
    """A draft as first drafted: its file's suffix and bytes (its draft commit's, else the
    snapshot this machine took, else the file as the curator left it)."""

    suffix: str
    data: bytes


@dataclass(frozen=True)
class ReadItem:
    """An item file and what reading it gave: the item, or the error that keeps it waiting."""

    file: ItemFile
    item: Item | None = None
    error: FeedbackdError | None = None
    # A draft that git holds already (a fresh clone): the version its first commit added.
    first_version: bytes | None = None
    # An approved item without originalContentData: its content as first seen in queue/.
    first_seen: dict[str, Any] | None = None
    # An approved item that may have no corrections: its fields outside the content (see
    # items.outside_content) as first seen in queue/, to tell the curator what they changed.
    first_outside: dict[str, Any] | None = None
    # A decided file changed since: the item as its last commit holds it (what was recorded).
    decided_as: Item | None = None
    # A file moved to approved/ or rejected/ that may be a review (review.required ≥ 2): the
    # draft as first drafted, which the next curator reviews.
    first_draft: FirstDraft | None = None


@dataclass(frozen=True)
class AgentView:
    """What a pass read from one agent folder."""

    agent: AgentPaths
    root: Path  # the workspace's root: ledger lines name files relative to it
    files: Sequence[ItemFile]  # every item file in queue/, approved/ and rejected/
    ledger: Sequence[DecisionRecord]
    drafts: Sequence[ReadItem] = ()  # the `queued_drafts` without a snapshot yet, read
    undecided: Sequence[ReadItem] = ()  # the files `to_decide` names, read
    feedback: Sequence[FeedbackEntry] | FeedbackdError = ()  # an error: feedback.json is corrupt
    feedback_exists: bool = False
    ledger_exists: bool = False  # decisions.jsonl
    # feedback.json, decisions.jsonl and the snippet that HEAD lacks (read when a pass commits),
    # and the .gitkeep of approved/ and rejected/ missing beside a queue/
    uncommitted: frozenset[Path] = frozenset()
    snippet: str | None = None  # prompt/feedback.md as it stands; None when there is none
    author: Person | FeedbackdError | None = None  # decides an item that names no curator
    # `author` decides every item, whatever curator it names (a curator signed in over HTTP)
    author_first: bool = False
    forgotten: frozenset[Identity] = frozenset()  # lessons taken back (`feedbackd forget`)
    revised: Sequence[ReadItem] = ()  # decided files changed since their last commit, read
    # False: HEAD holds another snippet (a pass killed after writing it, before its commit)
    snippet_committed: bool = True
    # feedback.json deleted but not committed: HEAD's version (`feedback` holds its entries)
    feedback_deleted: str | None = None
    # reviews.jsonl (read where review.required ≥ 2), or why it cannot be used; the ids of its
    # lines that HEAD lacks (a pass killed after writing one, before its commit)
    reviews: Sequence[Any] | FeedbackdError = ()  # core/reviews/reviewlog.py's ReviewRecords
    unfinished_reviews: frozenset[str] = frozenset()
    edited_in_review: Sequence[Path] = ()  # drafts in review/ that differ from HEAD's
    # Drafts in review/ that enough curators reviewed with no move left to decide them (the
    # last review came from another clone), read with their first draft
    waiting: Sequence[ReadItem] = ()


# --- the plan -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Step:
    """Apply `first` (a review's line and files), write these files, remove those, append these
    ledger lines, then make the commit: in this order (`change`, what the applier takes)."""

    commit: CommitRequest
    writes: tuple[Write, ...] = ()
    ledger: tuple[DecisionRecord, ...] = ()
    removes: tuple[Path, ...] = ()  # drafts whose item is decided (see `beside_decisions`)
    first: tuple[Action, ...] = ()

    def change(self, ledger: Path) -> Change:
        """The step as one change; its ledger lines go to `ledger` (the agent's decisions)."""
        removes = tuple(Remove(path) for path in self.removes)
        lines = tuple(Append(ledger, record.line()) for record in self.ledger)
        return Change(self.commit, (*self.first, *self.writes, *removes, *lines))

    @property
    def replaced(self) -> list[Path]:
        """The files the step writes or removes (taken back when its commit is not made)."""
        first = [action.path for action in self.first if not isinstance(action, Append)]
        return [*first, *(write.path for write in self.writes), *self.removes]

    @property
    def appended(self) -> list[Path]:
        """The logs the step appends to, besides the ledger."""
        return [action.path for action in self.first if isinstance(action, Append)]


def _commit(
    agent: AgentPaths,
    event: str,
    summary: str,
    paths: tuple[Path, ...],
    author: Person | None = None,
    body: tuple[str, ...] = (),
    trailers: tuple[tuple[str, str], ...] = (),
    item: str | None = None,
) -> CommitRequest:
    """A commit of exactly `paths` in the agent's folder (moved away meanwhile: none)."""
    return CommitRequest(
        event, agent.agent_id, summary, paths, author, None, item, body, trailers, agent.root
    )


@dataclass(frozen=True)
class Snapshot:
    """A draft to remember as first seen: its first committed version, else the file as is."""

    file: ItemFile
    first_version: bytes | None


@dataclass(frozen=True)
class BadFile(PathProblem):
    """A file the pass cannot use. An item may still be being written: it is explained beside
    it once it stayed bad for daemon.settle_ms (`settles`); a corrupt feedback.json at once."""

    settles: bool = True

    @classmethod
    def of(cls, path: Path, error: FeedbackdError, *, settles: bool = True) -> BadFile:
        """The file at `path`, which `error` says is bad."""
        return cls(path, error.message, error.hint, settles)


@dataclass(frozen=True)
class Refusal(PathProblem):
    """A review refused (its curator reviewed the item already): `actions` put the draft back in
    review/ as it was; `path`, the draft in review/, gets the `.error` file."""

    actions: tuple[Write | Remove, ...] = ()


@dataclass(frozen=True)
class AgentPlan:
    """What one pass does, in order: `drafts` (or else `feedback_files`), then `snapshots`,
    each of `decisions`, then `snippet_refresh` (a snippet that no longer matches
    feedback.json)."""

    drafts: Step | None = None
    snapshots: tuple[Snapshot, ...] = ()
    decisions: tuple[Step, ...] = ()
    snippet_refresh: Step | None = None
    problems: tuple[BadFile, ...] = ()
    warnings: tuple[str, ...] = ()
    # Those of `warnings` about a decision this pass records (an approval with no corrections,
    # a rejection without a note): nothing stands to tell it again, so the daemon keeps them.
    decision_warnings: tuple[str, ...] = ()
    feedback_files: Step | None = None  # a new agent's, when no drafts' commit holds them
    feedback_restore: Step | None = None  # a deleted feedback.json, back as HEAD holds it
    refusals: tuple[Refusal, ...] = ()  # reviews not taken, applied before the decisions

    @property
    def steps(self) -> list[Step]:
        """Every step, in the order it is applied."""
        first = (self.feedback_restore, self.drafts, self.feedback_files)
        return [step for step in (*first, *self.decisions, self.snippet_refresh) if step]


# --- what to read -------------------------------------------------------------------------------
def queued_drafts(files: Iterable[ItemFile]) -> list[ItemFile]:
    """The drafts in queue/ whose id is in neither approved/ nor rejected/ (a pass reads those
    it has no snapshot of: drafts seen for the first time)."""
    files = list(files)
    decided_now = _decided_ids(files)
    return [f for f in files if f.folder == "queue" and f.item_id not in decided_now]


def to_decide(files: Iterable[ItemFile], ledger: Iterable[DecisionRecord]) -> list[ItemFile]:
    """The files in approved/ or rejected/ that the ledger does not record there yet; an item in
    both folders waits until the curator keeps one."""
    latest = decisions.latest_states(ledger)
    decided = [f for f in files if f.folder in DECISION_FOLDERS]
    both = in_both_folders(decided)
    return [
        f
        for f in decided
        if f.item_id not in both
        and (f.item_id not in latest or latest[f.item_id].state != f.folder)
    ]


def beside_decisions(files: Iterable[ItemFile]) -> dict[str, list[ItemFile]]:
    """The drafts in queue/ (or review/ and disputed/) whose item is in approved/ or rejected/
    too, by item id.

    The decision stands and the draft goes: one rule for the daemon, `run --once` and the
    commands. The curator's move is the latest act; a copy in queue/ beside it is what a
    `git reset --hard` (or a checkout) put back from a commit made before the move, a copy in
    review/ what a merge of another clone's review left. The draft is removed in the decision's
    commit, or in a commit of its own when the ledger records the decision already; while the
    decided file waits (to settle, or in both decision folders) the draft stays.
    """
    files = list(files)
    decided_now = _decided_ids(files)
    found: dict[str, list[ItemFile]] = {}
    for f in files:
        waiting = f.folder not in DECISION_FOLDERS
        if waiting and f.item_id in decided_now and f.path.stem == f.item_id:
            found.setdefault(f.item_id, []).append(f)
    return found


def in_both_folders(files: Iterable[ItemFile]) -> list[str]:
    folders: dict[str, set[str]] = {}
    for item_file in files:
        if item_file.folder in DECISION_FOLDERS:
            folders.setdefault(item_file.item_id, set()).add(item_file.folder)
    return sorted(item_id for item_id, where in folders.items() if len(where) > 1)


# --- planning -----------------------------------------------------------------------------------
@dataclass
class PlanNotes:
    """What the plan has to say besides its steps."""

    problems: list[BadFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    decision_warnings: list[str] = field(default_factory=list)

    def about_decision(self, warning: str) -> None:
        self.warnings.append(warning)
        self.decision_warnings.append(warning)


@dataclass(frozen=True)
class _Folder:
    """feedback.json and the snippet as the steps planned so far leave them."""

    feedback: tuple[FeedbackEntry, ...]
    feedback_exists: bool
    snippet: str | None


class Reviewing(Protocol):
    """How a pass plans the files moved to approved/ or rejected/ where several curators review
    each draft (core/reviews/reviewsteps.py): each may be a review, a decision or a refusal."""

    def before(self, view: AgentView, notes: PlanNotes) -> list[Step | Decision]:
        """Steps and decisions that go before the moved files' (what a killed pass left to
        commit, the outcome of reviews that a merge completed)."""

    def judge(
        self, view: AgentView, read: ReadItem, notes: PlanNotes, now: datetime, draw: Draw
    ) -> Decision | Step | Refusal | None:
        """What the moved file stands for; None when it must wait (`notes` say why)."""


def plan_agent(
    view: AgentView,
    settings: Settings,
    now: datetime,
    draw: Draw,
    reviewing: Reviewing | None = None,
) -> AgentPlan:
    """What the pass over this agent folder does, given what it read (see the module's notes);
    `reviewing`: how reviews are planned, where several curators review each draft."""
    notes = PlanNotes()
    drafts, snapshots = _plan_drafts(view, now, draw, notes)
    if isinstance(view.feedback, FeedbackdError):
        notes.problems.append(BadFile.of(view.agent.feedback, view.feedback, settles=False))
        return AgentPlan(drafts, snapshots, problems=tuple(notes.problems))
    for item_id in in_both_folders(view.files):
        notes.warnings.append(
            f"{view.agent.agent_id}/{item_id} is in both approved/ and rejected/: keep one"
        )
    feedback = tuple(view.feedback)
    restore = _plan_feedback_restore(view, len(feedback), notes)
    folder = _Folder(feedback, view.feedback_exists or restore is not None, view.snippet)
    drafts, feedback_files, folder = _plan_feedback_files(view, drafts, folder)
    stale = beside_decisions(view.files)
    steps = _plan_stale_drafts(view, stale)
    kept = without_forgotten(folder.feedback, view.forgotten)
    if len(kept) != len(folder.feedback):  # a merge brought a forgotten entry back
        step, folder = _plan_forgotten_again(view.agent, kept, folder, settings)
        steps.append(step)
    undecided = _Undecided(view, settings, now, draw, notes, reviewing)
    decided, refusals, folder = undecided.plan(stale, folder)
    steps += decided
    for read in view.revised:
        decision = _judge_revision(view, read, notes)
        if decision is not None:
            step, folder = _plan_revision(view, decision, folder, settings, now, draw)
            steps.append(step)
    left_uncommitted = not view.snippet_committed and folder.snippet == view.snippet
    snippet_refresh = _plan_snippet_refresh(view.agent, folder, settings, left_uncommitted)
    return AgentPlan(
        drafts,
        snapshots,
        tuple(steps),
        snippet_refresh,
        tuple(notes.problems),
        tuple(notes.warnings),
        tuple(notes.decision_warnings),
        feedback_files,
        restore,
        tuple(refusals),
    )


@dataclass(frozen=True)
class _Undecided:
    """Plans the files moved to approved/ or rejected/ that the ledger does not record there."""

    view: AgentView
    settings: Settings
    at: datetime  # now, as the pass was given it
    draw: Draw
    notes: PlanNotes
    reviewing: Reviewing | None

    def plan(
        self, stale: dict[str, list[ItemFile]], folder: _Folder
    ) -> tuple[list[Step], list[Refusal], _Folder]:
        """Their steps (decisions, and reviews where several curators review a draft), the
        reviews refused, and feedback.json and the snippet as the steps leave them."""
        view, reviewing = self.view, self.reviewing
        judged: list[Decision | Step | Refusal | None] = []
        judged += reviewing.before(view, self.notes) if reviewing else []
        judged += [self._judge(read) for read in view.undecided]
        steps: list[Step] = []
        refusals: list[Refusal] = []
        for one in judged:
            if isinstance(one, Refusal):
                refusals.append(one)
            elif one is not None:
                step, folder = self._step(one, stale, folder)
                steps.append(step)
        return steps, refusals, folder

    def _step(
        self, judged: Decision | Step, stale: dict[str, list[ItemFile]], folder: _Folder
    ) -> tuple[Step, _Folder]:
        """A review's step, or a decision's, with the draft its item left beside it."""
        item_id = judged.commit.item if isinstance(judged, Step) else judged.item.item_id
        draft = tuple(f.path for f in stale.get(item_id or "", ()))
        if isinstance(judged, Step):  # a review: the draft waits on in review/ or disputed/
            queued = tuple(path for path in draft if path.parent == self.view.agent.queue)
            return replace(judged, removes=(*judged.removes, *queued)), folder
        at, draw = judged.made or (self.at, self.draw)
        step, after = _plan_decision(self.view, judged, folder, self.settings, at, draw)
        return (replace(step, removes=draft) if draft else step), after

    def _judge(self, read: ReadItem) -> Decision | Step | Refusal | None:
        if self.reviewing is None:
            return judge(self.view, read, self.notes)
        return self.reviewing.judge(self.view, read, self.notes, self.at, self.draw)


def _plan_stale_drafts(view: AgentView, stale: dict[str, list[ItemFile]]) -> list[Step]:
    """One commit that removes the drafts beside decisions the ledger records already (see
    `beside_decisions`); those beside a decision still to record go with its commit."""
    latest = decisions.latest_states(view.ledger)
    folders = {f.item_id: f.folder for f in view.files if f.folder in DECISION_FOLDERS}
    both = set(in_both_folders(view.files))
    recorded = sorted(
        item_id
        for item_id in stale
        if item_id not in both and item_id in latest and latest[item_id].state == folders[item_id]
    )
    if not recorded:
        return []
    drafts = tuple(f.path for item_id in recorded for f in stale[item_id])
    if len(recorded) == 1:
        name = f"{drafts[0].parent.name}/{drafts[0].name}"
        summary = f"remove {name}, decided in {folders[recorded[0]]}/"
    else:
        summary = f"remove {len(recorded)} drafts already decided ({commitmsg.few_ids(recorded)})"
    return [Step(_commit(view.agent, "sync", summary, drafts), removes=drafts)]


def _plan_feedback_restore(view: AgentView, entries: int, notes: PlanNotes) -> Step | None:
    """feedback.json deleted but not committed: written back as HEAD holds it, before anything
    else, so that every lesson stays (the commit is empty unless a decision follows)."""
    if view.feedback_deleted is None:
        return None
    agent = view.agent
    notes.warnings.append(
        f"{_relative(view, agent.feedback)} was deleted; put back as the last commit holds it"
        f" ({counted(entries, 'entry', 'entries')}): to wipe the agent's lessons on purpose, run"
        f" `feedbackd forget {agent.agent_id} --all`"
    )
    commit = _commit(agent, "sync", "restore feedback.json from history", (agent.feedback,))
    return Step(commit, (Write(agent.feedback, view.feedback_deleted),))


def plan_feedback_files(
    agent: AgentPaths, uncommitted: Collection[Path], on_disk: Collection[Path]
) -> Step | None:
    """The commit of the agent's feedback.json, decisions.jsonl and snippet that no commit holds
    yet (`uncommitted`): those not `on_disk` written empty, any other (left by a pass killed
    before its commit) as it is; None when every one is committed.

    They are committed before the agent's first decision (with its first drafts), so that no
    decision commit creates them: `git revert` of that decision then removes its entries and
    ledger line from files that stay, instead of stopping on "deleted in the parent, modified
    since" conflicts.
    """
    paths = tuple(path for path in agent.feedback_files if path in uncommitted)
    if not paths:
        return None
    empty = {agent.feedback: dump_feedback([]), agent.decisions: "", agent.prompt: ""}
    writes = tuple(Write(path, empty[path]) for path in paths if path not in on_disk)
    names = ", ".join(path.relative_to(agent.root).as_posix() for path in paths)
    return Step(_commit(agent, "sync", f"add {names}", paths), writes)


def _plan_feedback_files(
    view: AgentView, drafts: Step | None, folder: _Folder
) -> tuple[Step | None, Step | None, _Folder]:
    """The drafts' step, the step of the new agent's feedback files, and the folder after them.

    The files go into the drafts' commit; into a commit of their own before the decisions when
    there is none (an item put straight into approved/); nowhere while nothing is committed.
    """
    on_disk = [
        path
        for path, there in zip(
            view.agent.feedback_files,
            (view.feedback_exists, view.ledger_exists, view.snippet is not None),
            strict=True,
        )
        if there
    ]
    files = plan_feedback_files(view.agent, view.uncommitted, on_disk)
    if files is None or (drafts is None and not view.undecided):
        return drafts, None, folder
    files = _with_decision_folders(view, files)
    folder = _Folder(folder.feedback, True, folder.snippet or "")
    if drafts is None:
        return None, files, folder
    commit = replace(drafts.commit, paths=(*drafts.commit.paths, *files.commit.paths))
    return replace(drafts, commit=commit, writes=(*files.writes, *drafts.writes)), None, folder


# The empty file that keeps an empty folder in git, as the sample agents' folders have it.
KEEP_FILE = ".gitkeep"


def _with_decision_folders(view: AgentView, step: Step) -> Step:
    """A new agent's first commit with approved/ and rejected/ made and kept in git, so that a
    curator's first `mv` of a draft has somewhere to go, in this clone and in every other."""
    keeps = tuple(
        keep
        for keep in (view.agent.folder(folder) / KEEP_FILE for folder in DECISION_FOLDERS)
        if keep in view.uncommitted
    )
    if not keeps:
        return step
    commit = replace(step.commit, paths=(*step.commit.paths, *keeps))
    return replace(step, commit=commit, writes=(*step.writes, *(Write(k, "") for k in keeps)))


def _plan_drafts(
    view: AgentView, now: datetime, draw: Draw, notes: PlanNotes
) -> tuple[Step | None, tuple[Snapshot, ...]]:
    """New drafts (git does not hold them yet) and items back in queue/: one `draft` commit.

    Snapshots come after it: a draft whose commit failed is still new on the next pass.
    """
    notes.problems.extend(BadFile.of(d.file.path, d.error) for d in view.drafts if d.error)
    readable = [d for d in view.drafts if d.item is not None]
    new = [d.file for d in readable if d.first_version is None]
    requeued = _requeued(view.files, view.ledger, now, draw)
    snapshots = tuple(Snapshot(d.file, d.first_version) for d in readable)
    if not new and not requeued:
        return None, snapshots
    paths = [f.path for f in new] + [view.agent.decisions] * bool(requeued)
    paths += [path for record in requeued for path in decided_file(view.root, view.agent, record)]
    back = {f.item_id: f.path for f in queued_drafts(view.files)}
    paths += [back[record.item] for record in requeued]  # the draft itself, in queue/ again
    summary = commitmsg.drafts_summary([f.item_id for f in new], [r.item for r in requeued])
    commit = _commit(view.agent, "draft", summary, tuple(paths))
    return Step(commit, ledger=tuple(requeued)), snapshots


def _requeued(
    files: Sequence[ItemFile], ledger: Sequence[DecisionRecord], now: datetime, draw: Draw
) -> list[DecisionRecord]:
    """A `queued` line for each draft the ledger says was decided: it is a draft again."""
    latest = decisions.latest_states(ledger)
    queued = {f.item_id for f in queued_drafts(files)}
    return [
        decisions.new_record(item_id, "queued", now, draw, file=latest[item_id].file)
        for item_id in sorted(queued)
        if item_id in latest and latest[item_id].state != "queued"
    ]


def decided_file(root: Path, agent: AgentPaths, record: DecisionRecord) -> list[Path]:
    """Where the ledger says the item was decided: for a file of an agent's approved/ or
    rejected/, that folder of this agent (the line may name the agent as it was called before
    its folder was renamed); none for a hand-written record."""
    if not record.file:
        return []
    where = root / record.file
    folder = where.parent
    if folder.name in DECISION_FOLDERS and folder.parent.parent == agent.root.parent:
        return [agent.folder(folder.name) / where.name]
    return [where]  # a file of many items (webhouse's queue)


@dataclass(frozen=True)
class Decision:
    """An item in approved/ or rejected/, judged: who decided, what they corrected."""

    file: ItemFile
    item: Item
    state: State
    author: Person
    corrections: list[Correction]
    notes: str | None = None  # a rejection's note to record (None: none)
    # Decided by several curators' reviews (core/reviews/reviewsteps.py): the trailers that
    # name them, the log their commit holds, the actions that go first (the deciding line).
    trailers: tuple[tuple[str, str], ...] = ()
    log: Path | None = None
    first: tuple[Action, ...] = ()
    # When the decision counts as made and what draws its ids, where that is not the pass's:
    # reviews a merge completed, decided alike by every clone that reaches them.
    made: tuple[datetime, Draw] | None = None


def item_and_author(
    view: AgentView, read: ReadItem, notes: PlanNotes
) -> tuple[Item, Person] | None:
    """The item read and who decides it; None when it must wait (a problem says why)."""
    if read.item is None:
        if read.error is not None:
            notes.problems.append(BadFile.of(read.file.path, read.error))
        return None
    try:
        if view.author_first and isinstance(view.author, Person):
            return read.item, view.author
        return read.item, _author(read.item, view.author)
    except FeedbackdError as error:
        notes.problems.append(BadFile.of(read.file.path, error))
        return None


def judge(view: AgentView, read: ReadItem, notes: PlanNotes) -> Decision | None:
    """The decision a read item stands for; None when it must wait (a problem says why)."""
    found = item_and_author(view, read, notes)
    if found is None:
        return None
    item, author = found
    where = _relative(view, read.file.path)
    if read.file.path.stem != read.file.item_id:  # one file of many items (webhouse's queue)
        where += f" item {read.file.item_id}"
    if read.file.folder == "rejected":
        if not item.rejection_feedback:
            notes.about_decision(f"{where}: rejected without rejectionFeedback")
        note = item.rejection_feedback or ""
        return Decision(read.file, item, "rejected", author, [], note)
    original = item.original if item.original is not None else read.first_seen
    if original is None:
        notes.about_decision(
            f"{where}: never seen in queue/ and no originalContentData;"
            " approved with no corrections"
        )
        return Decision(read.file, item, "approved", author, [])
    corrections = items.diff_content(original, item.content)
    if not corrections and read.first_outside is not None:
        outside = items.changed_keys(read.first_outside, items.outside_content(item))
        if outside:
            notes.about_decision(_changed_outside(where, item, outside))
    unrecorded = items.unrecorded_changes(original, item.content)
    if unrecorded:
        notes.about_decision(_not_text(where, unrecorded))
    return Decision(read.file, item, "approved", author, corrections)


def _not_text(where: str, fields: list[str]) -> str:
    """Why an edit of a list or a number left no lesson (the contract compares text alone)."""
    return (
        f"{where}: {', '.join(fields)} changed, but only text fields are recorded as corrections"
        " (not lists, numbers or yes/no values): the change is in the approved file and in git,"
        " not recorded in feedback.json; to teach it to the agent, state it as text with"
        " `feedbackd record` (an edit)"
    )


def _changed_outside(where: str, item: Item, keys: list[str]) -> str:
    """Why an approval whose curator did edit the draft recorded no correction."""
    names = ", ".join(keys)
    # The key the curator most likely meant: one the content has too (a top-level `title`).
    meant = next((key for key in keys if key in item.content), keys[0])
    if item.format == "md":
        return (
            f"{where}: approved with no corrections; {names} changed in the front matter, but"
            " those keys are not content (the body and the other front matter keys are):"
            " move it back to queue/ to correct the content and approve it again"
        )
    return (
        f"{where}: approved with no corrections; {names} changed outside contentData, which"
        f" alone holds the content: move it back to queue/, edit contentData.{meant} instead"
        " and approve it again"
    )


def _author(item: Item, fallback: Person | FeedbackdError | None) -> Person:
    """The curator: the item's `curator`, else whoever decides items that name none."""
    if item.curator:
        return parse_person(item.curator, "curator")
    if isinstance(fallback, FeedbackdError):
        raise fallback
    if fallback is None:
        raise ValueError("AgentView.author is needed to decide an item that names no curator")
    return fallback


def _plan_decision(
    view: AgentView,
    decision: Decision,
    folder: _Folder,
    settings: Settings,
    now: datetime,
    draw: Draw,
) -> tuple[Step, _Folder]:
    """The step that records one decision, and the folder as it leaves it."""
    entries = without_forgotten(_entries(decision, now, draw), view.forgotten)
    writes, added, after = _feedback_writes(view.agent, entries, folder, settings)
    record = decisions.new_record(
        decision.item.item_id,
        decision.state,
        now,
        draw,
        file=_relative(view, decision.file.path),
        curator=str(decision.author),
        fields=[c.field for c in decision.corrections] or None,
        entries=[entry.id for entry in added] or None,
    )
    earlier = _recorded_earlier(view.ledger, folder.feedback, decision.item.item_id)
    commit = _decision_commit(view.agent, decision, added, earlier)
    return Step(commit, tuple(writes), (record,), first=decision.first), after


def _recorded_earlier(
    ledger: Sequence[DecisionRecord], feedback: Sequence[FeedbackEntry], item_id: str
) -> set[tuple[str | None, str | None]]:
    """The (field, corrected) of the item's corrections that an earlier decision recorded (its
    ledger line names the entry). An entry no decision names (webhouse's own, one a killed pass
    left uncommitted) is this decision's to tell."""
    named = {entry_id for record in ledger for entry_id in record.entries or ()}
    return {
        (entry.field, entry.corrected)
        for entry in feedback
        if entry.id in named and entry.queueItemId == item_id and entry.type == "correction"
    }


def _feedback_writes(
    agent: AgentPaths, entries: list[FeedbackEntry], folder: _Folder, settings: Settings
) -> tuple[list[Write], list[FeedbackEntry], _Folder]:
    """feedback.json with the entries not recorded yet, and the snippet, where they change;
    the entries added, and the folder as the writes leave it."""
    merged, added = merge_new(folder.feedback, entries, settings.feedback.max_entries)
    stored = tuple(merged)
    writes = []
    if added or not folder.feedback_exists:
        writes.append(Write(agent.feedback, partial(dump_feedback, stored)))
    snippet = render_snippet(stored, settings.prompt)
    if snippet != folder.snippet:
        writes.append(Write(agent.prompt, snippet))
    return writes, added, _Folder(stored, True, snippet)


# --- a decided file changed after its commit --------------------------------------------------
def _judge_revision(view: AgentView, read: ReadItem, notes: PlanNotes) -> Decision | None:
    """What a decided file edited since its last commit adds: the corrections (or the note)
    that the committed version did not hold; None when it must wait (a problem says why)."""
    found = item_and_author(view, read, notes)
    if found is None:
        return None
    (item, author), before = found, read.decided_as
    if read.file.folder == "rejected":
        said = before.rejection_feedback if before is not None else None
        note = item.rejection_feedback if item.rejection_feedback != said else None
        return Decision(read.file, item, "rejected", author, [], note or None)
    recorded = {(c.field, c.corrected) for c in _corrections(before, read.first_seen)}
    new = [c for c in _corrections(item, read.first_seen) if (c.field, c.corrected) not in recorded]
    unrecorded = items.unrecorded_changes(before.content, item.content) if before else []
    if unrecorded:
        notes.about_decision(_not_text(_relative(view, read.file.path), unrecorded))
    return Decision(read.file, item, "approved", author, new)


def _corrections(item: Item | None, first_seen: dict[str, Any] | None) -> list[Correction]:
    """The item's corrections against its original (none without one)."""
    original = item.original if item is not None and item.original is not None else first_seen
    if item is None or original is None:
        return []
    return items.diff_content(original, item.content)


def _plan_revision(
    view: AgentView,
    decision: Decision,
    folder: _Folder,
    settings: Settings,
    now: datetime,
    draw: Draw,
) -> tuple[Step, _Folder]:
    """The step that commits a decided file again with what its edit adds: no ledger line (the
    decision stands); the entries are de-duplicated, so a replayed step adds none twice."""
    entries = without_forgotten(_entries(decision, now, draw), view.forgotten)
    writes, _, after = _feedback_writes(view.agent, entries, folder, settings)
    item, corrections = decision.item, decision.corrections
    summary = commitmsg.revision_summary(item.item_id, decision.state, corrections, decision.notes)
    commit = _commit(
        view.agent,
        "revise",
        summary,
        (decision.file.path, view.agent.feedback, view.agent.prompt),
        decision.author,
        tuple(commitmsg.revision_body(decision.notes, corrections)),
        tuple(commitmsg.decision_trailers(item.item_id, corrections)),
        item.item_id,
    )
    return Step(commit, tuple(writes)), after


def _entries(decision: Decision, now: datetime, draw: Draw) -> list[FeedbackEntry]:
    item_id = decision.item.item_id
    if decision.state == "rejected":
        if decision.notes is None:
            return []
        return [new_entry(now, draw, type="rejection", queueItemId=item_id, notes=decision.notes)]
    return [
        new_entry(
            now,
            draw,
            type="correction",
            queueItemId=item_id,
            field=c.field,
            original=c.original,
            corrected=c.corrected,
        )
        for c in decision.corrections
    ]


def _decision_commit(
    agent: AgentPaths,
    decision: Decision,
    added: Sequence[FeedbackEntry],
    earlier: set[tuple[str | None, str | None]],
) -> CommitRequest:
    """The decision's commit, telling its corrections: one an `earlier` decision of the item
    recorded already (and that this one did not add again) is named as such, not claimed. Its
    Feedback-Fields are all the decision corrected, as its ledger line's `fields` are."""
    item, state = decision.item, decision.state
    repeated = earlier - {(entry.field, entry.corrected) for entry in added}
    told = [(c, (c.field, c.corrected) in repeated) for c in decision.corrections]
    corrections = [correction for correction, before in told if not before]
    already = [correction.field for correction, before in told if before]
    event, summary = commitmsg.decision_summary(item.item_id, state, corrections, already)
    paths = decision_paths(agent, decision.file) + ([decision.log] if decision.log else [])
    return _commit(
        agent,
        event,
        summary,
        tuple(paths),
        decision.author,
        tuple(commitmsg.decision_body(state, decision.notes, corrections)),
        (*commitmsg.decision_trailers(item.item_id, decision.corrections), *decision.trailers),
        item.item_id,
    )


def decision_paths(agent: AgentPaths, item_file: ItemFile) -> list[Path]:
    """The paths of a decision's commit. Where the item came from is part of its move: queue/,
    review/ or disputed/, or the other decision folder when the curator changed their mind."""
    sources = [
        agent.folder(folder) / (item_file.item_id + suffix)
        for folder in ALL_ITEM_FOLDERS
        for suffix in ITEM_SUFFIXES
    ]
    return [*sources, item_file.path, agent.feedback, agent.decisions, agent.prompt]


def _plan_forgotten_again(
    agent: AgentPaths, kept: list[FeedbackEntry], folder: _Folder, settings: Settings
) -> tuple[Step, _Folder]:
    """Drop entries that forgotten.jsonl lists (brought back by a merge), in a `sync` commit."""
    snippet = render_snippet(kept, settings.prompt)
    writes = [Write(agent.feedback, dump_feedback(kept))]
    if snippet != folder.snippet:
        writes.append(Write(agent.prompt, snippet))
    dropped = len(folder.feedback) - len(kept)
    summary = (
        f"drop {dropped} forgotten {'entry' if dropped == 1 else 'entries'} a merge brought back"
    )
    commit = _commit(agent, "sync", summary, (agent.feedback, agent.prompt))
    return Step(commit, tuple(writes)), _Folder(tuple(kept), True, snippet)


def plan_forget(
    agent: AgentPaths,
    entry: FeedbackEntry,
    feedback: Sequence[FeedbackEntry],
    snippet: str | None,
    settings: Settings,
    forgetting: tuple[str, Person],  # (the forgotten.jsonl text with the new line, who)
    reason: str = "",
) -> Step:
    """`feedbackd forget`: the entry out of feedback.json, the snippet, the forgotten line."""
    forgotten_text, author = forgetting
    kept = [other for other in feedback if other.id != entry.id]
    writes = [Write(agent.feedback, dump_feedback(kept)), Write(agent.forgotten, forgotten_text)]
    text = render_snippet(kept, settings.prompt)
    if text != snippet:
        writes.append(Write(agent.prompt, text))
    commit = _commit(
        agent,
        "forget",
        entry.id,
        (agent.feedback, agent.prompt, agent.forgotten),
        author,
        (*commitmsg.reason_body(reason), *commitmsg.entry_body(entry)),
        tuple(commitmsg.record_trailers(entry)),
        entry.queueItemId,
    )
    return Step(commit, tuple(writes))


def plan_forget_all(
    agent: AgentPaths,
    feedback: Sequence[FeedbackEntry],
    snippet: str | None,
    settings: Settings,
    forgetting: tuple[str, Person],  # (the forgotten.jsonl text with a line for each, who)
    reason: str = "",
) -> Step:
    """`feedbackd forget AGENT --all`: feedback.json emptied, the snippet regenerated, every
    entry listed in forgotten.jsonl (so no replay or merge brings one back), in one commit."""
    forgotten_text, author = forgetting
    writes = [Write(agent.feedback, dump_feedback([])), Write(agent.forgotten, forgotten_text)]
    text = render_snippet([], settings.prompt)
    if text != snippet:
        writes.append(Write(agent.prompt, text))
    shown = commitmsg.reason_body(reason)
    shown += [line for entry in feedback[:_LISTED] for line in commitmsg.entry_body(entry)]
    if len(feedback) > _LISTED:
        shown.append(f"and {len(feedback) - _LISTED} more")
    commit = _commit(
        agent,
        "forget",
        f"all {counted(len(feedback), 'entry', 'entries')}",
        (agent.feedback, agent.prompt, agent.forgotten),
        author,
        tuple(shown),
    )
    return Step(commit, tuple(writes))


_LISTED = 20  # entries a `forget --all` commit lists in its body; the rest are counted


def plan_restore(agent: AgentPaths, records: Sequence[DecisionRecord]) -> Step:
    """Ledger lines lost from decisions.jsonl, back from their decision commits: one commit."""
    items = commitmsg.few_ids([record.item for record in records])
    summary = f"restore {counted(len(records), 'decision')} from history ({items})"
    return Step(_commit(agent, "sync", summary, (agent.decisions,)), ledger=tuple(records))


def _plan_snippet_refresh(
    agent: AgentPaths, folder: _Folder, settings: Settings, left_uncommitted: bool
) -> Step | None:
    """Regenerate a snippet that no longer matches feedback.json (settings changed, a pull);
    commit one a killed pass regenerated but never committed (`left_uncommitted`)."""
    if not folder.feedback_exists and folder.snippet is None:
        return None
    text = render_snippet(folder.feedback, settings.prompt)
    commit = _commit(agent, "sync", "regenerate prompt snippet", (agent.prompt,))
    if text != folder.snippet:
        return Step(commit, (Write(agent.prompt, text),))
    return Step(commit) if left_uncommitted else None


def _relative(view: AgentView, path: Path) -> str:
    """The path as git names it: relative to the workspace, with forward slashes."""
    return path.relative_to(view.root).as_posix()


def _decided_ids(files: Iterable[ItemFile]) -> set[str]:
    return {f.item_id for f in files if f.folder in DECISION_FOLDERS}


def plan_record(
    agent: AgentPaths,
    entry: FeedbackEntry,
    feedback: Sequence[FeedbackEntry],
    snippet: str | None,
    settings: Settings,
    author: Person,
) -> Step | None:
    """`feedbackd record`: the entry added to feedback.json, the snippet, one `record` commit;
    None when an entry with the same identity is recorded already."""
    stored, added = merge_new(feedback, [entry], settings.feedback.max_entries)
    if not added:
        return None
    writes = [Write(agent.feedback, dump_feedback(stored))]
    text = render_snippet(stored, settings.prompt)
    if text != snippet:
        writes.append(Write(agent.prompt, text))
    commit = _commit(
        agent,
        "record",
        commitmsg.record_summary(entry),
        (agent.feedback, agent.prompt),
        author,
        tuple(commitmsg.entry_body(entry)),
        tuple(commitmsg.record_trailers(entry)),
        entry.queueItemId,
    )
    return Step(commit, tuple(writes))
