"""Reading curator items in every format, refusing bad ones clearly, and the approval diff."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from feedbackd.app.workspace.agentfiles import read_item, set_rejection_feedback
from feedbackd.core.curation.items import (
    MAX_ITEM_BYTES,
    Correction,
    Item,
    ItemError,
    diff_content,
    item_format,
    parse_curator,
    parse_item,
    unrecorded_changes,
)
from feedbackd.core.errors import InvalidItem, NotFound

JSON_ITEM = """{
  "id": "qi-123",
  "agentId": "content-writer",
  "collection": "posts",
  "generatedAt": "2026-04-08T10:00:00.000Z",
  "curator": "Ada Curator <ada@example.org>",
  "reviewScore": 7,
  "contentData": {
    "title": "How TypeScript Generics Save You",
    "seo": {"metaTitle": "Generics", "keywords": ["ts", "generics"]},
    "wordCount": 900
  },
  "originalContentData": {
    "title": "Why TypeScript Generics Matter",
    "seo": {"metaTitle": "Generics", "keywords": ["ts"]},
    "wordCount": 800
  }
}
"""

YAML_ITEM = """\
# Draft written by the content agent
id: qi-124
agentId: content-writer
contentData:
  title: Ten Tips
  excerpt: |
    First line.
    Second line.
rejectionFeedback: Tone is too dry — needs more personality
extra:
  kept: [1, 2]
"""

MD_ITEM = """\
---
id: qi-125
agentId: content-writer
title: A Post About Generics
slug: generics
status: draft
seo:
  metaTitle: Generics 101
originalContentData:
  title: Generics
  body: "Old body.\\n"
---
Body line one.

Body line two.
"""


def write(folder: Path, name: str, data: str | bytes) -> Path:
    path = folder / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def refusal(folder: Path, name: str, data: str | bytes) -> ItemError:
    """Write a file and return the error reading it raises (failing if it is accepted)."""
    path = write(folder, name, data)
    with pytest.raises(InvalidItem) as caught:
        read_item(path)
    error = caught.value
    assert isinstance(error, ItemError)
    assert error.code == "invalid_item"
    assert error.hint, "every refusal says how to fix it"
    return error


def reject(data: str | bytes, suffix: str = ".json", item_id: str = "qi-1") -> ItemError:
    """The error parsing these bytes raises, without touching the disk."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with pytest.raises(InvalidItem) as caught:
        parse_item(raw, suffix, item_id)
    assert isinstance(caught.value, ItemError)
    assert caught.value.hint
    return caught.value


# --- formats -------------------------------------------------------------------------------


def test_item_format_by_suffix() -> None:
    assert item_format(Path("a.json")) == "json"
    assert item_format(Path("a.yaml")) == "yaml"
    assert item_format(Path("a.yml")) == "yaml"
    assert item_format(Path("a.md")) == "md"
    assert item_format(Path("a.JSON")) == "json"
    assert item_format(Path("a.txt")) is None
    assert item_format(Path("a.json.error")) is None
    assert item_format(Path("README")) is None


def test_json_item(tmp_path: Path) -> None:
    item = read_item(write(tmp_path, "qi-123.json", JSON_ITEM))
    assert item.item_id == "qi-123"
    assert item.path == tmp_path / "qi-123.json"
    assert item.format == "json"
    assert item.content["title"] == "How TypeScript Generics Save You"
    assert item.original is not None
    assert item.original["title"] == "Why TypeScript Generics Matter"
    assert item.rejection_feedback is None
    assert item.curator == "Ada Curator <ada@example.org>"
    # Unknown fields are kept as they are.
    assert item.document["reviewScore"] == 7
    assert item.document["collection"] == "posts"
    assert item.document == json.loads(JSON_ITEM)


@pytest.mark.parametrize("suffix", [".yaml", ".yml"])
def test_yaml_item(tmp_path: Path, suffix: str) -> None:
    item = read_item(write(tmp_path, f"qi-124{suffix}", YAML_ITEM))
    assert item.format == "yaml"
    assert item.content == {"title": "Ten Tips", "excerpt": "First line.\nSecond line.\n"}
    assert item.original is None
    assert item.rejection_feedback == "Tone is too dry — needs more personality"
    assert item.curator is None
    assert item.document["extra"] == {"kept": [1, 2]}
    # Plain data all the way down: no ruamel wrappers leak out.
    assert type(item.document) is dict
    assert type(item.document["extra"]["kept"]) is list
    assert type(item.content["title"]) is str


