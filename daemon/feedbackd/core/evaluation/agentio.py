"""What an agent command reads and prints in `eval` and `bisect` (SPEC section 14), and the
command built in for trying them without a model.

The command reads one JSON object on standard input, `{"agent", "item", "input", "snippet",
"draft"}`, and prints its version of the item: the content fields as a JSON object, or for a
Markdown item the Markdown text (front matter and body). `builtin:apply-lessons` replaces each
content field of the draft equal to an example's original (same field) by its corrected value,
example by example, oldest first.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from feedbackd.core.curation.exportrows import render_content
from feedbackd.core.curation.items import parse_item
from feedbackd.core.errors import FeedbackdError, UsageError

BUILTIN = "builtin:apply-lessons"
MAX_ANSWER_BYTES = 1024 * 1024  # an answer is an item: items are at most 1 MiB


@dataclass(frozen=True)
class Example:
    """One example of a snippet, whole (the text may shorten a long value)."""

    field: str | None
    original: str
    corrected: str


@dataclass(frozen=True)
class Task:
    """One item as the command is asked to write it."""

    agent: str
    item: str
    format: str  # json, yaml or md
    input: str
    draft: dict[str, Any]  # the content fields as the agent first wrote them
    approved: dict[str, Any]  # the content fields as the curator approved them


@dataclass(frozen=True)
class Lessons:
    """What the agent would read: the snippet's text, and its examples as values."""

    text: str
    examples: tuple[Example, ...]


NO_LESSONS = Lessons("", ())


class BadAnswer(ValueError):
    """An answer that does not parse; the message says why."""


def split_command(line: str) -> list[str]:
    """A command line split as a shell would (no shell runs it); a usage error when empty or
    unbalanced."""
    try:
        argv = shlex.split(line)
    except ValueError as error:
        raise UsageError(
            f"the agent command {line!r} does not split into words: {error}",
            hint="quote it as a shell would, e.g. python3 'my agent.py'",
        ) from None
    if not argv:
        raise UsageError(
            "no agent command to run",
            hint=f"set eval.command in feedbackd.yaml, or pass --command (e.g. {BUILTIN})",
        )
    return argv


def draft_text(task: Task) -> Any:
    """The draft as the command reads it: an object, or Markdown text for a Markdown item."""
    return render_content(task.draft, "md") if task.format == "md" else task.draft


def request(task: Task, lessons: Lessons) -> str:
    """The JSON object the command reads on standard input."""
    value = {
        "agent": task.agent,
        "item": task.item,
        "input": task.input,
        "snippet": lessons.text,
        "draft": draft_text(task),
    }
    return json.dumps(value, ensure_ascii=False)


def answer_key(command: str, task: Task, lessons: Lessons) -> str:
    """The key an answer is kept under: (command line, item, input, draft, snippet text)."""
    parts = [command, task.agent, task.item, task.input, draft_text(task), lessons.text]
    text = json.dumps(parts, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def parse_answer(text: str, item_format: str) -> dict[str, Any]:
    """The content fields of the command's answer; BadAnswer when it does not parse."""
    if len(text.encode("utf-8", errors="surrogatepass")) > MAX_ANSWER_BYTES:
        raise BadAnswer("printed more than 1 MiB")
    if item_format == "md":
        return markdown_content(text)
    try:
        value = json.loads(text)
    except ValueError as error:
        raise BadAnswer(f"printed something that is not JSON ({error}): {_start(text)}") from None
    if not isinstance(value, dict):
        raise BadAnswer(f"must print the content fields as a JSON object; got {_start(text)}")
    return value


def markdown_content(text: str) -> dict[str, Any]:
    """The content fields of Markdown text: front matter and body, or all body without it."""
    if not text.startswith("---"):
        return {"body": text}
    try:
        return parse_item(text.encode("utf-8", errors="surrogatepass"), ".md", "answer").content
    except FeedbackdError as error:
        raise BadAnswer(f"printed Markdown that does not read: {error.message}") from None


def _start(text: str) -> str:
    shown = " ".join(text.split())
    return repr(shown if len(shown) <= 80 else shown[:79] + "…")


def apply_lessons(draft: Mapping[str, Any], examples: Sequence[Example]) -> dict[str, Any]:
    """`builtin:apply-lessons`: for every example, oldest first, each string field of the draft
    equal to its original (same field; an example with no field, any field) becomes its
    corrected value."""
    content = json.loads(json.dumps(draft))  # a deep copy of plain data
    for example in examples:
        _apply(content, example, "")
    return content  # type: ignore[no-any-return]


def _apply(node: dict[str, Any], example: Example, prefix: str) -> None:
    for key, value in node.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            _apply(value, example, f"{name}.")
        elif value == example.original and example.field in (None, name):
            node[key] = example.corrected
