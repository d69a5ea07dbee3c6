"""The snippet whose examples fit a task (SPEC section 13, `prompt --for`): what
`feedbackd prompt AGENT --for FILE|-`, `POST /api/agents/{id}/prompt` and
`load_feedback_for_prompt(..., for_text=TEXT)` call. It reads feedback.json and the text of the
item each lesson came from; core/curation/relevance.py ranks them, and core/curation/prompts.py
writes section 5's snippet with the lessons chosen. Nothing is written: the snippet on disk
stays section 5's.

A process that answers many tasks (the HTTP API, an agent runner using the Python API) keeps,
for the few agents asked last, their lessons and the BM25 index of them while feedback.json and
the item folders are unchanged, and each item's text while its file is unchanged: a task is then
scored without reading feedback.json's entries or any item again.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from feedbackd.app.workspace.agentfiles import existing_agent, read_feedback, read_item
from feedbackd.app.workspace.itemfiles import listed_item_problem
from feedbackd.app.workspace.runtime import Runtime, discover_root
from feedbackd.core.config import PromptSettings
from feedbackd.core.curation.feedback import FeedbackEntry
from feedbackd.core.curation.prompts import render_snippet
from feedbackd.core.curation.relevance import (
    MAX_TASK_BYTES,
    Index,
    Lessons,
    check_task_size,
    choose,
    item_text,
    lessons,
    task_text,
)
from feedbackd.core.errors import FeedbackdError, InvalidItem
from feedbackd.core.lru import BoundedLRU
from feedbackd.core.workspacepaths import ITEM_SUFFIXES, AgentPaths, Workspace
from feedbackd.edges.files import read_file_bytes

# Where a lesson's item is looked for, in this order: decided first, as a lesson comes from a
# decision; an item moved back to queue/ is a draft again, but still the item it came from.
_ITEM_FOLDERS = ("approved", "rejected", "queue")
_KEEP_AGENTS = 4
# A file as its inode, size and times show it (ctime too: a rewrite cannot set it back).
FileKey = tuple[int, int, int, int]


def task_of(argument: str, read_input: Callable[[int], bytes]) -> str:
    """The task `--for` names: `-` for what `read_input` gives (standard input), else a file.
    InvalidItem naming the file when it cannot be read or parsed, or is over 1 MiB."""
    if argument == "-":
        return task_text(read_input(MAX_TASK_BYTES + 1), None)
    path = Path(argument)
    try:
        data = read_file_bytes(path, MAX_TASK_BYTES)
    except OSError as error:  # none there, a folder, a pipe, no permission
        raise InvalidItem(
            f"{argument}: the file cannot be read: {error.strerror or error}",
            hint="give a readable file, or - to read the task from standard input",
        ) from None
    return task_text(data, path)


def prompt_for(runtime: Runtime, agent_id: str, task: str) -> str:
    """The agent's snippet as section 5 writes it, with the examples (and, with
    prompt.include_rejections, the notes) most relevant to the task, the most relevant last."""
    return snippet_for(runtime, agent_id, task)[0]


def snippet_for(runtime: Runtime, agent_id: str, task: str) -> tuple[str, list[FeedbackEntry]]:
    """prompt_for's text, and the entries it shows (`prompt --for --json`)."""
    agent = existing_agent(runtime, agent_id)
    settings: PromptSettings = runtime.settings.prompt
    notes = settings.max_rejections if settings.include_rejections else 0
    chosen = relevant(runtime.workspace, agent, task, settings.max_examples, notes)
    text = render_snippet(chosen, settings)
    return (text + "\n" if text and not text.endswith("\n") else text), chosen


def examples_for(
    agent_id: str, limit: int, workspace: str | Path | None, task: str
) -> list[dict[str, Any]]:
    """`load_feedback_for_prompt(agent_id, limit, workspace, for_text=task)`: the `limit`
    examples most relevant to the task, the most relevant last."""
    if not isinstance(task, str):
        raise TypeError(f"for_text must be a string, not {type(task).__name__}")
    check_task_size(len(task.encode("utf-8", errors="surrogatepass")), "for_text")
    root = Workspace(discover_root(str(workspace) if workspace is not None else None))
    chosen = relevant(root, root.agent(agent_id), task, limit, 0)
    return [
        {"original": entry.original, "corrected": entry.corrected, "field": entry.field}
        for entry in chosen
    ]


