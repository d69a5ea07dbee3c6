"""The snippet whose examples fit a task (SPEC section 13, `prompt --for`): what
`feedbackd prompt AGENT --for FILE|-`, `POST /api/agents/{id}/prompt` and
`load_feedback_for_prompt(..., for_text=TEXT)` call. It reads feedback.json and the text of the
item each lesson came from; core/curation/relevance.py ranks them, and core/curation/prompts.py
writes section 5's snippet with the lessons chosen. Nothing is written: the snippet on disk
stays section 5's.

A process that answers many tasks (the HTTP API, an agent runner using the Python API) keeps,
for the few agents asked last, the BM25 index of their lessons while the lessons read the same,
and each item's text while its file is unchanged: a task is then scored without reading every
item again.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
from feedbackd.core.workspace import ITEM_SUFFIXES, AgentPaths, Workspace
from feedbackd.edges.files import read_file_bytes
from feedbackd.loop.workspace.agentfiles import existing_agent, read_feedback, read_item
from feedbackd.loop.workspace.itemfiles import listed_item_problem
from feedbackd.loop.workspace.runtime import Runtime, discover_root

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
    agent = existing_agent(runtime, agent_id)
    settings: PromptSettings = runtime.settings.prompt
    notes = settings.max_rejections if settings.include_rejections else 0
    chosen = relevant(runtime.workspace, agent, task, settings.max_examples, notes)
    text = render_snippet(chosen, settings)
    return text + "\n" if text and not text.endswith("\n") else text


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
    entries = read_feedback(agent.feedback)
    kept = _kept_for(agent.root)
    found = lessons(entries, kept.item_texts(workspace, agent, _items_of(entries)))
    return choose(found, kept.index(found).scores(task), examples, notes)


def _items_of(entries: Iterable[FeedbackEntry]) -> set[str]:
    return {entry.queueItemId for entry in entries if entry.queueItemId}


@dataclass
class _Kept:
    """What is kept of one agent between calls."""

    files: dict[str, tuple[FileKey, str]] = field(default_factory=dict)
    texts: tuple[str, ...] | None = None
    built: Index | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def item_texts(
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
        try:
            info = entry.stat()
        except OSError:  # gone since the listing
            return None, ""
        key = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        with self.lock:
            kept = self.files.get(entry.path)
        if kept is not None and kept[0] == key:
            return kept
        try:
            return key, item_text(read_item(Path(entry.path)))
        except FeedbackdError:  # a bad file: the daemon reports it; its lessons still count
            return key, ""

    def index(self, found: Lessons) -> Index:
        """The BM25 index of these lessons: the one kept while their texts are the same."""
        with self.lock:
            if self.built is not None and self.texts == found.texts:
                return self.built
        built = Index(found.texts)
        with self.lock:
            self.texts, self.built = found.texts, built
        return built


_agents: OrderedDict[Path, _Kept] = OrderedDict()
_agents_lock = threading.Lock()


def _kept_for(root: Path) -> _Kept:
    with _agents_lock:
        kept = _agents.get(root)
        if kept is None:
            kept = _agents[root] = _Kept()
        _agents.move_to_end(root)
        while len(_agents) > _KEEP_AGENTS:
            _agents.popitem(last=False)
        return kept


def _listing(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError:  # no such folder (yet), or not one
        return []