def test_yaml_dates_become_text(tmp_path: Path) -> None:
    text = "generatedAt: 2026-04-08\ncontentData:\n  title: T\n"
    item = read_item(write(tmp_path, "qi-1.yaml", text))
    assert item.document["generatedAt"] == "2026-04-08"


def test_markdown_item(tmp_path: Path) -> None:
    item = read_item(write(tmp_path, "qi-125.md", MD_ITEM))
    assert item.format == "md"
    # Reserved keys are not content; title and unknown keys are; the body is field `body`.
    assert item.content == {
        "title": "A Post About Generics",
        "seo": {"metaTitle": "Generics 101"},
        "body": "Body line one.\n\nBody line two.\n",
    }
    assert item.original == {"title": "Generics", "body": "Old body.\n"}
    assert item.document["slug"] == "generics"
    assert item.document["status"] == "draft"
    assert item.document["body"] == item.content["body"]


def test_markdown_body_kept_as_written(tmp_path: Path) -> None:
    # Only the one newline after the closing line goes; leading blank lines and a missing
    # final newline stay, and a --- inside the body is body text.
    text = "---\ntitle: T\n---\n\n  indented\n---\nno final newline"
    item = read_item(write(tmp_path, "qi-1.md", text))
    assert item.content["body"] == "\n  indented\n---\nno final newline"


def test_markdown_crlf_and_empty_front_matter(tmp_path: Path) -> None:
    item = read_item(write(tmp_path, "qi-1.md", "---\r\n---\r\nHello\r\n"))
    assert item.content == {"body": "Hello\r\n"}
    assert item.document == {"body": "Hello\r\n"}
    item = read_item(write(tmp_path, "qi-2.md", "---\ntitle: T\n---"))
    assert item.content == {"title": "T", "body": ""}


def test_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    item = read_item(write(tmp_path, "qi-1.json", b'\xef\xbb\xbf{"contentData": {"t": "x"}}'))
    assert item.content == {"t": "x"}


def test_null_optional_fields_count_as_absent() -> None:
    text = '{"contentData": {}, "originalContentData": null, "rejectionFeedback": null, "id": null}'
    item = parse_item(text.encode(), ".json", "qi-1")
    assert item.original is None
    assert item.rejection_feedback is None


def test_numeric_id_matching_file_name() -> None:
    item = parse_item(b"id: 123\ncontentData: {}\n", ".yaml", "123")
    assert item.item_id == "123"


def test_curator_is_tidied() -> None:
    assert parse_curator("  Ada Curator   <ada@example.org> ") == "Ada Curator <ada@example.org>"
    assert parse_curator("Ada <a@b>") == "Ada <a@b>"
    for bad in ("Ada", "<ada@example.org>", "Ada <ada>", "Ada <a@b> x", "A\nB <a@b>", "A <a@b@c>"):
        assert parse_curator(bad) is None, bad


def test_parse_item_is_pure() -> None:
    item = parse_item(b'{"contentData": {"a": "b"}}', ".json", "qi-9")
    assert item == Item(
        "qi-9", None, "json", {"a": "b"}, None, None, None, {"contentData": {"a": "b"}}
    )


# --- bad files -----------------------------------------------------------------------------


def test_malformed_json_names_line_and_column(tmp_path: Path) -> None:
    error = refusal(tmp_path, "qi-1.json", '{\n  "contentData": {\n    "title": "x" "y"\n  }\n}\n')
    assert "invalid JSON" in error.message
    assert "(line 3, column 18)" in error.message
    assert error.line == 3
    assert error.column == 18
    assert error.path == tmp_path / "qi-1.json"


