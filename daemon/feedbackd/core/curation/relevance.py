"""Which past lessons fit the task at hand (`prompt --for`, SPEC section 13): lexical relevance
between a task's text and each lesson of the agent, and the choice of the snippet's examples and
notes by it. Pure: the texts come in, the chosen entries go out.

Relevance is BM25 (the Lucene variant: k1 1.5, b 0.75, an idf that is never negative) over
words: runs of letters and digits, case folded, and each character of the scripts written
without spaces (Chinese, Japanese), which have no words to split on; English stop words do not
count. The scoring is bm25s's, which keeps the index as sparse arrays: once built, it scores a
task of a few hundred words against 10,000 lessons in milliseconds, where a walk through
dictionaries in Python takes twenty times longer. It needs numpy and nothing else, downloads
nothing and reads no file; only the commands that rank import this module, so the daemon and
every other command start without numpy.

A lesson with no word in common with the task scores 0; among lessons of equal score the newer
comes first, so a task that matches nothing gets the last examples, as the plain snippet has.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np
import numpy.typing as npt
from bm25s.stopwords import STOPWORDS_EN

from feedbackd.core.curation.feedback import FeedbackEntry
from feedbackd.core.curation.items import (
    FORMATS,
    MAX_ITEM_BYTES,
    Item,
    ItemError,
    decode_text,
    flatten_strings,
    item_from_object,
    load_json_value,
    parse_item,
)
from feedbackd.core.errors import FeedbackdError, InvalidItem
from feedbackd.core.formats.jsontext import json_kind, refuse_unknown_keys
from feedbackd.core.ids import is_valid_id

MAX_TASK_BYTES = MAX_ITEM_BYTES
# The id of a draft that names none (given on standard input, or in a file whose name is no id).
STAND_IN_ID = "draft"
STANDARD_INPUT = "standard input"
# Each lesson's relevance to a task, in the lessons' order.
Scores = npt.NDArray[np.float64]
K1 = 1.5
B = 0.75
# Kana and CJK ideographs, a word each: these scripts put no spaces between words.
_NO_SPACES = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD = re.compile(rf"[{_NO_SPACES}]|[^\W_{_NO_SPACES}]+")
# Lucene's English stop words ("the", "a", "of", ... 33 of them): nearly every text has them, so
# a lesson that shares only these with the task has no overlap, and recency orders it.
_STOP_WORDS = frozenset(STOPWORDS_EN)


def words(text: str) -> list[str]:
    """The words relevance compares, in order (repeats kept: a task that says "chicken" five
    times is about chicken more than one that says it once)."""
    return [word for word in _WORD.findall(text.casefold()) if word not in _STOP_WORDS]


def has_notes(entry: FeedbackEntry) -> bool:
    """A rejection whose notes the snippet can show (as prompts.rejection_notes takes them)."""
    return entry.type == "rejection" and bool(entry.notes and entry.notes.strip())


@dataclass(frozen=True)
class Lessons:
    """The entries a snippet can show (usable examples, rejections with notes), oldest first,
    each with the text it is matched on: its original, corrected and notes, then the text of
    the item it came from; and which of them are examples, which notes."""

    entries: tuple[FeedbackEntry, ...]
    texts: tuple[str, ...]
    examples: tuple[int, ...]
    notes: tuple[int, ...]


def lessons(entries: Sequence[FeedbackEntry], item_texts: Mapping[str, str]) -> Lessons:
    """The lessons among `entries` (feedback.json's order); `item_texts` holds the text of each
    item by id, where it could be read."""
    shown = tuple(entry for entry in entries if entry.is_example or has_notes(entry))
    return Lessons(
        shown,
        tuple(lesson_text(entry, item_texts) for entry in shown),
        tuple(n for n, entry in enumerate(shown) if entry.is_example),
        tuple(n for n, entry in enumerate(shown) if not entry.is_example),
    )


def lesson_text(entry: FeedbackEntry, item_texts: Mapping[str, str]) -> str:
    item = item_texts.get(entry.queueItemId or "", "")
    return "\n".join(part for part in (entry.original, entry.corrected, entry.notes, item) if part)


def item_text(item: Item) -> str:
    """An item's text: its content fields' string values, nested objects' included."""
    return "\n".join(value for value in flatten_strings(item.content).values() if value)


class Index:
    """BM25 over a fixed list of texts; built once, it scores any number of tasks."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.size = len(texts)
        corpus = [words(text) for text in texts]
        self._bm25: bm25s.BM25 | None = None
        # bm25s divides by the mean length: a corpus without a single word has nothing to match.
        if any(corpus):
            self._bm25 = bm25s.BM25(method="lucene", k1=K1, b=B, dtype="float64")
            self._bm25.index(corpus, show_progress=False)

    def scores(self, task: str) -> Scores:
        """Each text's relevance to the task, in the order of the texts; 0 for no overlap."""
        if self._bm25 is None:
            return np.zeros(self.size)
        ids = self._bm25.get_tokens_ids(words(task))
        if not ids:
            return np.zeros(self.size)
        scores: Scores = self._bm25.get_scores_from_ids(ids)
        return scores


def most_relevant(scores: Scores, candidates: Sequence[int], limit: int) -> list[int]:
    """The `limit` candidates (positions, oldest first) of highest score, the newer first among
    equal scores; returned least relevant first, so that the most relevant comes last, next to
    the task."""
    if limit <= 0 or not candidates:
        return []
    positions = np.asarray(candidates, dtype=np.int64)
    # Ascending by score, then by position (lexsort's last key is the first): the last `limit`.
    order = np.lexsort((positions, scores[positions]))
    chosen: list[int] = positions[order[-limit:]].tolist()
    return chosen


def choose(
    found: Lessons, scores: Scores, max_examples: int, max_notes: int
) -> list[FeedbackEntry]:
    """The examples, then the rejections, to show: each part least relevant first. Given to
    prompts.render_snippet, they make section 5's snippet with these lessons in this order."""
    picked = most_relevant(scores, found.examples, max_examples)
    picked += most_relevant(scores, found.notes, max_notes)
    return [found.entries[n] for n in picked]


# ---------------------------------------------------------------------------------------------
# The task: plain text, or a draft whose content fields are the text


def task_text(data: bytes, file: Path | None) -> str:
    """The text of what `--for` names: the bytes of a file, or of standard input (no file).

    An item file (.json, .yaml, .yml; .md with front matter) is read as an item file is, its
    content fields being the text; any other file is plain text, and so is Markdown without
    front matter. Standard input is a JSON item when it starts with `{` (it has no file name, so
    the id it writes is its own), plain text otherwise. InvalidItem naming the file when it is
    over 1 MiB, not UTF-8, or an item that cannot be read."""
    name = STANDARD_INPUT if file is None else str(file)
    try:
        check_task_size(len(data), name)
        text = decode_text(data)
        if file is None:
            return _text_on_input(text, name)
        fmt = FORMATS.get(file.suffix.lower())
        if fmt is None or (fmt == "md" and text.split("\n", 1)[0].rstrip() != "---"):
            return text
        # A task is no draft: the id it writes need not be its file's name.
        task = parse_item(data, file.suffix, _id_or_stand_in(file.stem), own_id=True)
        return item_text(task)
    except ItemError as error:
        raise InvalidItem(f"{name}: {error.message}", hint=error.hint) from None


def check_task_size(size: int, name: str) -> None:
    if size > MAX_TASK_BYTES:
        raise InvalidItem(
            f"{name} is over 1 MiB ({MAX_TASK_BYTES:,} bytes)",
            hint="give the task or the draft itself, at most 1 MiB of it",
        )


def _text_on_input(text: str, name: str) -> str:
    if not text.lstrip().startswith("{"):
        return text
    # Text that starts with `{` and is valid JSON is an object.
    document: dict[str, object] = load_json_value(text)
    return task_of_object(document, name)


def task_of_object(document: dict[str, object], name: str) -> str:
    """The text of a JSON object given as the task: `{"text": "..."}`, or an item object (one
    with contentData), whose id, if it writes one, is its own."""
    try:
        if "contentData" in document:
            return item_text(item_from_object(document, _written_id(document), None))
        refuse_unknown_keys(document, ("text",))
        text = document.get("text")
        if not isinstance(text, str):
            raise InvalidItem(
                f"text must be a string, not {json_kind(text)}"
                if "text" in document
                else "there is no text",
                hint='send {"text": "the task"}, or an item object with contentData',
            )
        check_task_size(len(text.encode("utf-8", errors="surrogatepass")), "the text")
        return text
    except FeedbackdError as error:
        raise InvalidItem(f"{name}: {error.message}", hint=error.hint) from None


def _written_id(document: dict[str, object]) -> str:
    written = document.get("id")
    if isinstance(written, str | int) and not isinstance(written, bool):
        return str(written)
    return STAND_IN_ID  # none, or of a wrong type, which the item's own check then names


def _id_or_stand_in(file_id: str) -> str:
    return file_id if is_valid_id(file_id) else STAND_IN_ID
