"""`eval --examples relevant` (SPEC section 14): the lessons of a revision chosen for each item as
section 13's `prompt --for` chooses them, with the item's INPUT and DRAFT as the task. Each lesson
is matched on its own original, corrected and notes (the texts of the items they came from are
not read back from the history). Its ranking loads numpy: the command line imports this module
only when `--examples relevant` is asked for."""

from __future__ import annotations

from collections.abc import Sequence

from feedbackd.app.commands.evalitems import LessonsFor, snippet_lessons
from feedbackd.core.config import PromptSettings
from feedbackd.core.curation.feedback import FeedbackEntry
from feedbackd.core.curation.items import flatten_strings
from feedbackd.core.curation.relevance import Index, choose, lessons
from feedbackd.core.evaluation.agentio import Lessons, Task


def relevant_lessons(entries: Sequence[FeedbackEntry], settings: PromptSettings) -> LessonsFor:
    """`prompt --for` at the revision, the task's INPUT and DRAFT as the text (each lesson is
    matched on its own original, corrected and notes)."""
    found = lessons(entries, {})
    index = Index(found.texts)
    notes = settings.max_rejections if settings.include_rejections else 0

    def lessons_for(task: Task) -> Lessons:
        text = "\n".join([task.input, *flatten_strings(task.draft).values()])
        chosen = choose(found, index.scores(text), settings.max_examples, notes)
        return snippet_lessons(chosen, settings)

    return lessons_for
