"""One pass over one agent folder: look at disk and the ledger, do what is missing.

Every step is idempotent, so a pass killed at any line is finished by the next one: feedback
entries are de-duplicated, the ledger says what is decided, and ledger lines that never reached
a commit are committed by the next pass.
"""

from __future__ import annotations

import logging
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from feedbackd.core import commitmsg, decisions, items
from feedbackd.core.commitmsg import Person
from feedbackd.core.decisions import DecisionRecord, State
from feedbackd.core.errors import FeedbackdError, InvalidFeedback, InvalidItem
from feedbackd.core.feedback import FeedbackEntry, merge_new, new_entry
from feedbackd.core.items import Correction, Item
from feedbackd.core.prompts import render_snippet
from feedbackd.core.timeutil import utcnow
from feedbackd.core.workspace import DECISION_FOLDERS, ITEM_SUFFIXES, is_valid_id
from feedbackd.edges.files import atomic_write_bytes, atomic_write_text, read_file_bytes
from feedbackd.edges.git import GitRepo
from feedbackd.loop import problems, recovery
from feedbackd.loop.agentfiles import (
    append_record,
    read_feedback,
    read_item,
    read_ledger,
    write_feedback,
)
from feedbackd.loop.problems import Problem
from feedbackd.loop.recording import Change
from feedbackd.loop.recovery import CommittedLedgers
from feedbackd.loop.repo import open_repo_for_writing
from feedbackd.loop.report import Report
from feedbackd.loop.runtime import Runtime, choose_author

log = logging.getLogger("feedbackd")


@dataclass(frozen=True)
class ItemFile:
    folder: str
    item_id: str
    path: Path


@dataclass(frozen=True)
class Decision:
    """A decided item turned into feedback entries and the text of its commit."""

    file: ItemFile
    item: Item
    entries: list[FeedbackEntry]
    corrections: list[Correction]
    author: Person


