"""feedback.json: ids, timestamps, the cap, the legacy shape, corrupt files, de-duplication."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from feedbackd.app.workspace.agentfiles import read_feedback, write_feedback
from feedbackd.core.curation.feedback import (
    FeedbackEntry,
    check_record,
    identity_of,
    merge_new,
    new_entry,
    parse_feedback,
)
from feedbackd.core.curation.feedbackjson import (
    ENTRY_TYPES,
    FIELDS,
    LEGACY_CREATED_AT,
    entry_problem,
    legacy_id,
    stored_shape,
)
from feedbackd.core.errors import FeedbackdError, InvalidFeedback
from feedbackd.edges.randomness import random_chars

NOW = datetime(2026, 4, 8, 10, 0, 0, 123000, tzinfo=UTC)


def correction(field: str, original: str, corrected: str, item: str = "qi-1"):
    return new_entry(
        NOW,
        random_chars,
        type="correction",
        queueItemId=item,
        field=field,
        original=original,
        corrected=corrected,
    )


def test_new_entry_has_the_contract_id_and_timestamp() -> None:
    entry = correction("title", "a", "b")
    assert re.fullmatch(r"fb-1775642400123-[a-z0-9]{6}", entry.id)
    assert entry.createdAt == "2026-04-08T10:00:00.123Z"


def test_optional_fields_are_omitted_not_null(tmp_path: Path) -> None:
    path = tmp_path / "feedback.json"
    write_feedback(
        path, [new_entry(NOW, random_chars, type="rejection", queueItemId="qi-2", notes="dry")]
    )
    [stored] = json.loads(path.read_text())
    assert set(stored) == {"id", "type", "queueItemId", "notes", "createdAt"}
    assert path.read_text().endswith("}\n]\n")
    assert '\n  {\n    "id"' in path.read_text()  # two-space indentation


def test_cap_drops_the_oldest() -> None:
    existing = [correction("title", f"o{i}", f"c{i}") for i in range(5)]
    stored, added = merge_new(existing, [correction("title", "new", "newer")], cap=3)
    assert [e.corrected for e in stored] == ["c3", "c4", "newer"]
    assert len(added) == 1


def test_the_same_entry_is_never_written_twice() -> None:
    first = correction("title", "a", "b")
    again = correction("title", "a", "b")  # a new id, same decision
    stored, added = merge_new([first], [again], cap=200)
    assert stored == [first] and added == []


def test_an_entry_and_its_fields_as_written_have_one_identity() -> None:
    """forgotten.jsonl keeps a lesson away by the identity of its fields as written there."""
    entry = correction("title", "a", "b")
    assert (
        identity_of(entry.to_json())
        == entry.identity()
        == ("qi-1", "correction", "title", "b", None)
    )
    assert correction("title", "other original", "b").identity() == entry.identity()
    assert correction("excerpt", "a", "b").identity() != entry.identity()
    assert identity_of({"type": "rejection", "notes": 7}) == (None, "rejection", None, None, None)


def test_a_recorded_entry_keeps_what_a_program_gave() -> None:
    given = {
        "type": "edit",
        "queueItemId": "qi-1",
        "field": "alt",
        "original": "a",
        "corrected": "b",
    }
    assert check_record(given) is given
    assert check_record({"type": "rejection", "notes": ""}) == {"type": "rejection", "notes": ""}


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        ({}, "type must be one of correction, rejection, edit (missing)"),
        ({"type": "praise"}, 'type must be one of correction, rejection, edit ("praise")'),
        ({"type": "edit", "original": "a", "corrected": "b", "id": "fb-1"}, "unknown field `id`"),
        ({"type": "rejection", "notes": 3}, "notes: must be a string, not 3"),
        ({"type": "rejection", "notes": 3, "field": 4}, "field: must be a string, not 4"),
        ({"type": "rejection", "notes": "x", "queueItemId": "../x"}, "queueItemId '../x' is not"),
        ({"type": "edit"}, "a edit needs `original`"),
        ({"type": "correction", "original": "a"}, "a correction needs `corrected`"),
        ({"type": "rejection", "original": "a", "corrected": "b"}, "a rejection needs `notes`"),
    ],
)
def test_a_recorded_entry_is_refused_with_a_reason(payload: dict[str, Any], says: str) -> None:
    with pytest.raises(FeedbackdError) as refused:
        check_record(payload)
    assert says in refused.value.message


def test_legacy_shape_is_read_as_correction_with_a_stable_id(tmp_path: Path) -> None:
    path = tmp_path / "feedback.json"
    path.write_text('[{"original": "Old", "corrected": "New"}]')
    [entry] = read_feedback(path)
    assert entry.type == "correction"
    assert entry.createdAt == LEGACY_CREATED_AT
    assert entry.id == legacy_id("Old", "New")
    assert re.fullmatch(r"legacy-[0-9a-f]{12}", entry.id)
    write_feedback(path, [entry])
    assert json.loads(path.read_text()) == [
        {
            "id": entry.id,
            "type": "correction",
            "original": "Old",
            "corrected": "New",
            "createdAt": LEGACY_CREATED_AT,
        }
    ]


def test_unknown_fields_of_other_tools_are_kept() -> None:
    text = json.dumps([{**correction("t", "a", "b").to_json(), "reviewer": "kim"}])
    [entry] = parse_feedback(text)
    assert entry.to_json()["reviewer"] == "kim"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[{"id": "x", "type": "correction",', "not valid JSON"),
        ('[{"id": "x", "id": "y"}]', "not valid JSON: the key 'id' appears twice"),
        ('[{"n": ' + "9" * 5000 + "}]", "not valid JSON: a number of 5,000 digits"),
        ('{"entries": []}', "JSON array"),
        ("[1]", "entry 1 is not an object"),
        ('[{"id": "x", "type": "praise", "createdAt": "z"}]', "entry 1: `type`"),
    ],
)
def test_corrupt_feedback_is_refused_with_a_reason(text: str, expected: str) -> None:
    with pytest.raises(InvalidFeedback, match=expected):
        parse_feedback(text)


def test_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "feedback.json"
    path.write_bytes(b'[{"original": "\xff"}]')
    with pytest.raises(InvalidFeedback, match="not UTF-8"):
        read_feedback(path)


# --- the plain rules (core/curation/feedbackjson.py) and the model agree
# -------------------------------
values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.floats(allow_nan=False),
    st.sampled_from(["", "edit", "correction", "rejection", "praise", "qi-1", "Edit"]),
    st.text(max_size=3),
    st.lists(st.none(), max_size=1),
    st.dictionaries(st.sampled_from(["a", "b"]), st.none(), max_size=2),
)
names = st.sampled_from([*FIELDS, "reviewer", "score"])
valid_entries = st.fixed_dictionaries(
    {
        "id": st.text(min_size=1, max_size=3),
        "type": st.sampled_from(ENTRY_TYPES),
        "createdAt": st.text(max_size=3),
    },
    optional={name: values for name in [*FIELDS[2:-1], "reviewer", "score"]},
)
# Valid entries, some with a field or two changed to any value, or left out.
entries = st.builds(
    lambda entry, changes, dropped: {
        name: value for name, value in {**entry, **changes}.items() if name not in dropped
    },
    valid_entries,
    st.dictionaries(names, values, max_size=2) | st.just({}),
    st.sets(names, max_size=1) | st.just(set()),
)


@settings(max_examples=400, deadline=None)
@given(value=entries)
def test_the_plain_rules_accept_what_the_model_accepts_and_say_the_same(
    value: dict[str, Any],
) -> None:
    """The merge driver checks entries without the model (core/curation/feedbackjson.py): for
    any entry, it refuses exactly what FeedbackEntry refuses, naming the same field with the
    same words, and stores an accepted one exactly as the model does."""
    try:
        model = FeedbackEntry.model_validate(value)
    except ValidationError as error:
        first = error.errors()[0]
        assert entry_problem(value) == (str(first["loc"][0]), first["msg"])
    else:
        assert entry_problem(value) is None
        assert stored_shape(value) == model.to_json()
        assert list(stored_shape(value)) == list(model.to_json())


def test_the_plain_rules_catch_each_kind_of_problem() -> None:
    good = {"id": "fb-1", "type": "edit", "createdAt": LEGACY_CREATED_AT}
    assert entry_problem(good) is None
    assert entry_problem({**good, "id": ""}) == ("id", "String should have at least 1 character")
    assert entry_problem({**good, "type": "praise"}) == (
        "type",
        "Input should be 'correction', 'rejection' or 'edit'",
    )
    assert entry_problem({**good, "notes": 3}) == ("notes", "Input should be a valid string")
    assert entry_problem({"id": "fb-1", "type": "edit"}) == ("createdAt", "Field required")