@pytest.mark.parametrize(
    "text",
    ['{"contentData": {"title": "Half', '{"contentData": {"title": "x"', '{"contentData": ', "{"],
)
def test_half_written_json(tmp_path: Path, text: str) -> None:
    error = refusal(tmp_path, "qi-1.json", text)
    assert error.message.startswith("the JSON ends before it is complete (line 1, column")
    assert "still writing" in error.hint


def test_json_oddities_refused() -> None:
    assert "appears twice" in reject('{"contentData": {}, "contentData": {}}').message
    assert "NaN is not a JSON value" in reject('{"contentData": {"n": NaN}}').message
    assert "extra data" in reject('{"contentData": {}}\n{}').message
    error = reject('{"contentData": {"t": "a\tb"}}')
    assert error.message == "invalid JSON: invalid control character (line 1, column 25)"


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".md"])
@pytest.mark.parametrize("data", [b"", b"   \n\n"])
def test_empty_file(tmp_path: Path, suffix: str, data: bytes) -> None:
    error = refusal(tmp_path, f"qi-1{suffix}", data)
    assert error.message == "the file is empty"
    assert "still writing" in error.hint


def test_yaml_with_only_comments(tmp_path: Path) -> None:
    error = refusal(tmp_path, "qi-1.yaml", "# nothing yet\n")
    assert "only comments" in error.message


def test_malformed_yaml_names_line_and_column(tmp_path: Path) -> None:
    error = refusal(tmp_path, "qi-1.yaml", "contentData:\n  title: [unclosed\nother: x\n")
    assert error.message.startswith("invalid YAML:")
    assert error.line is not None
    assert "(line " in error.message


def test_duplicate_yaml_key_refused(tmp_path: Path) -> None:
    error = refusal(tmp_path, "qi-1.yml", "contentData: {}\ncontentData: {}\n")
    assert "duplicate key" in error.message
    assert "(line 2, column" in error.message


@pytest.mark.parametrize(
    ("text", "word", "line"),
    [
        ("base: &b {title: x}\ncontentData: *b\n", "anchor &b", 1),
        ("contentData:\n  title: !!str x\n", "tag", 2),
        ("contentData: !custom\n  title: x\n", "tag !custom", 1),
        ("a: &x 1\ncontentData: {n: *x}\n", "anchor", 1),
    ],
)
def test_yaml_anchors_aliases_and_tags_refused(
    tmp_path: Path, text: str, word: str, line: int
) -> None:
    error = refusal(tmp_path, "qi-1.yaml", text)
    assert word in error.message
    assert error.line == line
    assert "anchors" in error.hint


def test_alias_refused_in_markdown_front_matter(tmp_path: Path) -> None:
    error = refusal(tmp_path, "qi-1.md", "---\na: &x 1\nb: *x\n---\nbody\n")
    assert "anchor &x" in error.message
    assert "(line 2, column" in error.message  # counted from the file's first line


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"contentData": ["a"]}', "contentData must be an object, not a list"),
        ('{"contentData": "text"}', "contentData must be an object, not a string"),
        ('{"contentData": null}', "contentData must be an object, not null"),
        ('{"title": "x"}', "contentData is missing"),
        ("[1, 2]", "the item must be a JSON object, not a list"),
        ('"just text"', "the item must be a JSON object, not a string"),
        ('{"contentData": {}, "originalContentData": [1]}', "originalContentData must be an"),
        ('{"contentData": {}, "rejectionFeedback": 5}', "rejectionFeedback must be a string"),
        ('{"contentData": {}, "rejectionFeedback": ["x"]}', "rejectionFeedback must be a string"),
        ('{"contentData": {}, "curator": "Ada"}', "curator 'Ada' is not of the form"),
        ('{"contentData": {}, "curator": 7}', "curator 7 is not of the form"),
        ('{"contentData": {}, "id": true}', "id must be a string"),
    ],
)
def test_wrong_types_in_json(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in refusal(tmp_path, "qi-1.json", text).message


def test_wrong_types_in_yaml_name_the_line(tmp_path: Path) -> None:
    error = refusal(tmp_path, "qi-1.yaml", "contentData:\n  - a\n  - b\n")
    assert error.message == "contentData must be an object, not a list (line 1, column 1)"
    error = refusal(tmp_path, "qi-2.yaml", "contentData: {}\nrejectionFeedback: 12\n")
    assert error.message == "rejectionFeedback must be a string, not a number (line 2, column 1)"
    error = refusal(tmp_path, "qi-3.yaml", "- contentData: {}\n")
    assert "not a list" in error.message


def test_wrong_types_in_markdown_front_matter(tmp_path: Path) -> None:
    error = refusal(tmp_path, "qi-1.md", "---\ntitle: T\nrejectionFeedback: [a]\n---\nbody\n")
    assert error.message == "rejectionFeedback must be a string, not a list (line 3, column 1)"
    error = refusal(tmp_path, "qi-2.md", "---\n- a\n---\nbody\n")
    assert "front matter" in error.message
    error = refusal(tmp_path, "qi-3.md", "---\nbody: x\n---\nbody\n")
    assert "body field" in error.message


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("qi-1.json", '{"id": "qi-2", "contentData": {}}'),
        ("qi-1.yaml", "id: qi-2\ncontentData: {}\n"),
        ("qi-1.md", "---\nid: qi-2\n---\nbody\n"),
    ],
)
def test_id_field_must_match_file_name(tmp_path: Path, name: str, text: str) -> None:
    error = refusal(tmp_path, name, text)
    assert "the id field says 'qi-2' but the file name says 'qi-1'" in error.message
    assert "rename the file to qi-2" in error.hint