class AgentReconciler:
    """One pass over one agent folder."""

    def __init__(
        self,
        runtime: Runtime,
        repo: GitRepo | None,
        agent_id: str,
        ledgers: CommittedLedgers,
        keep_going: Callable[[], bool] | None = None,
    ) -> None:
        self.runtime = runtime
        self.repo = repo
        self.ledgers = ledgers
        self.keep_going = keep_going or (lambda: True)
        self.agent = runtime.workspace.agent(agent_id)
        self.report = Report()
        self.ledger = read_ledger(self.agent.decisions)

    # --- the pass -----------------------------------------------------------------------------
    def run(self) -> Report:
        if not self.agent.root.is_dir():
            return self.report
        self._commit_recovered()
        files = self._scan()
        self._take_new_drafts(files)
        feedback = self._read_feedback()
        if feedback is not None:
            for item_file in self._undecided(files):
                if not self.keep_going():
                    break  # stopping: the next pass decides the rest
                feedback = self._decide(item_file, feedback)
            self._sync_snippet(feedback)
        return self.report

    def record(self, entry: FeedbackEntry, author: Person | None) -> Report:
        """Append one programmatic entry (`feedbackd record`) and commit it, unless present."""
        feedback = self._read_feedback()
        if feedback is None:
            raise InvalidFeedback(
                f"{self.rel(self.agent.feedback)} is corrupt; nothing was recorded",
                hint="run `feedbackd doctor` to see the last good version in git",
            )
        stored, added = merge_new(feedback, [entry], self.runtime.settings.feedback.max_entries)
        if not added:
            self._warn("the same entry is already recorded; nothing changed")
            return self.report
        write_feedback(self.agent.feedback, stored)
        self._write_snippet(stored)
        self._commit(
            "record",
            commitmsg.record_summary(entry),
            [self.agent.feedback, self.agent.prompt],
            author,
            body=commitmsg.entry_body(entry),
            trailers=commitmsg.record_trailers(entry),
            item=entry.queueItemId,
        )
        return self.report

    # --- looking at disk ----------------------------------------------------------------------
    def _scan(self) -> list[ItemFile]:
        found: list[ItemFile] = []
        for folder in ("queue", *DECISION_FOLDERS):
            directory = self.agent.folder(folder)
            problems.clear_orphans(directory)
            if directory.is_dir():
                found.extend(self._scan_folder(folder, directory))
        return found

    def _scan_folder(self, folder: str, directory: Path) -> Iterator[ItemFile]:
        for path in sorted(directory.iterdir()):
            if path.name.startswith(".") or path.suffix not in ITEM_SUFFIXES:
                continue
            not_an_item = _not_an_item(path)
            if not_an_item is not None:
                self._warn(f"{self.rel(path)}: {not_an_item}; ignored")
                continue
            if path.is_symlink() and not self.runtime.workspace.is_inside(path):
                self._warn(f"{self.rel(path)}: symbolic link leads outside the workspace; ignored")
                continue
            if not path.is_file():
                continue  # removed since the folder was listed
            if not is_valid_id(path.stem):
                message, hint = _bad_name(path.stem)
                self._problem(path, InvalidItem(message, hint=hint))
                continue
            yield ItemFile(folder, path.stem, path)

    def _read(self, item_file: ItemFile) -> Item | None:
        try:
            item = read_item(item_file.path)
        except FeedbackdError as error:
            self._problem(item_file.path, error)
            return None
        problems.clear(item_file.path)
        return item

    def _problem(self, path: Path, error: FeedbackdError) -> None:
        problem = problems.judge(path, error, self.runtime.settings.daemon.settle_ms)
        self.report.problems.append(problem)
        if problem.settled:
            log.warning("%s: %s", self.rel(path), error.message)

    def _read_feedback(self) -> list[FeedbackEntry] | None:
        """The agent's feedback, or None when feedback.json is corrupt (decisions then wait)."""
        try:
            entries = read_feedback(self.agent.feedback)
        except FeedbackdError as error:
            problems.explain(self.agent.feedback, error)
            self.report.problems.append(
                Problem(self.agent.feedback, error.message, error.hint, True, 0.0)
            )
            log.error("%s: %s; decisions wait", self.rel(self.agent.feedback), error.message)
            return None
        problems.clear(self.agent.feedback)
        return entries

    # --- drafts -------------------------------------------------------------------------------
    def _take_new_drafts(self, files: list[ItemFile]) -> None:
        decided_now = {f.item_id for f in files if f.folder in DECISION_FOLDERS}
        unseen = [
            f
            for f in files
            if f.folder == "queue" and f.item_id not in decided_now and self._is_new_draft(f)
        ]
        readable = [f for f in unseen if self._read(f) is not None]
        snapshots = self._first_versions(readable)
        requeued = self._requeued(files, decided_now)
        new = [f for f in readable if snapshots[f] is None]
        if new or requeued:
            for record in requeued:
                append_record(self.agent.decisions, record)
            paths = [f.path for f in new] + [self.agent.decisions] * bool(requeued)
            paths += [path for record in requeued for path in self._decided_path(record)]
            summary = commitmsg.drafts_summary([f.item_id for f in new], [r.item for r in requeued])
            self._commit("draft", summary, paths, None, trailers=())
        # Snapshots last: a draft whose commit failed is still new on the next pass.
        for item_file in readable:
            data = snapshots[item_file] or item_file.path.read_bytes()
            atomic_write_bytes(self._snapshot_path(item_file), data)

    def _is_new_draft(self, item_file: ItemFile) -> bool:
        return not self._snapshot_path(item_file).exists()

    def _first_versions(self, drafts: list[ItemFile]) -> dict[ItemFile, bytes | None]:
        """For drafts git already holds (a fresh clone), the version first committed; None for
        drafts that are new. The snapshot then never holds a curator's edits."""
        if not drafts or self.repo is None:
            return {f: None for f in drafts}
        untracked = set(self.repo.untracked_paths(self.rel(self.agent.queue)))
        return {
            f: None
            if self.rel(f.path) in untracked
            else self.repo.file_at_first_add(self.rel(f.path))
            for f in drafts
        }

    def _snapshot_path(self, item_file: ItemFile) -> Path:
        folder = self.runtime.workspace.state_dir / "snapshots" / self.agent.agent_id
        return folder / item_file.path.name

    def _requeued(self, files: list[ItemFile], decided_now: set[str]) -> list[DecisionRecord]:
        latest = decisions.latest_states(self.ledger)
        queued = {f.item_id for f in files if f.folder == "queue"} - decided_now
        records = []
        for item_id in sorted(queued):
            previous = latest.get(item_id)
            if previous is not None and previous.state != "queued":
                record = decisions.new_record(item_id, "queued", utcnow(), file=previous.file)
                self.ledger.append(record)
                records.append(record)
        return records

    def _decided_path(self, record: DecisionRecord) -> list[Path]:
        """Where the ledger says the item was decided (none for a hand-written record)."""
        return [self.runtime.workspace.root / record.file] if record.file else []

    # --- decisions ----------------------------------------------------------------------------
    def _undecided(self, files: list[ItemFile]) -> list[ItemFile]:
        latest = decisions.latest_states(self.ledger)
        decided = [f for f in files if f.folder in DECISION_FOLDERS]
        both = _in_both_folders(decided)
        for item_id in sorted(both):
            self._warn(
                f"{self.agent.agent_id}/{item_id} is in both approved/ and rejected/: keep one"
            )
        return [
            f
            for f in decided
            if f.item_id not in both
            and (f.item_id not in latest or latest[f.item_id].state != f.folder)
        ]

    def _decide(self, item_file: ItemFile, feedback: list[FeedbackEntry]) -> list[FeedbackEntry]:
        item = self._read(item_file)
        if item is None:
            return feedback
        try:
            decision = self._judge(item_file, item)
        except FeedbackdError as error:
            self._problem(item_file.path, error)
            return feedback
        return self._apply(decision, feedback)

    def _judge(self, item_file: ItemFile, item: Item) -> Decision:
        author = choose_author(item.curator, self.runtime, self._workspace_user())
        now = utcnow()
        if item_file.folder == "rejected":
            notes = item.rejection_feedback or ""
            if not notes:
                self._warn(f"{self.rel(item_file.path)}: rejected without rejectionFeedback")
            entry = new_entry(now, type="rejection", queueItemId=item.item_id, notes=notes)
            return Decision(item_file, item, [entry], [], author)
        corrections = self._corrections(item_file, item)
        entries = [
            new_entry(
                now,
                type="correction",
                queueItemId=item.item_id,
                field=c.field,
                original=c.original,
                corrected=c.corrected,
            )
            for c in corrections
        ]
        return Decision(item_file, item, entries, corrections, author)

    def _corrections(self, item_file: ItemFile, item: Item) -> list[Correction]:
        original = item.original if item.original is not None else self._first_seen(item_file)
        if original is None:
            self._warn(
                f"{self.rel(item_file.path)}: never seen in queue/ and no originalContentData;"
                " approved with no corrections"
            )
            return []
        return items.diff_content(original, item.content)

    def _first_seen(self, item_file: ItemFile) -> dict[str, object] | None:
        """The draft as first seen in queue/: the local snapshot, else its draft commit (an
        item decided before this machine saw it in queue/)."""
        for suffix in _suffixes_starting_with(item_file.path.suffix):
            queue_path = self.agent.queue / (item_file.item_id + suffix)
            snapshot = self._snapshot_path(ItemFile("queue", item_file.item_id, queue_path))
            data = snapshot.read_bytes() if snapshot.exists() else None
            if data is None and self.repo is not None:
                data = self.repo.file_at_first_add(self.rel(queue_path))
            if data is not None:
                try:
                    return items.parse_item(data, suffix, item_file.item_id).content
                except FeedbackdError:
                    continue
        return None

    def _apply(self, decision: Decision, feedback: list[FeedbackEntry]) -> list[FeedbackEntry]:
        stored, added = merge_new(
            feedback, decision.entries, self.runtime.settings.feedback.max_entries
        )
        if added or not self.agent.feedback.exists():
            write_feedback(self.agent.feedback, stored)
        self._write_snippet(stored)
        record = self._record(decision, added)
        append_record(self.agent.decisions, record)
        self.ledger.append(record)
        item = decision.item
        state, corrections = decision.file.folder, decision.corrections
        event, summary = commitmsg.decision_summary(item.item_id, state, corrections)
        self._commit(
            event,
            summary,
            self._decision_paths(decision.file),
            decision.author,
            body=commitmsg.decision_body(state, item.rejection_feedback, corrections),
            trailers=commitmsg.decision_trailers(item.item_id, corrections),
            item=item.item_id,
        )
        return stored

    def _record(self, decision: Decision, added: list[FeedbackEntry]) -> DecisionRecord:
        state: State = "approved" if decision.file.folder == "approved" else "rejected"
        return decisions.new_record(
            decision.item.item_id,
            state,
            utcnow(),
            file=self.rel(decision.file.path),
            curator=str(decision.author),
            fields=[c.field for c in decision.corrections] or None,
            entries=[entry.id for entry in added] or None,
        )

    def _decision_paths(self, item_file: ItemFile) -> list[Path]:
        # Where the item came from is part of its move: queue/, or the other decision folder
        # when the curator changed their mind (an item in both is never decided).
        sources = [
            self.agent.folder(folder) / (item_file.item_id + suffix)
            for folder in ("queue", *DECISION_FOLDERS)
            for suffix in ITEM_SUFFIXES
        ]
        return [*sources, item_file.path, *self._managed_paths()]

    def _managed_paths(self) -> list[Path]:
        return [self.agent.feedback, self.agent.decisions, self.agent.prompt]

    # --- snippet ------------------------------------------------------------------------------
    def _write_snippet(self, entries: Sequence[FeedbackEntry]) -> bool:
        text = render_snippet(entries, self.runtime.settings.prompt)
        # Generated text: whatever stands there unreadable (bytes that are not UTF-8) is
        # simply written anew.
        current = (
            read_file_bytes(self.agent.prompt).decode("utf-8", errors="replace")
            if self.agent.prompt.exists()
            else None
        )
        if current == text:
            return False
        atomic_write_text(self.agent.prompt, text)
        return True

    def _sync_snippet(self, feedback: list[FeedbackEntry]) -> None:
        """Regenerate a snippet that no longer matches feedback.json (settings changed, a pull)."""
        if not self.agent.feedback.exists() and not self.agent.prompt.exists():
            return
        if self._write_snippet(feedback):
            self._commit(
                "sync", "regenerate prompt snippet", [self.agent.prompt], None, trailers=()
            )

    # --- recovery -----------------------------------------------------------------------------
    def _commit_recovered(self) -> None:
        """Commit ledger lines that a killed pass wrote but never committed."""
        if self.repo is None or not self.ledger or self.ledgers.unchanged(self.agent.decisions):
            return
        pending = recovery.not_in_head(
            self.repo,
            self.runtime.workspace,
            self.agent.decisions,
            self.ledger,
            head_ids=_ledger_ids,
            id_of=lambda record: record.id,
        )

        def completed(waiting: dict[Path, list[DecisionRecord]]) -> Change:
            records = waiting[self.agent.decisions]
            paths = [*self._managed_paths()]
            for record in records:
                paths.extend(self._decided_path(record))
                paths.extend(self.agent.queue / (record.item + s) for s in ITEM_SUFFIXES)
            last = records[-1]
            return self._change(
                commitmsg.EVENT_OF_STATE[last.state],
                commitmsg.interrupted_summary([record.item for record in records]),
                paths,
                _curator_of(last),
                trailers=commitmsg.interrupted_trailers(last.item, last.fields),
                item=last.item,
            )

        event = recovery.commit_uncommitted(
            self.runtime,
            self.repo,
            {self.agent.decisions: pending},
            completed,
            ledgers=self.ledgers,
        )
        if event is not None:
            self.report.events.append(event)

    # --- git ----------------------------------------------------------------------------------
    def _commit(
        self,
        event: str,
        summary: str,
        paths: Sequence[Path],
        author: Person | None,
        *,
        body: Sequence[str] = (),
        trailers: Sequence[tuple[str, str]] = (),
        item: str | None = None,
    ) -> None:
        change = self._change(
            event, summary, paths, author, body=body, trailers=trailers, item=item
        )
        recorded = self.ledgers.commit(self.runtime, self.repo, change, [self.agent.decisions])
        if recorded is not None:
            self.report.events.append(recorded)

    def _change(
        self,
        event: str,
        summary: str,
        paths: Sequence[Path],
        author: Person | None,
        *,
        body: Sequence[str] = (),
        trailers: Sequence[tuple[str, str]] = (),
        item: str | None = None,
    ) -> Change:
        return Change(
            event,
            self.agent.agent_id,
            summary,
            paths,
            author or self._workspace_user(),
            item=item,
            body=body,
            trailers=trailers,
        )

    def _workspace_user(self) -> Person | None:
        return self.repo.user_identity() if self.repo is not None else None

    # --- helpers ------------------------------------------------------------------------------
    def rel(self, path: Path) -> str:
        return self.runtime.workspace.relative(path)

    def _warn(self, message: str) -> None:
        self.report.warnings.append(message)
        log.warning("%s", message)


