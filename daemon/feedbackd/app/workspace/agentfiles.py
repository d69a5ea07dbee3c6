"""An agent folder's files on disk: feedback.json, the decisions ledger, memory, items, and a
provider's SOUL.md, price ledger and skill lessons.

The formats are the core's (pure parsing and rendering); this module only reads and writes them,
atomically, through the file-system edge.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from feedbackd.app.workspace.itemfiles import refuse_outside_agent
from feedbackd.app.workspace.runtime import Runtime, discover_root
from feedbackd.core.curation.decisions import DecisionRecord, parse_ledger
from feedbackd.core.curation.feedback import FeedbackEntry, dump_feedback, parse_feedback
from feedbackd.core.curation.itemedits import with_content_edits, with_rejection_feedback
from feedbackd.core.curation.items import (
    MAX_ITEM_BYTES,
    Item,
    ItemError,
    check_size,
    normalised,
    parse_item,
)
from feedbackd.core.curation.prompts import examples
from feedbackd.core.errors import FeedbackdError, InvalidFeedback, NotFound
from feedbackd.core.formats.jsonl import parse_jsonl
from feedbackd.core.ids import MEMORY_RECORD, is_valid_id, new_id
from feedbackd.core.ratings.memory import (
    ENTITIES,
    MemoryRecord,
    latest_per_subject,
    memory_file,
    new_record,
    rental_memories,
)
from feedbackd.core.ratings.priceledger import PriceRecord, parse_price_ledger
from feedbackd.core.ratings.records import Rating
from feedbackd.core.ratings.soul import Soul, parse_soul
from feedbackd.core.ratings.storedratings import AnyRating
from feedbackd.core.wording import closest
from feedbackd.core.workspacepaths import AgentPaths, Workspace
from feedbackd.edges.files import (
    NotAPlainFile,
    agent_ids,
    append_line,
    atomic_write_bytes,
    atomic_write_text,
    open_plain_file,
    read_file_bytes,
    read_file_text,
)
from feedbackd.edges.parsedfiles import ParsedFiles
from feedbackd.edges.randomness import random_chars

# The agents read last: a pass, and the pass its own commit wakes, find feedback.json as it
# was. 1 MiB: twenty files of 200 entries (the default cap), about 6 MB parsed.
_FEEDBACK: ParsedFiles[tuple[FeedbackEntry, ...]] = ParsedFiles(keep=8, max_bytes=1 << 20)

log = logging.getLogger("feedbackd")


def existing_agent(runtime: Runtime, agent_id: str) -> AgentPaths:
    """The agent's folder; NotFound (naming the closest agent) when it has none: a command on a
    mistyped agent must neither look like success nor create a new agent. A folder that is a
    symbolic link leading outside the workspace is none (the daemon ignores it too)."""
    agent = refuse_outside_agent(runtime, agent_id)
    if agent.root.is_dir():
        return agent
    where = runtime.workspace.relative(runtime.workspace.agents_dir)
    close = closest_agent(runtime, agent_id)
    new = f"a new agent starts with its folder: mkdir {where}/{agent_id}"
    # The guess is part of the sentence and the way on in the one bracket every hint has.
    if close:
        raise NotFound(f"no agent {agent_id} in {where}/: did you mean {close}?", hint=new)
    raise NotFound(f"no agent {agent_id} in {where}/", hint=f"`ls {where}` lists them; {new}")


def closest_agent(runtime: Runtime, agent_id: str) -> str | None:
    """The agent folder whose name is closest to a mistyped `agent_id`; None when none is."""
    return closest(agent_id, agent_ids(runtime.workspace))


def new_provider_warning(runtime: Runtime, provider: str) -> str | None:
    """What a rating of a provider without a folder says when a known agent's name is close:
    rating a new provider is no error, but a typo would silently start a second agent."""
    if refuse_outside_agent(runtime, provider).root.is_dir():
        return None
    close = closest_agent(runtime, provider)
    return f"{provider} is a provider nobody rated before: did you mean {close}?" if close else None


def unknown_agent(runtime: Runtime, agent_id: str) -> dict[str, Any]:
    """What a report on an agent without a folder adds, where AgentBnB's answer for a provider
    never seen must stay (its cold-start score): `known` false and the `closest` agent, so
    that a script tells a typo from a provider not rated yet. Nothing for an agent that has
    a folder: its report keeps exactly the keys SPEC lists."""
    if refuse_outside_agent(runtime, agent_id).root.is_dir():
        return {}
    return {"known": False, "closest": closest_agent(runtime, agent_id)}


def read_feedback(path: Path) -> list[FeedbackEntry]:
    if not path.exists():
        return []
    try:
        return list(_FEEDBACK.read(path, _parse_feedback_bytes))
    except OSError as exc:  # a folder of that name, no permission, ...
        raise InvalidFeedback(
            f"feedback.json cannot be read: {exc.strerror or exc}",
            hint="make it a readable file: move whatever stands there away, then restore the"
            " last good version from git",
        ) from None


def _parse_feedback_bytes(data: bytes) -> tuple[FeedbackEntry, ...]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidFeedback(
            f"feedback.json is not UTF-8 (byte {exc.start})",
            hint="restore the last good version from git",
        ) from None
    return tuple(parse_feedback(text))


def write_feedback(path: Path, entries: Sequence[FeedbackEntry]) -> None:
    atomic_write_text(path, dump_feedback(entries))


def read_ledger(path: Path) -> list[DecisionRecord]:
    if not path.exists():
        return []
    return parse_ledger(read_file_bytes(path).decode("utf-8", errors="replace"), str(path))


def read_forgotten_text(path: Path) -> str:
    """`forgotten.jsonl` as it stands ("" when there is none)."""
    if not path.exists():
        return ""
    return read_file_bytes(path).decode("utf-8", errors="replace")


def read_soul(agent: AgentPaths) -> tuple[str, Soul] | None:
    """SOUL.md's text and meaning; None (with a warning when it is unreadable) otherwise."""
    try:
        text = read_file_bytes(agent.soul).decode("utf-8")
        return text, parse_soul(text)
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("%s: cannot read it (%s); prices left as they are", agent.soul, exc)
    except FeedbackdError as exc:
        log.warning("%s: %s; prices left as they are (%s)", agent.soul, exc.message, exc.hint)
    return None


