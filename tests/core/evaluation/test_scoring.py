"""The pure parts of `eval` (SPEC section 14): a field's score is 1 - indel / (len a + len b),
an item's the mean of the approved content's string fields (nested ones named as corrections
name them; a missing one scores 0), the paired bootstrap is seeded so the same scores give the
same interval, and the built-in agent applies the snippet's examples oldest first."""

from __future__ import annotations

import pytest

from feedbackd.core.evaluation.agentio import (
    BadAnswer,
    Example,
    Lessons,
    Task,
    answer_key,
    apply_lessons,
    parse_answer,
    request,
)
from feedbackd.core.evaluation.scoring import (
    field_score,
    paired_ci95,
    score_item,
    totals,
)


def test_a_field_score_is_one_minus_the_indel_share() -> None:
    assert field_score("", "") == 1.0
    assert field_score("abc", "abc") == 1.0
    assert field_score("abc", "") == 0.0
    # "kitten" → "sitting": delete k, e; insert s, i, g = 5 of 13 characters
    assert field_score("kitten", "sitting") == pytest.approx(1 - 5 / 13)


def test_an_item_scores_the_approved_string_fields_nested_ones_by_dotted_name() -> None:
    approved = {"title": "Hello", "seo": {"metaTitle": "Hi"}, "tags": ["a"], "n": 3}
    same = score_item(approved, approved)
    assert same.score == 1.0 and same.exact and same.fields == {"title": 1.0, "seo.metaTitle": 1.0}
    missing = score_item({"title": "Hello"}, approved)
    assert missing.fields == {"title": 1.0, "seo.metaTitle": 0.0}
    assert missing.score == 0.5 and not missing.exact
    assert not score_item({"title": "Hello", "seo": {"metaTitle": "Hj"}}, approved).exact


def test_totals_are_means_over_items_and_fields_over_the_items_having_them() -> None:
    scores = [score_item({"a": "x"}, {"a": "x"}), score_item({"a": "x"}, {"a": "y", "b": "z"})]
    assert totals(scores) == {"score": 0.5, "exact_rate": 0.5, "fields": {"a": 0.5, "b": 0.0}}


def test_the_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    differences = [0.1 * (n % 7) - 0.2 for n in range(50)]
    low, high = paired_ci95(differences) or (0.0, 0.0)
    mean = sum(differences) / len(differences)
    assert low < mean < high
    assert paired_ci95(differences) == (low, high)  # the same inputs, the same interval
    assert paired_ci95([0.3] * 10) == (0.3, 0.3)
    assert paired_ci95([]) is None


def test_the_builtin_agent_applies_the_examples_oldest_first() -> None:
    draft = {"title": "Old", "excerpt": "Old", "seo": {"metaTitle": "Old"}}
    examples = [
        Example("title", "Old", "New"),
        Example("title", "New", "Newer"),
        Example("seo.metaTitle", "Old", "Meta"),
        Example("excerpt", "Other", "Never"),
    ]
    assert apply_lessons(draft, examples) == {
        "title": "Newer",
        "excerpt": "Old",
        "seo": {"metaTitle": "Meta"},
    }
    assert draft["title"] == "Old"  # the draft itself is left as it was


def test_answers_parse_as_content_fields_and_markdown_as_front_matter_and_body() -> None:
    assert parse_answer('{"title": "T"}', "json") == {"title": "T"}
    assert parse_answer("---\ntitle: T\n---\nBody.\n", "md") == {"title": "T", "body": "Body.\n"}
    assert parse_answer("Just a body.\n", "md") == {"body": "Just a body.\n"}
    for garbage in ("Sure! {", "[1]", '"text"'):
        with pytest.raises(BadAnswer):
            parse_answer(garbage, "json")
    with pytest.raises(BadAnswer):
        parse_answer("---\ntitle: [\n---\n", "md")


def test_the_request_and_the_cache_key_hold_the_task_and_the_snippet() -> None:
    task = Task("w", "p1", "md", "Write it.", {"title": "T", "body": "B\n"}, {"title": "U"})
    lessons = Lessons("## Learn from past corrections\n", ())
    assert request(task, lessons) == (
        '{"agent": "w", "item": "p1", "input": "Write it.", "snippet": '
        '"## Learn from past corrections\\n", "draft": "---\\ntitle: T\\n---\\nB\\n"}'
    )
    key = answer_key("cmd", task, lessons)
    assert key == answer_key("cmd", task, Lessons(lessons.text, (Example(None, "a", "b"),)))
    assert key != answer_key("cmd2", task, lessons)
    assert key != answer_key("cmd", task, Lessons("", ()))
