"""The prompt snippet an agent reads on its next run (pure rendering), and the loader API."""

from __future__ import annotations

from collections.abc import Sequence

from feedbackd.core.config import PromptSettings
from feedbackd.core.curation.feedback import FeedbackEntry

EXAMPLES_HEADING = "## Learn from past corrections"
REJECTIONS_HEADING = "## Things to avoid (from past curator rejections)"
REJECTIONS_FOOTER = "Read these carefully — outputs that ignore them will be rejected again."
ELLIPSIS = "…"


def examples(entries: Sequence[FeedbackEntry], limit: int) -> list[FeedbackEntry]:
    """The last `limit` usable corrections/edits, in chronological order."""
    usable = [entry for entry in entries if entry.is_example]
    return usable[-limit:] if limit > 0 else []


def rejection_notes(entries: Sequence[FeedbackEntry], limit: int) -> list[str]:
    notes = [
        " ".join(entry.notes.split())
        for entry in entries
        if entry.type == "rejection" and entry.notes and entry.notes.strip()
    ]
    return notes[-limit:] if limit > 0 else []


def render_snippet(entries: Sequence[FeedbackEntry], settings: PromptSettings) -> str:
    """The text of prompt/feedback.md; empty when there is nothing to learn from."""
    sections = []
    chosen = examples(entries, settings.max_examples)
    if chosen:
        sections.append(_render_examples(chosen, settings))
    if settings.include_rejections:
        notes = rejection_notes(entries, settings.max_rejections)
        if notes:
            sections.append(_render_rejections(notes))
    return "\n".join(sections)


def _render_examples(chosen: Sequence[FeedbackEntry], settings: PromptSettings) -> str:
    blocks = []
    for number, entry in enumerate(chosen, start=1):
        label = (
            f"Example {number} ({entry.field}):"
            if settings.show_field and entry.field
            else (f"Example {number}:")
        )
        original, corrected = shorten_pair(
            entry.original or "", entry.corrected or "", settings.max_example_chars
        )
        blocks.append(f"{label}\nOriginal: {original}\nCorrected: {corrected}\n")
    return f"{EXAMPLES_HEADING}\n" + "\n".join(blocks)


def _render_rejections(notes: Sequence[str]) -> str:
    lines = [f"{number}. {note}" for number, note in enumerate(notes, start=1)]
    return "\n".join([REJECTIONS_HEADING, *lines, REJECTIONS_FOOTER]) + "\n"


def shorten_pair(original: str, corrected: str, limit: int) -> tuple[str, str]:
    """Cut long values to a window around their first difference, so whole articles stay out."""
    start = _first_difference(original, corrected)
    return _window(original, start, limit), _window(corrected, start, limit)


def _first_difference(left: str, right: str) -> int:
    for index, (a, b) in enumerate(zip(left, right, strict=False)):
        if a != b:
            return index
    return min(len(left), len(right))


def _window(value: str, difference: int, limit: int) -> str:
    if len(value) <= limit:
        return value
    begin = max(0, min(difference - limit // 4, len(value) - limit))
    end = begin + limit
    text = value[begin:end]
    if begin > 0:
        text = ELLIPSIS + text[1:]
    if end < len(value):
        text = text[:-1] + ELLIPSIS
    return text