def read_price_ledger(agent: AgentPaths) -> list[PriceRecord]:
    path = agent.price_ledger
    try:
        text = read_file_text(path, "replace")
    except FileNotFoundError:
        return []
    return parse_price_ledger(text, str(path))


def read_lessons(agent: AgentPaths, skill: str) -> str | None:
    """The skill's lessons file `prompt/skills/{skill}.md`; None when there is none."""
    return _read_text(agent.skill_prompt(skill))


def read_item(path: Path) -> Item:
    """Read and check one item file; the size is checked before the file is read in full."""
    return parse_item(_read_limited(path), path.suffix, path.stem, path)


def _read_limited(path: Path) -> bytes:
    try:
        with open_plain_file(path) as handle:
            check_size(os.fstat(handle.fileno()).st_size)
            # The file may grow between stat and read: read one byte past the limit to notice.
            data = handle.read(MAX_ITEM_BYTES + 1)
    except (IsADirectoryError, NotAPlainFile):
        raise ItemError(
            "this is not a regular file", hint="item files must be plain files"
        ) from None
    except FileNotFoundError:
        raise NotFound(
            f"item file {path.parent.name}/{path.name} does not exist",
            hint="it may have been moved or deleted",
        ) from None
    except OSError as exc:
        raise ItemError(
            f"the file cannot be read: {exc.strerror or exc}",
            hint="check the file's permissions and that it is a file, not a folder",
        ) from None
    check_size(len(data))
    return data


def set_rejection_feedback(path: Path, notes: str) -> None:
    """Set the item's rejectionFeedback, keeping everything else; written atomically."""
    data = _read_limited(path)
    atomic_write_bytes(path, with_rejection_feedback(data, path, notes))