@pytest.mark.parametrize("item_id", ["../x", " a", "a b", "", ".hidden", "a..b", "x" * 129, "a\0b"])
def test_bad_item_ids_refused(item_id: str) -> None:
    error = reject('{"contentData": {}}', item_id=item_id)
    assert "is not a valid id" in error.message
    assert "rename the file" in error.hint


def test_bad_id_in_a_real_file_name(tmp_path: Path) -> None:
    error = refusal(tmp_path, " a.json", '{"contentData": {}}')
    assert "' a'" in error.message


def test_unknown_suffix_refused() -> None:
    assert "not an item format" in reject("x", suffix=".txt").message


def test_over_one_mebibyte_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "qi-1.json"
    with open(path, "wb") as handle:  # sparse: huge on paper, nothing to read
        handle.truncate(5 * MAX_ITEM_BYTES)
    with pytest.raises(InvalidItem) as caught:
        read_item(path)
    assert "5,242,880 bytes, over the limit of 1 MiB (1,048,576 bytes)" in caught.value.message


def test_exactly_one_mebibyte_is_allowed(tmp_path: Path) -> None:
    head = b'{"contentData": {"body": "'
    tail = b'"}}'
    data = head + b"x" * (MAX_ITEM_BYTES - len(head) - len(tail)) + tail
    assert len(data) == MAX_ITEM_BYTES
    assert len(read_item(write(tmp_path, "qi-1.json", data)).content["body"]) > 1000
    error = reject(data + b" ")
    assert "1,048,577 bytes" in error.message


def test_not_utf8_names_the_byte(tmp_path: Path) -> None:
    error = refusal(tmp_path, "qi-1.json", b'{\n  "contentData": {"t": "caf\xe9"}\n}')
    assert "not UTF-8" in error.message
    assert "0xe9 at byte offset 29" in error.message
    assert "(line 2, column 28)" in error.message
    assert "UTF-8" in error.hint


def test_latin1_markdown_refused(tmp_path: Path) -> None:
    error = refusal(tmp_path, "qi-1.md", "---\ntitle: Café\n---\n".encode("latin-1"))
    assert "byte offset 14 cannot be read (line 2, column 11)" in error.message


def test_markdown_without_front_matter(tmp_path: Path) -> None:
    error = refusal(tmp_path, "qi-1.md", "# Just a heading\n\nText.\n")
    assert "no front matter" in error.message
    assert "(line 1)" in error.message


def test_markdown_without_closing_line(tmp_path: Path) -> None:
    error = refusal(tmp_path, "qi-1.md", "---\ntitle: T\n\nBody that never closes\n")
    assert "no closing --- line" in error.message
    assert "add a --- line" in error.hint


