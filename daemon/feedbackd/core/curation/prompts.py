"""The prompt snippet an agent reads on its next run (pure rendering), the loader API, and
where each of its lessons came from (`feedbackd why`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from feedbackd.core.commitmsg import LogEntry, entry_body
from feedbackd.core.config import PromptSettings
from feedbackd.core.curation.feedback import FeedbackEntry
from feedbackd.core.curation.items import normalised

EXAMPLES_HEADING = "## Learn from past corrections"
REJECTIONS_HEADING = "## Things to avoid (from past curator rejections)"
REJECTIONS_FOOTER = "Read these carefully — outputs that ignore them will be rejected again."
ELLIPSIS = "…"
# The numbered lines _render_examples and _render_rejections write, each section's by its key
# in snippet_lessons: a reader that links them (the panel) matches what is written.
LESSON_LINES = {
    "examples": re.compile(r"Example ([0-9]+)(?: \(.*\))?:"),
    "avoid": re.compile(r"([0-9]+)\. .*"),
}


def examples(entries: Sequence[FeedbackEntry], limit: int) -> list[FeedbackEntry]:
    """The last `limit` usable corrections/edits, in chronological order."""
    usable = [entry for entry in entries if entry.is_example]
    return usable[-limit:] if limit > 0 else []


def rejections(entries: Sequence[FeedbackEntry], limit: int) -> list[FeedbackEntry]:
    """The last `limit` rejections with a note, in chronological order."""
    usable = [
        entry
        for entry in entries
        if entry.type == "rejection" and entry.notes and entry.notes.strip()
    ]
    return usable[-limit:] if limit > 0 else []


def rejection_notes(entries: Sequence[FeedbackEntry], limit: int) -> list[str]:
    return [" ".join((entry.notes or "").split()) for entry in rejections(entries, limit)]


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
            normalised(entry.original or ""),
            normalised(entry.corrected or ""),
            settings.max_example_chars,
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


# --- where each lesson came from ------------------------------------------------------------------
# The events whose commit adds an entry of each type: a decision, a decided file edited again
# (`revise`), `feedbackd record`. A `forget` commit tells the entry too, but takes it away.
ADDING_EVENTS = {
    "correction": ("approve", "revise", "record"),
    "rejection": ("reject", "revise", "record"),
    "edit": ("record",),
}
WHY_KEYS = ("section", "n", "entry_id", "item", "field", "curator", "commit", "at")


def snippet_lessons(
    entries: Sequence[FeedbackEntry], settings: PromptSettings
) -> list[tuple[str, int, FeedbackEntry]]:
    """(section, number, entry) of each example and note the snippet shows, in its order: the
    selection render_snippet makes, so the two never disagree."""
    chosen = examples(entries, settings.max_examples)
    shown = [("examples", n, entry) for n, entry in enumerate(chosen, start=1)]
    if settings.include_rejections:
        notes = rejections(entries, settings.max_rejections)
        shown += [("avoid", n, entry) for n, entry in enumerate(notes, start=1)]
    return shown


def lesson_sources(
    entries: Sequence[FeedbackEntry], settings: PromptSettings, history: Iterable[LogEntry]
) -> list[dict[str, Any]]:
    """Each lesson of the snippet with the decision commit that added its entry, from the
    agent's learning history (newest first, as `git log` gives it): the newest commit whose
    trailers name the entry's item, whose event adds such an entry and whose body tells the
    entry (a decision's body leaves out what an earlier one recorded). No clock is compared, so
    commit dates that disagree with the entries' times mislead nothing. None when no commit
    does: an entry written by hand, or history that no longer holds its commit."""
    by_item: dict[str | None, list[LogEntry]] = {}
    for commit in history:
        by_item.setdefault(commit.item, []).append(commit)
    lines = []
    for section, number, entry in snippet_lessons(entries, settings):
        found = _adding_commit(entry, by_item.get(entry.queueItemId, ()))
        values = (section, number, entry.id, entry.queueItemId, entry.field)
        source = (found.curator, found.commit) if found else (None, None)
        lines.append(dict(zip(WHY_KEYS, (*values, *source, entry.createdAt), strict=True)))
    return lines


def _adding_commit(entry: FeedbackEntry, commits: Iterable[LogEntry]) -> LogEntry | None:
    """The newest of `commits` (one item's, newest first) that added `entry`. After a `git
    revert` of a decision and the item decided again the same way, both commits tell the entry:
    the newer one added what feedback.json holds now."""
    told = entry_body(entry)
    events = ADDING_EVENTS.get(entry.type, ())
    for commit in commits:
        if commit.event in events and told and told[0] in commit.changes:
            return commit
    return None
