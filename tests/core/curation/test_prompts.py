"""The prompt snippet's exact text and options (SPEC §5)."""

from __future__ import annotations

from datetime import UTC, datetime

from feedbackd.core.config import PromptSettings
from feedbackd.core.curation.feedback import FeedbackEntry, new_entry
from feedbackd.core.curation.prompts import render_snippet, shorten_pair
from feedbackd.edges.randomness import random_chars

NOW = datetime(2026, 4, 8, tzinfo=UTC)


def fix(field: str, original: str, corrected: str, kind: str = "correction") -> FeedbackEntry:
    return new_entry(
        NOW, random_chars, type=kind, field=field, original=original, corrected=corrected
    )


def rejection(notes: str) -> FeedbackEntry:
    return new_entry(NOW, random_chars, type="rejection", queueItemId="qi-9", notes=notes)


def test_exact_text_of_two_examples() -> None:
    entries = [
        fix("title", "Why TypeScript Generics Matter", "How TypeScript Generics Save You"),
        rejection("too dry"),
        fix("alt", "A serene sunrise", "Snow-covered valley", kind="edit"),
    ]
    assert render_snippet(entries, PromptSettings()) == (
        "## Learn from past corrections\n"
        "Example 1:\n"
        "Original: Why TypeScript Generics Matter\n"
        "Corrected: How TypeScript Generics Save You\n"
        "\n"
        "Example 2:\n"
        "Original: A serene sunrise\n"
        "Corrected: Snow-covered valley\n"
    )


def test_only_the_last_examples_in_chronological_order() -> None:
    entries = [fix("title", f"o{i}", f"c{i}") for i in range(8)]
    text = render_snippet(entries, PromptSettings(max_examples=2))
    assert "Original: o6\nCorrected: c6\n\nExample 2:\nOriginal: o7" in text
    assert "o5" not in text


def test_examples_with_an_empty_side_are_skipped_and_the_window_counts_only_examples() -> None:
    """webhouse's own loader skips them: the agent runner and the snippet show the same five."""
    entries = [fix("title", f"o{i}", f"c{i}") for i in range(3)]
    entries += [fix("excerpt", "", "added"), fix("alt", "removed", "")]
    text = render_snippet(entries, PromptSettings(max_examples=2))
    assert "Original: o1\nCorrected: c1\n\nExample 2:\nOriginal: o2\nCorrected: c2\n" in text
    assert "added" not in text and "removed" not in text


def test_show_field_labels_each_example() -> None:
    text = render_snippet([fix("seo.metaTitle", "a", "b")], PromptSettings(show_field=True))
    assert text.splitlines()[1] == "Example 1 (seo.metaTitle):"


def test_nothing_to_learn_is_an_empty_snippet() -> None:
    assert render_snippet([], PromptSettings()) == ""
    assert render_snippet([rejection("no")], PromptSettings()) == ""
    entries = [new_entry(NOW, random_chars, type="edit", original="only one side")]
    assert render_snippet(entries, PromptSettings()) == ""


def test_rejections_section() -> None:
    settings = PromptSettings(include_rejections=True, max_rejections=2)
    entries = [rejection("first"), rejection(""), rejection("second\nline"), rejection("third")]
    assert render_snippet(entries, settings) == (
        "## Things to avoid (from past curator rejections)\n"
        "1. second line\n"
        "2. third\n"
        "Read these carefully — outputs that ignore them will be rejected again.\n"
    )


def test_both_sections_are_separated_by_a_blank_line() -> None:
    settings = PromptSettings(include_rejections=True)
    text = render_snippet([fix("t", "a", "b"), rejection("dull")], settings)
    assert "Corrected: b\n\n## Things to avoid" in text


def test_long_values_are_cut_around_the_first_difference() -> None:
    base = "x" * 1000
    original, corrected = base + " old ending", base + " new ending"
    short_o, short_c = shorten_pair(original, corrected, 100)
    assert len(short_o) == 100 and len(short_c) == 100
    assert short_o.startswith("…") and "old ending" in short_o
    assert "new ending" in short_c
    text = render_snippet([fix("body", original, corrected)], PromptSettings(max_example_chars=100))
    assert base not in text


def test_short_values_are_kept_whole() -> None:
    assert shorten_pair("abc", "abd", 600) == ("abc", "abd")


def test_a_difference_at_the_start_keeps_the_start() -> None:
    original, corrected = "A" + "y" * 900, "B" + "y" * 900
    short_o, short_c = shorten_pair(original, corrected, 50)
    assert short_o.startswith("A") and short_o.endswith("…") and len(short_o) == 50
    assert short_c.startswith("B")