def set_content_fields(path: Path, edits: dict[str, str]) -> None:
    """Write a curator's edits into the item's content fields; written atomically."""
    if edits:
        atomic_write_bytes(path, with_content_edits(_read_limited(path), path, edits))


def load_feedback_for_prompt(
    agent_id: str, limit: int = 5, workspace: str | Path | None = None
) -> list[dict[str, Any]]:
    """The agent's last `limit` correction examples as `{"original", "corrected", "field"}` dicts.

    For agent runners that build their own prompt instead of reading prompt/feedback.md: the
    values read as the snippet shows them (no trailing newline of a Markdown body).
    """
    root = discover_root(str(workspace) if workspace is not None else None)
    entries = read_feedback(Workspace(root).agent(agent_id).feedback)
    return [
        {
            "original": normalised(entry.original or ""),
            "corrected": normalised(entry.corrected or ""),
            "field": entry.field,
        }
        for entry in examples(entries, limit)
    ]


def add_memory(
    workspace: Workspace,
    agent: str,
    category: str,
    importance: float,
    content: str,
    *,
    subject: str | None,
    source: str,
    now: datetime,
) -> Path:
    """Append a new record to the agent's memory; return the file written."""
    record_id = new_id(MEMORY_RECORD, now, random_chars)
    record = new_record(
        category, importance, content, subject=subject, source=source, now=now, record_id=record_id
    )
    return append_memory(workspace, agent, record)


def has_memory_line(path: Path, record_id: str) -> bool:
    """True when the memory file holds a line with that id (written as feedbackd writes it)."""
    return f'"id": {json.dumps(record_id)}' in (_read_text(path) or "")


def append_memory(workspace: Workspace, agent: str, record: MemoryRecord) -> Path:
    path = memory_file(workspace, agent, record.category)
    append_line(path, record.line())
    return path


def write_rental_memories(
    workspace: Workspace, r: Rating, now: datetime, earlier: Sequence[AnyRating] = ()
) -> list[Path]:
    """Append the rental's records to the requester's memory; return the files written."""
    return [append_memory(workspace, agent, rec) for agent, rec in rental_memories(r, now, earlier)]


def list_memory(workspace: Workspace, agent: str, category: str | None) -> list[MemoryRecord]:
    """An agent's memory, highest importance first, then newest; one profile per subject."""
    folder = workspace.agent(agent).memory
    if category is not None:
        paths = [memory_file(workspace, agent, category)]
    else:
        paths = sorted(p for p in folder.glob("*.jsonl") if is_valid_id(p.stem))
    records: list[MemoryRecord] = []
    for path in paths:
        found = list(_read_memory(workspace, path))
        records.extend(latest_per_subject(found) if path.stem == ENTITIES else found)
    return sorted(records, key=lambda rec: (rec.importance, rec.createdAt), reverse=True)


def _read_memory(workspace: Workspace, path: Path) -> Iterable[MemoryRecord]:
    """Valid records of a memory file; bad lines are skipped with a warning naming them."""
    try:
        text = read_file_text(path, "replace")
    except (FileNotFoundError, IsADirectoryError):
        return
    except NotAPlainFile as error:
        log.warning("%s: skipped: %s", workspace.relative(path), error.strerror)
        return

    def of_this_file(line: str) -> MemoryRecord:
        record = MemoryRecord.model_validate_json(line)
        if record.category != path.stem:
            raise ValueError(f"category {record.category}")
        return record

    def bad(number: int, reason: str) -> None:
        log.warning("%s, line %d: skipped: %s", workspace.relative(path), number, reason)

    for _, record in parse_jsonl(text, of_this_file, bad):
        yield record


def _read_text(path: Path) -> str | None:
    """The file's text; None when there is none, or a pipe stands in its place (rewritten
    whole when feedbackd writes it next)."""
    try:
        return read_file_text(path, "replace")
    except (FileNotFoundError, NotAPlainFile):
        return None