def test_deep_nesting_refused() -> None:
    assert "nested more than" in reject('{"contentData": ' + "[" * 5000 + "]" * 5000 + "}").message
    assert "nested more than" in reject('{"contentData": ' + "[" * 80 + "]" * 80 + "}").message
    for depth in (70, 500_000):
        yaml_text = "contentData: " + "[" * depth + "]" * depth + "\n"
        assert "nested more than" in reject(yaml_text, suffix=".yaml").message
    block_text = "".join(" " * i + f"k{i}:\n" for i in range(70)) + " " * 70 + "v\n"
    assert "nested more than" in reject("contentData:\n" + block_text, suffix=".yaml").message
    text = "---\nseo: " + "{a: " * 100 + "1" + "}" * 100 + "\n---\nbody\n"
    assert "nested more than" in reject(text, suffix=".md").message


def test_brackets_in_text_within_reason_are_fine() -> None:
    text = 'contentData:\n  note: "[[[[ [x] {y} ]]]]"\n  code: a[1][2]\n'
    assert parse_item(text.encode(), ".yaml", "qi-1").content["code"] == "a[1][2]"


def test_missing_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        read_item(tmp_path / "qi-1.json")


def test_folder_named_like_an_item_refused(tmp_path: Path) -> None:
    (tmp_path / "qi-1.json").mkdir()
    with pytest.raises(InvalidItem) as caught:
        read_item(tmp_path / "qi-1.json")
    assert "not a regular file" in caught.value.message


def test_bad_file_is_left_untouched(tmp_path: Path) -> None:
    data = b'{"contentData": {"title": "x"'
    path = write(tmp_path, "qi-1.json", data)
    with pytest.raises(InvalidItem):
        read_item(path)
    assert path.read_bytes() == data


# --- approval diff ---------------------------------------------------------------------------


def test_diff_nested_fields_in_order() -> None:
    original = {"title": "Old", "seo": {"metaTitle": "M", "og": {"text": "a"}}, "excerpt": "E"}
    current = {"excerpt": "E2", "seo": {"og": {"text": "b"}, "metaTitle": "M2"}, "title": "New"}
    assert diff_content(original, current) == [
        Correction("excerpt", "E", "E2"),
        Correction("seo.og.text", "a", "b"),
        Correction("seo.metaTitle", "M", "M2"),
        Correction("title", "Old", "New"),
    ]


def test_diff_ignores_whitespace_at_the_end_and_line_endings() -> None:
    original = {"a": "x\r\ny\r\n", "b": "text", "c": "one\rtwo", "d": "tab\t \n"}
    current = {"a": "x\ny", "b": "text  \n\n", "c": "one\ntwo", "d": "tab"}
    assert diff_content(original, current) == []


def test_diff_keeps_values_as_written() -> None:
    # Leading and inner whitespace are real changes; the values are reported unnormalised.
    original = {"a": "  x\r\n", "b": "one  two"}
    current = {"a": "x\r\n", "b": "one two"}
    assert diff_content(original, current) == [
        Correction("a", "  x\r\n", "x\r\n"),
        Correction("b", "one  two", "one two"),
    ]


def test_diff_ignores_non_strings_arrays_and_one_sided_fields() -> None:
    original: dict[str, Any] = {
        "tags": ["a"],
        "count": 1,
        "flag": True,
        "gone": "x",
        "typed": "5",
        "block": {"k": "v"},
        "none": None,
    }
    current: dict[str, Any] = {
        "tags": ["b"],
        "count": 2,
        "flag": False,
        "new": "y",
        "typed": 5,
        "block": "now text",
        "none": "filled",
    }
    assert diff_content(original, current) == []


def test_diff_no_change() -> None:
    content = {"title": "T", "seo": {"m": "x"}}
    assert diff_content(content, dict(content)) == []


def test_markdown_body_diff(tmp_path: Path) -> None:
    item = read_item(write(tmp_path, "qi-125.md", MD_ITEM))
    assert item.original is not None
    assert diff_content(item.original, item.content) == [
        Correction("title", "Generics", "A Post About Generics"),
        Correction("body", "Old body.\n", "Body line one.\n\nBody line two.\n"),
    ]


