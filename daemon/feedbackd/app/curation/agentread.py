"""What a pass reads from one agent folder, for the planner: items, drafts' first versions,
feedback.json, the snippet, and who decides.

Reading explains nothing and writes nothing but this: an item or feedback.json that reads again
loses its `.error` file, and `.error` files whose file is gone are removed. What cannot be read
is handed to the planner as an error; the pass explains it beside the file.

The drafts as first seen in queue/ (which an approval is diffed against) are local state, kept
by app/curation/draftmemory.py.
"""

from __future__ import annotations

import logging
import operator
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from feedbackd.app.commits.ledgers import CommittedLedgers
from feedbackd.app.curation import webhousequeue
from feedbackd.app.curation.decidedfiles import ChangedDecisions
from feedbackd.app.curation.decisionhistory import DecisionHistory
from feedbackd.app.curation.draftmemory import (
    DraftAdds,
    FirstVersions,
    remembered,
    snapshot_path,
)
from feedbackd.app.reviews.reviewread import NO_REVIEWS, ReviewReading
from feedbackd.app.workspace import problems
from feedbackd.app.workspace.agentfiles import read_feedback, read_forgotten_text, read_item
from feedbackd.app.workspace.itemfiles import listed_item_problem, outside_data
from feedbackd.app.workspace.runtime import Runtime, choose_author
from feedbackd.core.curation import agentplan, decisions, items
from feedbackd.core.curation.agentplan import KEEP_FILE, AgentView, BadFile, ItemFile, ReadItem
from feedbackd.core.curation.decisions import DecisionRecord, State, new_record
from feedbackd.core.curation.feedback import FeedbackEntry, parse_feedback
from feedbackd.core.curation.forgetting import forgotten_identities
from feedbackd.core.errors import FeedbackdError
from feedbackd.core.ids import is_valid_id, shown_name
from feedbackd.core.people import Person
from feedbackd.core.reviews.reviewlog import ReviewRecord
from feedbackd.core.timeutil import parse_iso
from feedbackd.core.workspacepaths import (
    ALL_ITEM_FOLDERS,
    DECISION_FOLDERS,
    ITEM_SUFFIXES,
    AgentPaths,
    other_format,
)
from feedbackd.edges.files import FileState, child_path, file_state, read_file_bytes
from feedbackd.edges.git.repo import GitRepo
from feedbackd.edges.randomness import random_chars

log = logging.getLogger("feedbackd")
_NAME = operator.attrgetter("name")


