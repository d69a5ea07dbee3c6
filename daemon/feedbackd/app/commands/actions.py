"""What the writing commands do: move or amend a curator's item, then run the shared reconcile.

A rating submit's code lives in submitting.py (and is named here too, for the HTTP API), so
that `feedback submit` starts without the curation machinery."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from feedbackd.app.commits.locking import write_lock
from feedbackd.app.curation.agentpass import forget_all_entries, forget_entry, record_entry
from feedbackd.app.reconcile import reconcile_all
from feedbackd.app.report import Report
from feedbackd.app.reviews.reviewmoves import draft_folders, refuse_second_review, settle
from feedbackd.app.workspace.agentfiles import (
    existing_agent,
    read_item,
    read_ledger,
    set_content_fields,
    set_rejection_feedback,
)
from feedbackd.app.workspace.itemfiles import (
    item_file_problem,
    outside_data,
    refuse_linked_folder,
)
from feedbackd.app.workspace.problems import out_of_space
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.curation.decisions import latest_states, parse_ledger
from feedbackd.core.curation.feedback import FeedbackEntry, check_record, new_entry
from feedbackd.core.errors import (
    AlreadyDecided,
    DiskFull,
    FeedbackdError,
    GitError,
    InvalidFeedback,
    InvalidItem,
    NotFound,
    WorkspaceError,
)
from feedbackd.core.formats.jsontext import load_json_object
from feedbackd.core.ids import validate_id
from feedbackd.core.workspacepaths import DECISION_FOLDERS, ITEM_SUFFIXES, AgentPaths
from feedbackd.edges.clock import utcnow
from feedbackd.edges.files import (
    Undo,
    open_plain_file,
    room_left,
)
from feedbackd.edges.randomness import random_chars

log = logging.getLogger("feedbackd")

# A write that failed with less room than this left on the disk failed for want of it, whatever
# the message says (git's "couldn't write '.git/refs/heads/main.lock'" names no reason).
NEARLY_FULL_BYTES = 1 << 20


def find_queued(runtime: Runtime, agent: AgentPaths, item_id: str) -> Path:
    """The draft's file in queue/ (or, where several curators review drafts, in review/ or
    disputed/), read as the daemon reads it: a symbolic link out of the workspace is no draft."""
    validate_id(item_id, "item id")
    folders = draft_folders(runtime, agent)
    for folder in folders:
        refuse_linked_folder(runtime.workspace, folder)
    found = [folder / (item_id + suffix) for folder in folders for suffix in ITEM_SUFFIXES]
    present = [path for path in found if os.path.lexists(path)]
    problems = {path: item_file_problem(runtime.workspace, path) for path in present}
    existing = [path for path in present if problems[path] is None]
    where = "/, ".join(runtime.workspace.relative(folder) for folder in folders)
    # A draft beside its decision (put back by a `git reset`) is no draft: the decision stands.
    _refuse_if_decided(runtime, agent, item_id)
    if not existing:
        hint = f"list the drafts with `ls {runtime.workspace.relative(agent.queue)}`"
        if present:  # only files the daemon ignores: say why
            first = runtime.workspace.relative(present[0])
            raise NotFound(f"{first}: {problems[present[0]]}; ignored", hint=hint)
        raise NotFound(f"no draft {item_id} in {where}/", hint=hint)
    if len(existing) > 1:
        names = ", ".join(runtime.workspace.relative(path) for path in existing)
        raise FeedbackdError(f"{item_id} is in {where}/ more than once ({names})", hint="keep one")
    return existing[0]


def _refuse_if_decided(runtime: Runtime, agent: AgentPaths, item_id: str) -> None:
    """One plain sentence, read alike on a terminal and in the panel: what happened, when, and
    the move that undoes it, with paths relative to the workspace."""
    for folder in DECISION_FOLDERS:
        if outside_data(runtime.workspace, agent.folder(folder)) is not None:
            continue  # a linked folder is ignored: what it holds decides nothing
        for suffix in ITEM_SUFFIXES:
            decided = agent.folder(folder) / (item_id + suffix)
            if decided.is_file():
                when = _decided_at(agent, item_id)
                where = runtime.workspace.relative(decided)
                queue = runtime.workspace.relative(agent.queue)
                raise AlreadyDecided(
                    f"{item_id} was already {folder}{when}; to decide it again, move {where}"
                    f" back to {queue}/"
                )


def _decided_at(agent: AgentPaths, item_id: str) -> str:
    """` on 2026-12-03 at 07:40 UTC` from the ledger, or nothing when it does not say."""
    try:
        record = latest_states(read_ledger(agent.decisions)).get(item_id)
    except OSError:
        return ""
    if record is None or record.state == "queued":
        return ""
    return f" on {record.at[:10]} at {record.at[11:16]} UTC"


def readable(runtime: Runtime, source: Path) -> None:
    """Refuse a draft that cannot be read, naming its file as the daemon, `status` and
    `doctor` name it (relative to the workspace: the HTTP answer shows no path of the disk)."""
    try:
        read_item(source)
    except FeedbackdError as error:
        where = runtime.workspace.relative(source)
        raise type(error)(f"{where}: {error.message}", hint=error.hint) from None


def move_target(runtime: Runtime, source: Path, folder: Path) -> Path:
    """Where source goes in folder; refused before anything is changed when it cannot go: a
    folder that is a symbolic link out of `_data/` is ignored, as the daemon ignores it."""
    refuse_linked_folder(runtime.workspace, folder)
    target = folder / source.name
    if folder.exists() and not folder.is_dir():
        raise WorkspaceError(
            f"{runtime.workspace.relative(folder)} is a file, not a folder",
            hint=f"move that file away: {folder.name}/ must be a folder for the items",
        )
    if target.exists():
        raise InvalidItem(
            f"{runtime.workspace.relative(target)} already exists",
            hint="remove or rename it first",
        )
    return target


def move_item(runtime: Runtime, source: Path, target: Path) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        source.rename(target)
    except OSError as error:
        where = runtime.workspace.relative(target.parent)
        raise WorkspaceError(
            f"cannot move {source.name} to {where}/: {error.strerror or error}",
            hint="check that the folder can be written",
        ) from None


def approve(
    runtime: Runtime, agent_id: str, item_id: str, edits: dict[str, str] | None = None
) -> Report:
    """Approve a queued draft; `edits` (content fields by dotted name) are written into it
    first, so the approval records them as corrections."""
    with write_lock(runtime, index_first=True):
        return _approve(runtime, agent_id, item_id, edits or {})


def _approve(runtime: Runtime, agent_id: str, item_id: str, edits: dict[str, str]) -> Report:
    agent = existing_agent(runtime, agent_id)
    source = find_queued(runtime, agent, item_id)
    target = move_target(runtime, source, agent.approved)
    readable(runtime, source)  # refuse an unreadable draft before moving anything
    refuse_second_review(runtime, agent, item_id, source)
    with _undone_unless_recorded(runtime, agent, item_id, source, target):
        if source.parent == agent.disputed:
            settle(source)  # the curator who settles it decides: the reviews key goes
        if edits:
            # The draft as first seen must be on record before it is edited: a draft nobody
            # has looked at yet is taken now, so its edits show as corrections, not as its
            # original; the curator judged it whole, so it need not settle first.
            report = reconcile_all(
                runtime,
                [agent_id],
                written_whole=frozenset({source}),
                only_items=frozenset({item_id}),
            )
            set_content_fields(source, edits)
            move_item(runtime, source, target)
            return report.followed_by(_decide(runtime, agent_id, item_id, target))
        move_item(runtime, source, target)
        return _decide(runtime, agent_id, item_id, target)


def reject(runtime: Runtime, agent_id: str, item_id: str, notes: str) -> Report:
    """Write the note into a queued draft and reject it."""
    check_notes(notes)
    with write_lock(runtime, index_first=True):
        return _reject(runtime, agent_id, item_id, notes)


def check_notes(notes: str) -> None:
    """A rejection says why: an empty or blank note is refused before anything is moved, from
    every face alike (the panel and the API refuse it too)."""
    if not notes.strip():
        raise InvalidFeedback(
            "notes are required: say why the draft is rejected",
            hint='the note is what the agent learns to avoid, e.g. --notes "too long for the slot"',
        )


def _reject(runtime: Runtime, agent_id: str, item_id: str, notes: str) -> Report:
    agent = existing_agent(runtime, agent_id)
    source = find_queued(runtime, agent, item_id)
    target = move_target(runtime, source, agent.rejected)  # before the notes change the draft
    readable(runtime, source)
    refuse_second_review(runtime, agent, item_id, source)
    with _undone_unless_recorded(runtime, agent, item_id, source, target):
        if source.parent == agent.disputed:
            settle(source)
        set_rejection_feedback(source, notes)
        move_item(runtime, source, target)
        return _decide(runtime, agent_id, item_id, target)


@contextmanager
def _undone_unless_recorded(
    runtime: Runtime, agent: AgentPaths, item_id: str, source: Path, target: Path
) -> Iterator[None]:
    """A decision that fails with nothing of it on record (its step takes back what it wrote
    when its commit is not made) leaves the draft in queue/ as it was, before its notes or
    edits: run again, the command decides it. A failure for want of space says so
    (`disk_full`), whichever write or git command met it."""
    ledger_size = _size(agent.decisions)
    with Undo([source, target]) as draft:  # target: none yet, so it goes
        try:
            yield
        except (FeedbackdError, OSError) as error:
            put_back = not _recorded_since(agent, item_id, ledger_size) and draft.undo()
            if _for_want_of_space(runtime, error):
                raise _disk_full(runtime, agent, item_id, target, error, put_back) from error
            raise


def _for_want_of_space(runtime: Runtime, error: FeedbackdError | OSError) -> bool:
    """A write, or a git command, that failed on a disk with next to no room left."""
    if out_of_space(error):
        return True
    if not isinstance(error, (OSError, GitError, WorkspaceError)):
        return False  # a refusal (a bad edit), not a write
    room = room_left(runtime.workspace.root)
    return room is not None and room < NEARLY_FULL_BYTES


def _disk_full(
    runtime: Runtime,
    agent: AgentPaths,
    item_id: str,
    target: Path,
    error: FeedbackdError | OSError,
    put_back: bool,
) -> DiskFull:
    reason = error.message if isinstance(error, FeedbackdError) else error.strerror or str(error)
    state = target.parent.name
    if put_back:
        queue = runtime.workspace.relative(agent.queue)
        return DiskFull(
            f"the disk is full: {item_id} was not {state}, and is still in {queue}/ as it was"
            f" ({reason})",
            hint="free some space on the workspace's disk and run the command again",
        )
    return DiskFull(
        f"the disk is full: {item_id} is {state} in decisions.jsonl, and its commit waits for"
        f" space ({reason})",
        hint="free some space on the workspace's disk: the daemon (or `feedbackd run --once`)"
        " commits it then",
    )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _recorded_since(agent: AgentPaths, item_id: str, size: int) -> bool:
    """Whether the ledger holds a line for the item written after its first `size` bytes; a
    ledger that cannot be read says yes, so that the draft stays where the decision put it."""
    try:
        with open_plain_file(agent.decisions) as ledger:
            ledger.seek(size)
            added = ledger.read().decode("utf-8")
    except FileNotFoundError:
        return False
    except (OSError, UnicodeDecodeError):
        return True
    return any(record.item == item_id for record in parse_ledger(added))


def _decide(runtime: Runtime, agent_id: str, item_id: str, moved: Path) -> Report:
    """The pass that decides the item this command moved, and nothing else: the rest of the
    agent's pending work is the daemon's (or `run --once`'s), so a command takes one
    decision's time even in the middle of a burst. The command read the item whole and wrote
    it in one piece, so it does not wait for the file to settle."""
    return reconcile_all(
        runtime, [agent_id], written_whole=frozenset({moved}), only_items=frozenset({item_id})
    )


def parse_record(payload: str) -> dict[str, Any]:
    """The `record --json` payload: type plus the fields its type needs."""
    return check_record(load_json_object(payload, "--json"))


def record(runtime: Runtime, agent_id: str, data: dict[str, Any]) -> FeedbackEntry:
    """Record one programmatic entry (checked with check_record) and commit it."""
    entry = build_record_entry(data)
    with write_lock(runtime, index_first=True):
        record_entry(runtime, existing_agent(runtime, agent_id).agent_id, entry)
    return entry


def forget(runtime: Runtime, agent_id: str, entry_id: str, reason: str) -> Report:
    """Take back one lesson of an agent without undoing its decision (`feedbackd forget`)."""
    agent = existing_agent(runtime, agent_id)
    with write_lock(runtime, index_first=True):
        return forget_entry(runtime, agent.agent_id, entry_id, reason)


def forget_all(runtime: Runtime, agent_id: str, reason: str) -> Report:
    """Wipe an agent's lessons on purpose; the decisions stay (`feedbackd forget --all`)."""
    agent = existing_agent(runtime, agent_id)
    with write_lock(runtime, index_first=True):
        return forget_all_entries(runtime, agent.agent_id, reason)


def build_record_entry(data: dict[str, Any]) -> FeedbackEntry:
    try:
        return new_entry(utcnow(), random_chars, **data)
    except ValidationError as exc:
        raise InvalidFeedback(f"invalid entry: {exc.errors()[0]['msg']}") from None