def test_json_item_diff(tmp_path: Path) -> None:
    item = read_item(write(tmp_path, "qi-123.json", JSON_ITEM))
    assert item.original is not None
    assert diff_content(item.original, item.content) == [
        Correction("title", "Why TypeScript Generics Matter", "How TypeScript Generics Save You")
    ]


def test_crlf_only_edit_yields_nothing(tmp_path: Path) -> None:
    queued = read_item(write(tmp_path, "qi-1.yaml", "contentData:\n  title: T\n  body: |\n    a\n"))
    edited = write(tmp_path, "qi-1.yml", "contentData:\r\n  title: T \r\n  body: |\r\n    a\r\n")
    assert diff_content(queued.content, read_item(edited).content) == []


# --- rejection notes -------------------------------------------------------------------------


def reread_without_notes(path: Path) -> dict[str, Any]:
    document = dict(read_item(path).document)
    document.pop("rejectionFeedback", None)
    return document


def test_set_rejection_feedback_json(tmp_path: Path) -> None:
    path = write(tmp_path, "qi-123.json", JSON_ITEM)
    before = read_item(path).document
    set_rejection_feedback(path, "Tone is too dry — needs more personality")
    after = read_item(path)
    assert after.rejection_feedback == "Tone is too dry — needs more personality"
    assert reread_without_notes(path) == before
    text = path.read_text(encoding="utf-8")
    assert text.endswith('\n  "rejectionFeedback": "Tone is too dry — needs more personality"\n}\n')
    assert text.startswith('{\n  "id": "qi-123",\n')  # 2-space indent, order kept
    set_rejection_feedback(path, "Second thoughts")
    assert read_item(path).rejection_feedback == "Second thoughts"
    assert list(read_item(path).document)[-1] == "rejectionFeedback"


@pytest.mark.parametrize("suffix", [".yaml", ".yml"])
def test_set_rejection_feedback_yaml_replaces_in_place(tmp_path: Path, suffix: str) -> None:
    path = write(tmp_path, f"qi-124{suffix}", YAML_ITEM)
    before = read_item(path).document
    set_rejection_feedback(path, "Needs a stronger opening\nand fewer adverbs")
    assert read_item(path).rejection_feedback == "Needs a stronger opening\nand fewer adverbs"
    assert reread_without_notes(path) == {
        k: v for k, v in before.items() if k != "rejectionFeedback"
    }
    lines = path.read_text(encoding="utf-8").splitlines()
    old_lines = YAML_ITEM.splitlines()
    # Comment, order and every other line kept; only the notes' line changed.
    assert lines[:8] == old_lines[:8]
    assert lines[-2:] == old_lines[-2:]
    assert list(read_item(path).document) == list(before)


def test_set_rejection_feedback_yaml_appends_and_keeps_comments(tmp_path: Path) -> None:
    text = "# keep me\ncontentData:\n  title: T  # inline comment\nzeta: 1\n"
    path = write(tmp_path, "qi-1.yaml", text)
    set_rejection_feedback(path, "Too short")
    assert path.read_text(encoding="utf-8") == text + "rejectionFeedback: Too short\n"


def test_set_rejection_feedback_replaces_a_multi_line_value(tmp_path: Path) -> None:
    text = (
        "contentData: {title: T}\nrejectionFeedback: |\n  old line one\n\n  old line two\n"
        "\n# trailing comment\nafter: x\n"
    )
    path = write(tmp_path, "qi-1.yaml", text)
    set_rejection_feedback(path, "new: with a colon, and 'quotes' #not a comment")
    assert read_item(path).rejection_feedback == "new: with a colon, and 'quotes' #not a comment"
    new_text = path.read_text(encoding="utf-8")
    assert "old line" not in new_text
    assert new_text.startswith("contentData: {title: T}\nrejectionFeedback: ")
    assert new_text.endswith("\n\n# trailing comment\nafter: x\n")


def test_set_rejection_feedback_yaml_without_final_newline_and_crlf(tmp_path: Path) -> None:
    path = write(tmp_path, "qi-1.yaml", "contentData:\r\n  title: T")
    set_rejection_feedback(path, "No")
    assert path.read_bytes() == b"contentData:\r\n  title: T\r\nrejectionFeedback: No\r\n"