def relevant(
    workspace: Workspace, agent: AgentPaths, task: str, examples: int, notes: int
) -> list[FeedbackEntry]:
    """The examples, then the notes, most relevant to the task: each part least relevant first."""
    found, index = _kept_for(agent.root).lessons(workspace, agent)
    return choose(found, index.scores(task), examples, notes)


@dataclass
class _Kept:
    """What is kept of one agent between calls: its lessons and their index, while feedback.json
    holds the same bytes and no item folder has changed (a file added, removed or replaced, as
    an editor's save does); and each item's text, while its file is unchanged."""

    seen: tuple[bytes, tuple[FileKey | None, ...]] | None = None
    found: Lessons | None = None
    built: Index | None = None
    files: dict[str, tuple[FileKey, str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def lessons(self, workspace: Workspace, agent: AgentPaths) -> tuple[Lessons, Index]:
        # What is seen is taken before anything is read: a change while this call reads is
        # seen as a change by the next one.
        seen = (_digest(agent.feedback), tuple(_key_of(agent.root / f) for f in _ITEM_FOLDERS))
        with self.lock:
            if seen == self.seen and self.found is not None and self.built is not None:
                return self.found, self.built
        entries = read_feedback(agent.feedback)
        found = lessons(entries, self._item_texts(workspace, agent, _items_of(entries)))
        with self.lock:
            before, built = self.found, self.built
        if built is None or before is None or before.texts != found.texts:
            built = Index(found.texts)
        with self.lock:
            self.seen, self.found, self.built = seen, found, built
        return found, built

    def _item_texts(
        self, workspace: Workspace, agent: AgentPaths, wanted: set[str]
    ) -> dict[str, str]:
        """The text of each wanted item found in the agent's folders ("" when it cannot be
        read: its lessons are then matched on their own text)."""
        found: dict[str, str] = {}
        files: dict[str, tuple[FileKey, str]] = {}
        for folder in _ITEM_FOLDERS:
            for entry in _listing(agent.root / folder):
                stem, suffix = os.path.splitext(entry.name)
                if stem in found or stem not in wanted or suffix.lower() not in ITEM_SUFFIXES:
                    continue
                if listed_item_problem(workspace, entry) is not None:
                    continue
                key, text = self._text_of(entry)
                if key is not None:
                    files[entry.path] = (key, text)
                    found[stem] = text
        with self.lock:
            self.files = files  # files no longer there are forgotten
        return found

    def _text_of(self, entry: os.DirEntry[str]) -> tuple[FileKey | None, str]:
        key = _key_of(Path(entry.path))
        if key is None:  # gone since the listing
            return None, ""
        with self.lock:
            kept = self.files.get(entry.path)
        if kept is not None and kept[0] == key:
            return kept
        try:
            return key, item_text(read_item(Path(entry.path)))
        except FeedbackdError:  # a bad file: the daemon reports it; its lessons still count
            return key, ""


def _items_of(entries: Iterable[FeedbackEntry]) -> set[str]:
    return {entry.queueItemId for entry in entries if entry.queueItemId}


def _digest(path: Path) -> bytes:
    """feedback.json's bytes, as a digest (the bytes decide, as for every parsed file kept)."""
    try:
        return hashlib.blake2b(read_file_bytes(path), digest_size=16).digest()
    except OSError:  # none yet; or unreadable, which reading it then explains
        return b""


def _key_of(path: Path) -> FileKey | None:
    try:
        info = os.stat(path)
    except OSError:  # none there (now)
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


_agents: BoundedLRU[Path, _Kept] = BoundedLRU(max_items=_KEEP_AGENTS)
_agents_lock = threading.Lock()


def _kept_for(root: Path) -> _Kept:
    with _agents_lock:
        kept = _agents.get(root)
        if kept is None:
            kept = _Kept()
            _agents.put(root, kept)
        return kept


def _listing(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError:  # no such folder (yet), or not one
        return []
