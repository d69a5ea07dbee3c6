"""A curator's edits written into a draft before approval: every format, nested fields, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from feedbackd.core.curation.itemedits import with_content_edits
from feedbackd.core.curation.items import diff_content, parse_item
from feedbackd.core.errors import InvalidItem

JSON_DRAFT = {
    "id": "qi-1",
    "contentData": {"title": "Old title", "seo": {"metaTitle": "Old meta"}, "views": 3},
}
YAML_DRAFT = "id: qi-2\ncontentData:\n  title: Old title\n  seo:\n    metaTitle: Old meta\n"
MD_DRAFT = (
    "---\n# the working title\ntitle: Old title\nseo:\n  metaTitle: Old meta\n---\nOld body.\n"
)


def edited(name: str, data: bytes, edits: dict[str, str]) -> tuple[bytes, dict[str, object]]:
    path = Path(name)
    new = with_content_edits(data, path, edits)
    return new, parse_item(new, path.suffix, path.stem).content


def test_json_edits_reach_nested_fields_and_keep_the_rest() -> None:
    data = json.dumps(JSON_DRAFT).encode()
    new, content = edited("qi-1.json", data, {"title": "New", "seo.metaTitle": "New meta"})
    assert content == {"title": "New", "seo": {"metaTitle": "New meta"}, "views": 3}
    assert json.loads(new)["id"] == "qi-1"
    assert new.endswith(b"}\n") and b'\n  "contentData"' in new  # 2-space JSON, final newline


def test_yaml_edits_change_only_the_named_field() -> None:
    _, content = edited("qi-2.yaml", YAML_DRAFT.encode(), {"seo.metaTitle": "New meta"})
    assert content == {"title": "Old title", "seo": {"metaTitle": "New meta"}}


def test_markdown_top_level_edit_keeps_comments_and_body() -> None:
    new, content = edited("qi-3.md", MD_DRAFT.encode(), {"title": "New: a colon"})
    assert content["title"] == "New: a colon"
    assert b"# the working title" in new
    assert new.endswith(b"---\nOld body.\n")


def test_markdown_body_and_nested_edits() -> None:
    edits = {"body": "New body.\n", "seo.metaTitle": "New meta"}
    _, content = edited("qi-3.md", MD_DRAFT.encode(), edits)
    assert content["seo"] == {"metaTitle": "New meta"}
    assert (content["title"], content["body"]) == ("Old title", "New body.\n")


def test_the_edits_are_what_the_approval_diff_records() -> None:
    data = json.dumps(JSON_DRAFT).encode()
    before = parse_item(data, ".json", "qi-1").content
    _, after = edited("qi-1.json", data, {"seo.metaTitle": "New meta"})
    [correction] = diff_content(before, after)
    assert (correction.field, correction.original, correction.corrected) == (
        "seo.metaTitle",
        "Old meta",
        "New meta",
    )


def test_a_byte_order_mark_stays() -> None:
    data = b"\xef\xbb\xbf" + YAML_DRAFT.encode()
    new, _ = edited("qi-2.yaml", data, {"title": "New"})
    assert new.startswith(b"\xef\xbb\xbf")


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        ({"subtitle": "x"}, "has no text field 'subtitle'"),
        ({"views": "4"}, "has no text field 'views'"),  # a number is not a text field
        ({"seo": "x"}, "has no text field 'seo'"),
        ({"title": 5}, "must be a string"),
    ],
)
def test_edits_of_fields_that_are_not_text_are_refused(
    edits: dict[str, object], message: str
) -> None:
    data = json.dumps(JSON_DRAFT).encode()
    with pytest.raises(InvalidItem, match=message) as refused:
        with_content_edits(data, Path("qi-1.json"), edits)  # type: ignore[arg-type]
    assert "seo.metaTitle" in refused.value.hint or "string" in message


def test_an_edit_that_makes_the_item_too_large_is_refused() -> None:
    data = json.dumps(JSON_DRAFT).encode()
    with pytest.raises(InvalidItem, match="over the 1 MiB limit"):
        with_content_edits(data, Path("qi-1.json"), {"title": "x" * (1024 * 1024)})