def test_set_rejection_feedback_flow_style_yaml_falls_back_to_rewrite(tmp_path: Path) -> None:
    path = write(tmp_path, "qi-1.yaml", '{contentData: {title: T}, "id": qi-1}\n')
    set_rejection_feedback(path, "Rewrite it")
    item = read_item(path)
    assert item.document == {
        "contentData": {"title": "T"},
        "id": "qi-1",
        "rejectionFeedback": "Rewrite it",
    }


def test_set_rejection_feedback_markdown(tmp_path: Path) -> None:
    path = write(tmp_path, "qi-125.md", MD_ITEM)
    before = read_item(path)
    set_rejection_feedback(path, "Tone is too dry — needs more personality")
    after = read_item(path)
    assert after.rejection_feedback == "Tone is too dry — needs more personality"
    assert after.content == before.content
    assert reread_without_notes(path) == before.document
    text = path.read_text(encoding="utf-8")
    front, body = MD_ITEM.split("---\nBody", 1)
    assert text.startswith(front)  # every front matter line kept
    assert text.endswith("---\nBody" + body)  # closing line and body byte for byte
    assert "rejectionFeedback: Tone is too dry — needs more personality\n---\n" in text


def test_set_rejection_feedback_markdown_empty_front_matter(tmp_path: Path) -> None:
    path = write(tmp_path, "qi-1.md", "---\n---\nbody without newline")
    set_rejection_feedback(path, "x")
    assert (
        path.read_text(encoding="utf-8") == "---\nrejectionFeedback: x\n---\nbody without newline"
    )


@pytest.mark.parametrize(
    "notes",
    [
        "",
        "line\nbreaks\r\nand\ttabs",
        "odd \u2028 separators \x85 and \x7f",
        "- looks: like yaml",
        "'\"",
        "#",
    ],
)
@pytest.mark.parametrize("name", ["qi-1.json", "qi-1.yaml", "qi-1.md"])
def test_set_rejection_feedback_round_trips_any_text(tmp_path: Path, name: str, notes: str) -> None:
    text = {
        "qi-1.json": '{"contentData": {"t": "x"}}',
        "qi-1.yaml": "contentData:\n  t: x\nrejectionFeedback: old\n",
        "qi-1.md": "---\nt: x\n---\nbody\n",
    }[name]
    path = write(tmp_path, name, text)
    set_rejection_feedback(path, notes)
    assert read_item(path).rejection_feedback == notes
    assert read_item(path).content == parse_item(text.encode(), path.suffix, "qi-1").content


def test_set_rejection_feedback_refuses_a_bad_item_and_leaves_it(tmp_path: Path) -> None:
    data = b"contentData: [1]\n"
    path = write(tmp_path, "qi-1.yaml", data)
    with pytest.raises(InvalidItem):
        set_rejection_feedback(path, "x")
    assert path.read_bytes() == data


def test_set_rejection_feedback_refuses_notes_that_would_pass_the_limit(tmp_path: Path) -> None:
    data = b'{"contentData": {}}'
    path = write(tmp_path, "qi-1.json", data)
    with pytest.raises(InvalidItem) as caught:
        set_rejection_feedback(path, "x" * MAX_ITEM_BYTES)
    assert "over the 1 MiB limit" in caught.value.message
    assert path.read_bytes() == data


def test_set_rejection_feedback_leaves_no_temporary_files(tmp_path: Path) -> None:
    folder = tmp_path / "queue"
    folder.mkdir()
    path = write(folder, "qi-1.json", '{"contentData": {}}')
    set_rejection_feedback(path, "x")
    assert os.listdir(folder) == ["qi-1.json"]


def test_changes_that_yield_no_correction_are_named() -> None:
    before = {"title": "a", "tags": ["x"], "n": 1, "ok": True, "seo": {"k": [1]}, "gone": 1}
    after = {"title": "b", "tags": ["x", "y"], "n": True, "ok": True, "seo": {"k": "1"}, "new": 2}
    assert unrecorded_changes(before, after) == ["n", "seo.k", "tags"]
    assert unrecorded_changes(before, before) == []
