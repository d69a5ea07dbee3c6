"""feedback.json: ids, timestamps, the cap, the legacy shape, corrupt files, de-duplication."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from feedbackd.core.errors import InvalidFeedback
from feedbackd.core.feedback import (
    LEGACY_CREATED_AT,
    legacy_id,
    merge_new,
    new_entry,
    parse_feedback,
)
from feedbackd.loop.agentfiles import read_feedback, write_feedback

NOW = datetime(2026, 4, 8, 10, 0, 0, 123000, tzinfo=UTC)


def correction(field: str, original: str, corrected: str, item: str = "qi-1"):
    return new_entry(
        NOW,
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
    write_feedback(path, [new_entry(NOW, type="rejection", queueItemId="qi-2", notes="dry")])
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
    text = json.dumps([{**correction("t", "a", "b").as_json(), "reviewer": "kim"}])
    [entry] = parse_feedback(text)
    assert entry.as_json()["reviewer"] == "kim"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[{"id": "x", "type": "correction",', "not valid JSON"),
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