@dataclass
class Scan:
    """The item files of an agent folder, and the entries named like items that are not."""

    files: list[ItemFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    problems: list[BadFile] = field(default_factory=list)
    # decided files changed less than daemon.settle_ms ago, and when to look at them again
    settling: list[tuple[Path, float]] = field(default_factory=list)
    # ledger lines lost from decisions.jsonl, as the decision commits in history tell them
    restored: list[DecisionRecord] = field(default_factory=list)
    # in a pass confined to a command's own items: the other decisions left to the daemon
    left_waiting: int = 0
    # a symbolic link among the items: what it points to may change with no trace here
    links: bool = False


@dataclass
class Lookups:
    """What the agents of one pass ask git together, once: the new drafts' first versions, the
    decided files changed since their commit, and the drafts' commits that approvals are diffed
    against. A pass over one agent asks on its own."""

    first_versions: FirstVersions | None = None
    changed_decisions: ChangedDecisions | None = None
    # the draft commits of the approvals to decide, kept from one pass to the next
    draft_adds: DraftAdds | None = None


@dataclass(frozen=True)
class ReadScope:
    """How a pass reads an agent folder: with what git was asked for the agents of the pass
    together (`lookups`; None: the folder's own), and, for a command's pass, the files it wrote
    in one piece (they need not settle) and its own items (the pass reads only those and leaves
    the rest to the daemon; None: all)."""

    lookups: Lookups | None = None
    written_whole: frozenset[Path] = frozenset()
    only_items: frozenset[str] | None = None


class AgentReader:
    """Reads one agent folder for one pass."""

    def __init__(
        self,
        runtime: Runtime,
        repo: GitRepo | None,
        agent: AgentPaths,
        scope: ReadScope | None = None,
        committed: CommittedLedgers | None = None,
    ) -> None:
        self.runtime = runtime
        self.repo = repo
        self.agent = agent
        self.scope = scope = scope or ReadScope()
        lookups = scope.lookups or Lookups()
        # the decided files this process knows unchanged since their commit
        self.committed = committed or CommittedLedgers()
        self.first_versions = lookups.first_versions  # shared by the agents of a pass
        self.written_whole = scope.written_whole
        self.only_items = scope.only_items
        # each file to decide as it was when read; None when gone
        self.read_as: dict[Path, FileState | None] = {}
        # decided files changed since their commit: shared by the agents of a pass
        self.changed_decisions = lookups.changed_decisions or ChangedDecisions(
            runtime, [agent.agent_id]
        )
        # the files this pass decides, and their drafts' commits (read at most once, together)
        self.draft_adds = lookups.draft_adds or DraftAdds(runtime)  # shared, where given
        self.deciding: set[ItemFile] = set()
        self._drafts_in_git: dict[str, bytes] | None = None
        self.reviewing = _review_reading(runtime, repo, agent, self.committed)

    def again(self) -> AgentReader:
        """A reader of the same folder that asks git anew (HEAD moved under this one)."""
        scope = replace(self.scope, lookups=None)
        return AgentReader(self.runtime, self.repo, self.agent, scope, self.committed)

    def read(self, ledger: Sequence[DecisionRecord]) -> tuple[AgentView, Scan]:
        """Everything the planner needs; items to decide only while feedback.json is usable."""
        scan = self.scan()
        if self.only_items is not None:
            others = [f for f in scan.files if f.item_id not in self.only_items]
            scan.left_waiting = len(agentplan.to_decide(others, ledger))
            scan.files = [f for f in scan.files if f.item_id in self.only_items]
        kept = remembered(self.runtime, self.agent)
        drafts = [f for f in agentplan.queued_drafts(scan.files) if f.path.name not in kept]
        deleted = deleted_feedback(self.repo, self.agent, self.rel)
        feedback = self._feedback_from(deleted)
        undecided = agentplan.to_decide(scan.files, ledger) if isinstance(feedback, list) else []
        undecided = self._settled(self._not_in_history(undecided, scan), scan)
        revised = self._revised(scan.files, ledger) if isinstance(feedback, list) else []
        revised = self._settled(revised, scan)
        self.read_as = {f.path: file_state(f.path) for f in [*undecided, *revised]}
        self.deciding = {*undecided, *revised}
        from_queue = self._from_curation_queue(ledger, scan, feedback)
        snippet_left = self.committed.differs_from_head(self.runtime, self.repo, self.agent.prompt)
        reviewed = self.reviewing.read(scan.files) if self.reviewing else NO_REVIEWS
        moved = [self._with_first_draft(self._with_first_seen(r)) for r in read_items(undecided)]
        waiting = _waiting(self.reviewing, scan, feedback, reviewed.records, self._draft_commits)
        self.read_as.update((read.file.path, file_state(read.file.path)) for read in waiting)
        view = AgentView(
            agent=self.agent,
            root=self.runtime.workspace.root,
            files=scan.files,
            ledger=ledger,
            drafts=self._drafts_to_commit(drafts, scan),
            undecided=[*moved, *from_queue],
            revised=self._read_revised(revised),
            feedback=feedback,
            feedback_exists=self.agent.feedback.exists(),
            feedback_deleted=deleted if isinstance(feedback, list) else None,
            ledger_exists=self.agent.decisions.exists(),
            uncommitted=uncommitted_files(self.repo, self.agent, self.rel)
            if drafts or undecided
            else frozenset(),
            snippet=current_snippet(self.agent),
            snippet_committed=not snippet_left,  # by a killed pass
            author=self._author() if undecided or from_queue or revised else None,
            author_first=self.runtime.signed_in,
            forgotten=forgotten_identities(read_forgotten_text(self.agent.forgotten)),
            reviews=reviewed.records,
            unfinished_reviews=reviewed.unfinished,
            edited_in_review=reviewed.edited,
            waiting=waiting,
        )
        return view, scan

    # --- item files ---------------------------------------------------------------------------
    def scan(self) -> Scan:
        scan = Scan()
        for folder in ALL_ITEM_FOLDERS:
            directory = self.agent.folder(folder)
            if not directory.is_dir():
                continue
            if (outside := outside_data(self.runtime.workspace, directory)) is None:
                scan.files.extend(self._scan_folder(folder, directory, scan))
            else:
                scan.warnings.append(f"{self.rel(directory)}: {outside}; ignored")
        return scan

    def _scan_folder(self, folder: str, directory: Path, scan: Scan) -> Iterator[ItemFile]:
        """The item files of one folder, from one listing: a plain file costs no stat of its
        own (thousands of drafts in a big site's queue/)."""
        with os.scandir(directory) as listing:
            entries = sorted(listing, key=_NAME)
        problems.clear_listed_orphans(directory, (entry.name for entry in entries))
        for entry in entries:
            if not _item_name(entry, directory, folder, scan):
                continue
            stem, path = entry.name[: entry.name.rindex(".")], child_path(directory, entry.name)
            if not (_plain_file(entry) or self._usable(entry, path, scan)):
                continue
            if not is_valid_id(stem):
                message, hint = _bad_name(stem)
                scan.problems.append(BadFile(path, message, hint))
                continue
            yield ItemFile(folder, stem, path)

    def _usable(self, entry: os.DirEntry[str], path: Path, scan: Scan) -> bool:
        """A plain file, or a link to one inside the workspace; a warning says why else."""
        scan.links = scan.links or entry.is_symlink()
        not_an_item = listed_item_problem(self.runtime.workspace, entry)
        if not_an_item is not None:
            scan.warnings.append(f"{self.rel(path)}: {not_an_item}; ignored")
            return False
        return path.is_file() if entry.is_symlink() else True

    def _not_in_history(self, files: Sequence[ItemFile], scan: Scan) -> list[ItemFile]:
        """The files still to decide; those whose decision commit git holds (their ledger line
        was lost: decisions.jsonl deleted or damaged) go to `scan.restored` instead.

        Only a file that HEAD holds where it stands can have been decided: a new decision's
        file has just been moved there, and costs no look at history.
        """
        undecided = []
        for item_file, record in zip(files, self.decisions_in_history(files), strict=True):
            if record is None:
                undecided.append(item_file)
            else:
                scan.restored.append(record)
        return undecided

    def decisions_in_history(self, files: Sequence[ItemFile]) -> list[DecisionRecord | None]:
        """For each decided file, the ledger line of its decision commit when HEAD holds the
        file where it stands and history has that commit (a line lost from decisions.jsonl);
        else None. History is read once for all of them (app/curation/decisionhistory.py)."""
        repo = self.repo
        if repo is None:
            return [None] * len(files)
        history = DecisionHistory(repo, self.agent.agent_id)
        named = [(item_file, self.rel(item_file.path)) for item_file in files]
        return [
            _decision_of(item_file, history, file) if repo.file_at_head(file) is not None else None
            for item_file, file in named
        ]

    def _from_curation_queue(
        self, ledger: Sequence[DecisionRecord], scan: Scan, feedback: object
    ) -> list[ReadItem]:
        """A webhouse queue's decided entries (app/curation/webhousequeue.py), as items to
        decide, while feedback.json is usable; none in a command's pass (no command moves one).

        The queue file is always in HEAD: an entry the ledger names no line for (decisions.jsonl
        lost or damaged) is looked up in history and restored if decided; one whose ledger line
        says otherwise (rejected, now approved) is a new decision.
        """
        if not isinstance(feedback, list) or self.only_items is not None:
            return []
        found = webhousequeue.decisions_for(self.runtime, self.agent, ledger)
        scan.problems += found.problems
        scan.warnings += found.warnings
        scan.settling += found.settling
        known = {record.item for record in ledger}
        unknown = [read.file for read in found.items if read.file.item_id not in known]
        still = set(self._not_in_history(unknown, scan))
        return [r for r in found.items if r.file.item_id in known or r.file in still]

    def _revised(
        self, files: Sequence[ItemFile], ledger: Sequence[DecisionRecord]
    ) -> list[ItemFile]:
        """The files in approved/ and rejected/ that the ledger records there (decided) and that
        changed since git last committed them."""
        if self.repo is None:
            return []
        latest = decisions.latest_states(ledger)
        both = set(agentplan.in_both_folders(files))
        decided = [
            f
            for f in files
            if f.folder in DECISION_FOLDERS
            and f.item_id not in both
            and f.item_id in latest
            and latest[f.item_id].state == f.folder
        ]
        unchanged = self.committed.unchanged_among(
            self.runtime, self.repo, [f.path for f in decided]
        )
        unknown = [f for f in decided if f.path not in unchanged]
        if not unknown:
            return []  # as this process committed them or last saw them: no need to ask git
        changed = self.changed_decisions.of(self.repo, self.agent)
        vouched = [
            (f.path, self.changed_decisions.vouched(f.path, self.rel(f.path))) for f in unknown
        ]
        self.committed.remember_all(self.runtime, self.repo, vouched)
        return [f for f in unknown if self.rel(f.path) in changed]

    def _read_revised(self, files: Sequence[ItemFile]) -> list[ReadItem]:
        """The revised files whose content differs from HEAD's, each with the item as
        committed and the draft as first seen."""
        if self.repo is None:
            return []
        return [self._with_first_seen(read) for read in revised_items(self.repo, self.rel, files)]

    def _settled(self, files: Sequence[ItemFile], scan: Scan) -> list[ItemFile]:
        settle_s = self.runtime.settings.daemon.settle_ms / 1000
        return settled_files(files, scan, settle_s, self.written_whole)

    def _drafts_to_commit(self, drafts: list[ItemFile], scan: Scan) -> list[ReadItem]:
        """The drafts to commit and remember. A new draft is committed whole, as a decision is
        taken: it waits to settle. One git holds already (a clone's) is remembered as git first
        had it, however fresh its file."""
        read = self._with_first_versions(read_items(drafts))
        new = [each.file for each in read if each.first_version is None]
        settled = set(self._settled(new, scan))
        return [each for each in read if each.first_version is not None or each.file in settled]

    # --- drafts and originals -----------------------------------------------------------------
    def _with_first_versions(self, drafts: list[ReadItem]) -> list[ReadItem]:
        """For drafts git already holds (a fresh clone), the version first committed; drafts
        that are new keep none. The snapshot then never holds a curator's edits."""
        if self.repo is None or all(read.item is None for read in drafts):
            return drafts
        wanted = [self.rel(read.file.path) for read in drafts if read.item is not None]
        shared = self.first_versions
        first = shared.of(self.repo, self.agent, wanted) if shared is not None else None
        if first is None:
            queue = self.rel(self.agent.queue)
            first = _first_versions_alone(self.repo, self.draft_adds, queue, wanted)
        return [
            replace(read, first_version=first.get(self.rel(read.file.path)))
            if read.item is not None
            else read
            for read in drafts
        ]

    def _with_first_seen(self, read: ReadItem) -> ReadItem:
        """An approved item gets the draft as first seen in queue/: its content when it has no
        originalContentData (corrections are diffed against it), and its fields outside the
        content when it may have no corrections (a warning names those the curator changed)."""
        item = read.item
        if item is None or read.file.folder != "approved":
            return read
        if item.original is not None and items.diff_content(item.original, item.content):
            return read  # corrections: nothing to warn of, nothing more to read
        first = self._first_seen(read.file)
        if first is None:
            return read
        content = first.content if item.original is None else None
        return replace(read, first_seen=content, first_outside=items.outside_content(first))

    def _with_first_draft(self, read: ReadItem) -> ReadItem:
        """Where several curators review each draft, a moved file as first drafted."""
        return (
            self.reviewing.with_first_draft(read, self._draft_commits) if self.reviewing else read
        )

    def _first_seen(self, item_file: ItemFile) -> items.Item | None:
        """The draft as first seen in queue/: the local snapshot, else its draft commit (an
        item decided before this machine saw it in queue/, or a snapshot a crash left empty)."""
        for suffix in _suffixes_starting_with(item_file.path.suffix):
            queue_path = self.agent.queue / (item_file.item_id + suffix)
            for data in self._first_copies(item_file, queue_path):
                try:
                    return items.parse_item(data, suffix, item_file.item_id)
                except FeedbackdError:
                    continue
        return None

    def _first_copies(self, item_file: ItemFile, queue_path: Path) -> Iterator[bytes]:
        """The snapshot of a draft, then (only if that one is not usable) its draft commit."""
        snapshot = snapshot_path(self.runtime, self.agent, queue_path.name)
        if snapshot.exists():
            yield read_file_bytes(snapshot)
        data = self._draft_commits(item_file).get(self.rel(queue_path))
        if data is not None:
            yield data

    def _draft_commits(self, asking: ItemFile) -> dict[str, bytes]:
        """The draft commit of every item this pass decides (under each name its draft may
        have had), read together, from the drafts' commits kept from pass to pass (DraftAdds):
        a burst of approvals costs no history walk, and no git process per item."""
        if asking not in self.deciding:
            self.deciding.add(asking)
            self._drafts_in_git = None
        if self._drafts_in_git is None:
            wanted = [
                self.rel(self.agent.queue / (item_file.item_id + suffix))
                for item_file in self.deciding
                if item_file.folder == "approved" or self.reviewing is not None
                for suffix in ITEM_SUFFIXES
            ]
            repo = self.repo
            self._drafts_in_git = self.draft_adds.of(repo, wanted) if repo else {}
        return self._drafts_in_git

    # --- feedback, snippet, curator -----------------------------------------------------------
    def feedback(self) -> list[FeedbackEntry] | FeedbackdError:
        """The agent's feedback, or why feedback.json cannot be used (decisions then wait).

        A feedback.json deleted but not committed reads as HEAD holds it: a deletion is no
        way to wipe lessons (that is `feedbackd forget AGENT --all`, or a committed deletion),
        and the next decision must not write a feedback.json holding its own entries only.
        """
        return self._feedback_from(deleted_feedback(self.repo, self.agent, self.rel))

    def _feedback_from(self, deleted: str | None) -> list[FeedbackEntry] | FeedbackdError:
        """feedback(), given HEAD's feedback.json if gone from disk (git asked once a pass)."""
        try:
            if deleted is not None:
                return parse_feedback(deleted)
            entries = read_feedback(self.agent.feedback)
        except FeedbackdError as error:
            return error
        problems.clear(self.agent.feedback)
        return entries

    def _author(self) -> Person | FeedbackdError:
        """Who decides an item that names no curator (--curator, $FEEDBACKD_CURATOR, git's)."""
        try:
            return choose_author(None, self.runtime, self.workspace_user())
        except FeedbackdError as error:
            return error

    def workspace_user(self) -> Person | None:
        return self.repo.user_identity() if self.repo is not None else None

    def rel(self, path: Path) -> str:
        return self.runtime.workspace.relative(path)


def _waiting(
    reviewing: ReviewReading | None,
    scan: Scan,
    feedback: list[FeedbackEntry] | FeedbackdError,
    reviews: Sequence[ReviewRecord] | FeedbackdError,
    draft_commits: Callable[[ItemFile], Mapping[str, bytes]],
) -> list[ReadItem]:
    """Drafts in review/ whose reviews are all in (reviewread.py), while feedback.json and
    reviews.jsonl are usable."""
    if reviewing is None or not isinstance(feedback, list) or isinstance(reviews, FeedbackdError):
        return []
    return reviewing.waiting(scan.files, reviews, draft_commits)


def revised_items(
    repo: GitRepo, rel: Callable[[Path], str], files: Sequence[ItemFile]
) -> list[ReadItem]:
    """The revised files whose content differs from HEAD's (not only their times), each with
    the item as committed."""
    committed: dict[Path, bytes | None] = {}
    for item_file in files:
        data = repo.file_at_head(rel(item_file.path))
        try:
            if data is not None and read_file_bytes(item_file.path) == data:
                continue  # touched, not changed
        except OSError:
            continue  # moved on meanwhile: the next pass looks at it where it is
        committed[item_file.path] = data
    return [
        replace(read, decided_as=_item_or_none(committed[read.file.path], read.file))
        for read in read_items([f for f in files if f.path in committed])
    ]


def _review_reading(
    runtime: Runtime, repo: GitRepo | None, agent: AgentPaths, committed: CommittedLedgers
) -> ReviewReading | None:
    """What to read for reviews, where several curators review each draft (review.required ≥ 2:
    a rejection's draft commit is then read too, for the draft as first drafted)."""
    if runtime.settings.review.required_for(agent.agent_id) < 2:
        return None
    return ReviewReading(runtime, repo, agent, committed, partial(snapshot_path, runtime, agent))


def _decision_of(item_file: ItemFile, history: DecisionHistory, file: str) -> DecisionRecord | None:
    """The ledger line of the commit that decided the item `file` (relative to the workspace)."""
    event = "approve" if item_file.folder == "approved" else "reject"
    last = history.newest(event, item_file.item_id)
    if last is None:
        return None  # committed by hand (or again, after a revert): decided now
    state: State = "approved" if event == "approve" else "rejected"
    return new_record(
        item_file.item_id,
        state,
        parse_iso(last.date),
        random_chars,
        file=file,
        curator=last.curator,
        fields=last.fields,
    )


def _first_versions_alone(
    repo: GitRepo, adds: DraftAdds, queue: str, wanted: list[str]
) -> dict[str, bytes]:
    """The first versions of the drafts of one agent's queue/ that git tracks."""
    untracked = set(repo.listings.untracked_paths(queue))
    return adds.of(repo, [path for path in wanted if path not in untracked], together=True)


def deleted_feedback(
    repo: GitRepo | None, agent: AgentPaths, rel: Callable[[Path], str]
) -> str | None:
    """HEAD's feedback.json when the file is gone from disk and the deletion is not committed;
    None otherwise (git is asked only when the file is missing)."""
    if repo is None or os.path.lexists(agent.feedback):
        return None
    committed = repo.file_at_head(rel(agent.feedback))
    return None if committed is None else committed.decode("utf-8", errors="replace")


def uncommitted_files(
    repo: GitRepo | None, agent: AgentPaths, rel: Callable[[Path], str]
) -> frozenset[Path]:
    """The agent's feedback.json, decisions.jsonl and snippet that HEAD lacks (without git:
    those not on disk). One that is on disk but not in HEAD was left by a pass killed before
    its commit. With them, the `.gitkeep` of approved/ and rejected/ when those folders are
    missing beside a queue/ (a new agent made with `mkdir -p _data/agents/NEW/queue`)."""
    files = agent.feedback_files
    keeps = frozenset(
        agent.folder(folder) / KEEP_FILE
        for folder in DECISION_FOLDERS
        if agent.queue.is_dir() and not os.path.lexists(agent.folder(folder))
    )
    if repo is None:
        return keeps | {path for path in files if not path.exists()}
    at_head = repo.file_ids_at_head([rel(path) for path in files])
    return keeps | {path for path in files if at_head[rel(path)] is None}


def current_snippet(agent: AgentPaths) -> str | None:
    """The snippet as it stands. Generated text: bytes that are not UTF-8 are simply written
    anew."""
    if not agent.prompt.exists():
        return None
    return read_file_bytes(agent.prompt).decode("utf-8", errors="replace")


def settled_files(
    files: Sequence[ItemFile], scan: Scan, settle_s: float, written_whole: frozenset[Path]
) -> list[ItemFile]:
    """The files unchanged for daemon.settle_ms (or written whole by a command); the others wait
    in `scan.settling`.

    A writer may still be busy with a file that already reads well (half a YAML or Markdown
    file often does): a draft is first committed, and a decision taken, only once its file
    has stopped changing. A half-written draft committed would be taken for the original,
    and the rest of its text for a correction nobody made.
    """
    now, settled = time.time(), []
    for item_file in files:
        changed = problems.changed_at(item_file.path, now)
        if item_file.path in written_whole or now >= changed + settle_s:
            settled.append(item_file)
        else:
            scan.settling.append((item_file.path, changed + settle_s))
    return settled


def _plain_file(entry: os.DirEntry[str]) -> bool:
    """True for a plain file, which the listing itself says on most file systems: the common
    case, asked first and without a stat (a big site's queues hold thousands)."""
    try:
        return entry.is_file(follow_symlinks=False)
    except OSError:
        return False  # _usable says why


def read_items(files: Sequence[ItemFile]) -> list[ReadItem]:
    """Each file read as an item, or with the error that says why it cannot be."""
    found = []
    for item_file in files:
        try:
            item = read_item(item_file.path)
        except FeedbackdError as error:
            found.append(ReadItem(item_file, error=error))
            continue
        problems.clear(item_file.path)
        found.append(ReadItem(item_file, item))
    return found


def _item_or_none(data: bytes | None, item_file: ItemFile) -> items.Item | None:
    """The item these bytes hold; None when there are none or they cannot be read."""
    if data is None:
        return None
    try:
        return items.parse_item(data, item_file.path.suffix, item_file.item_id)
    except FeedbackdError:
        return None


def _item_name(entry: os.DirEntry[str], directory: Path, folder: str, scan: Scan) -> bool:
    """True for an entry named as an item. A plain file of another format (a draft saved as
    `qi-307.txt`) is a problem, explained beside it once settled, as an unreadable draft is."""
    if not entry.name.startswith(".") and entry.name.endswith(ITEM_SUFFIXES):
        return True
    wrong = other_format(entry.name, folder)
    if wrong is not None and _plain_file(entry):
        message, hint = wrong
        path = child_path(directory, entry.name)
        scan.problems.append(BadFile(path, message, hint))
    return False


def _bad_name(stem: str) -> tuple[str, str]:
    return (
        f"item id {shown_name(stem)} (the file name) is not a valid id",
        "rename the file to 1-128 characters from A-Z a-z 0-9 . _ -, starting with a letter"
        " or digit",
    )


def _suffixes_starting_with(first: str) -> list[str]:
    return [first, *(suffix for suffix in ITEM_SUFFIXES if suffix != first)]
