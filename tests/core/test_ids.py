"""Ids: the rule for names used as paths, and the formats of the ids feedbackd makes."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from feedbackd.core.curation.decisions import new_record as new_decision
from feedbackd.core.curation.feedback import new_entry
from feedbackd.core.errors import InvalidId
from feedbackd.core.ids import (
    DECISION,
    FEEDBACK_ENTRY,
    MEMORY_RECORD,
    PRICE_CHANGE,
    IdKind,
    is_valid_id,
    new_id,
    validate_id,
)
from feedbackd.edges.randomness import random_chars

NOW = datetime(2026, 4, 8, 10, 0, 0, 123000, tzinfo=UTC)  # 1775642400123 ms


@pytest.mark.parametrize(
    ("kind", "pattern"),
    [
        (FEEDBACK_ENTRY, r"fb-1775642400123-[a-z0-9]{6}"),  # SPEC §4
        (MEMORY_RECORD, r"mem-1775642400123-[a-z0-9]{6}"),
        (DECISION, r"d-1775642400123-[0-9a-f]{6}"),
        (PRICE_CHANGE, r"price-1775642400123-[0-9a-f]{6}"),
    ],
    ids=["feedback", "memory", "decision", "price"],
)
def test_each_kind_of_id_keeps_its_format(kind: IdKind, pattern: str) -> None:
    made = {new_id(kind, NOW, random_chars) for _ in range(50)}
    assert all(re.fullmatch(pattern, made_id) for made_id in made)
    assert len(made) > 1  # random, not derived from the time alone
    assert all(is_valid_id(made_id) for made_id in made)


def test_the_random_characters_are_the_callers() -> None:
    """The core draws nothing itself: the same draw gives the same id, and a draw that breaks
    the kind's format is refused rather than written into a record."""
    asked = []

    def fixed(alphabet: str, count: int) -> str:
        asked.append((alphabet, count))
        return "c0ffee"

    assert new_id(DECISION, NOW, fixed) == "d-1775642400123-c0ffee"
    assert new_id(FEEDBACK_ENTRY, NOW, fixed) == "fb-1775642400123-c0ffee"
    assert asked == [(DECISION.alphabet, 6), (FEEDBACK_ENTRY.alphabet, 6)]
    for wrong in ["C0FFEE", "c0ffe", "c0ffee0", "c0ffe-"]:
        with pytest.raises(ValueError, match="is not 6 characters of"):
            new_id(DECISION, NOW, lambda _alphabet, _count, wrong=wrong: wrong)


def test_the_records_get_ids_of_their_kind() -> None:
    entry = new_entry(NOW, random_chars, type="edit")
    assert re.fullmatch(r"fb-1775642400123-[a-z0-9]{6}", entry.id)
    decision = new_decision("qi-1", "approved", NOW, random_chars)
    assert re.fullmatch(r"d-1775642400123-[0-9a-f]{6}", decision.id)


@pytest.mark.parametrize("good", ["a", "qi-123", "claude-code-run", "A.b_c-9", "x" * 128])
def test_safe_names_are_ids(good: str) -> None:
    assert is_valid_id(good) and validate_id(good, "item id") == good


@pytest.mark.parametrize("bad", ["", "-a", ".hidden", "a/b", "a..b", "..", "x" * 129, "a b"])
def test_names_that_could_leave_their_folder_are_refused(bad: str) -> None:
    assert not is_valid_id(bad)
    with pytest.raises(InvalidId, match=r"^skill id .* is not a valid id") as caught:
        validate_id(bad, "skill id")
    assert "starting with a letter or digit" in caught.value.hint