def record_entry(runtime: Runtime, agent_id: str, entry: FeedbackEntry) -> Report:
    with open_repo_for_writing(runtime) as repo:
        reconciler = AgentReconciler(runtime, repo, agent_id, CommittedLedgers())
        author = choose_author(None, runtime, reconciler._workspace_user())
        return reconciler.record(entry, author)


def _ledger_ids(text: str) -> list[str]:
    return [record.id for record in decisions.parse_ledger(text)]


def _curator_of(record: DecisionRecord) -> Person | None:
    try:
        return Person.parse(record.curator) if record.curator else None
    except ValueError:
        return None  # a hand-edited ledger line: the workspace's identity stands in


def _not_an_item(path: Path) -> str | None:
    """Why an entry named like an item cannot be one (None: a plain file, or gone meanwhile).

    A curator who made a folder `qi-1.json` in approved/ hears why nothing happens, and a pipe
    is never opened (reading it would wait for a writer forever).
    """
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "symbolic link to nothing" if path.is_symlink() else None
    except OSError as error:  # a loop of symbolic links, a folder that cannot be searched
        return f"cannot be read ({error.strerror})"
    if stat.S_ISDIR(mode):
        return "a folder, not an item file"
    if not stat.S_ISREG(mode):
        return "not a plain file (a pipe, socket or device)"
    return None


def _bad_name(stem: str) -> tuple[str, str]:
    return (
        f"item id {stem!r} (the file name) is not a valid id",
        "rename the file to 1-128 characters from A-Z a-z 0-9 . _ -, starting with a letter"
        " or digit",
    )


def _in_both_folders(decided: list[ItemFile]) -> set[str]:
    folders: dict[str, set[str]] = {}
    for item_file in decided:
        folders.setdefault(item_file.item_id, set()).add(item_file.folder)
    return {item_id for item_id, where in folders.items() if len(where) > 1}


def _suffixes_starting_with(first: str) -> list[str]:
    return [first, *(suffix for suffix in ITEM_SUFFIXES if suffix != first)]
