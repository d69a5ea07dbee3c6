"""Changing a draft's text: the rejection note `reject` writes into it, and the edits a curator
makes in the web panel before approving it.

Pure: bytes in, bytes out. Edits keep what they can of the file as written (YAML front matter is
edited line by line, the Markdown body is replaced alone), and every result is read back: when
an in-place edit would not read as intended, the document is written out in full instead
(comments are then lost, the data never).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from feedbackd.core.curation.items import (
    BOM,
    MAX_ITEM_BYTES,
    Item,
    ItemError,
    decode_text,
    flatten_strings,
    parse_item,
    split_front_matter,
)
from feedbackd.core.errors import InvalidItem
from feedbackd.core.formats import yamlio
from feedbackd.core.formats.jsontext import dumps_json


def with_rejection_feedback(data: bytes, path: Path, notes: str) -> bytes:
    """The item file `data` with its rejectionFeedback set to notes, everything else kept.

    JSON is rewritten with 2-space indentation; YAML and front matter are edited in place, so
    comments, order and the Markdown body stay as they were.
    """
    item = parse_item(data, path.suffix, path.stem, path)
    expected = {**item.document, "rejectionFeedback": notes}
    if item.format == "json":
        new_text = dumps_json(expected)
    else:
        new_text = _edited_yaml_text(data, item, notes, expected)
    return _encoded(data, new_text, "with these notes", "shorten the rejection notes")


def _edited_yaml_text(data: bytes, item: Item, notes: str, expected: dict[str, Any]) -> str:
    text = decode_text(data)
    if item.format == "md":
        bounds = split_front_matter(text)
        head, front, tail = (
            text[: bounds.start],
            text[bounds.start : bounds.end],
            text[bounds.end :],
        )
    else:
        head, front, tail = "", text, ""
    edited = head + _set_top_level_key(front, "rejectionFeedback", notes) + tail
    if _reads_as(edited, item, expected):
        return edited
    # The in-place edit did not survive a re-read (flow style, an end marker, ...): write the
    # fields out in full instead; comments are lost, the data is not.
    if item.format == "md":
        front_fields = {key: value for key, value in expected.items() if key != "body"}
        return head + yamlio.dump(front_fields) + tail
    return yamlio.dump(expected)


def _reads_as(text: str, item: Item, expected: dict[str, Any]) -> bool:
    suffix = ".md" if item.format == "md" else ".yaml"
    try:
        return parse_item(text.encode("utf-8"), suffix, item.item_id).document == expected
    except InvalidItem:
        return False


def _set_top_level_key(text: str, key: str, value: str) -> str:
    """Replace key's lines in a block mapping at column 1, or append the key at the end."""
    newline = "\r\n" if "\r\n" in text else "\n"
    rendered = yamlio.dump({key: value}).replace("\n", newline)
    # Split on \n only: str.splitlines would also split inside values at \x85 or \u2028.
    lines = re.findall(r"[^\n]*\n|[^\n]+\Z", text)
    start = _top_level_line(lines, key)
    if start is None:
        separator = "" if not text or text.endswith("\n") else newline
        return text + separator + rendered
    end = start + 1
    while end < len(lines) and (lines[end][:1] in (" ", "\t") or not lines[end].strip()):
        end += 1
    # Blank lines and comments after the value belong to what follows, not to the old value.
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return "".join(lines[:start]) + rendered + "".join(lines[end:])


def _top_level_line(lines: list[str], key: str) -> int | None:
    pattern = re.compile(rf"^(?:{re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')\s*:")
    for index, line in enumerate(lines):
        if pattern.match(line):
            return index
    return None


def with_content_edits(data: bytes, path: Path, edits: Mapping[str, str]) -> bytes:
    """The item file `data` with the content fields named in edits (dotted names, as in
    feedback entries) set to the new strings; refused when a name is not a string field."""
    item = parse_item(data, path.suffix, path.stem, path)
    paths = _check_edits(item, edits)
    if item.format == "md":
        text = _edited_markdown(decode_text(data), item, edits, paths)
    else:
        document = copy.deepcopy(item.document)
        content = document.setdefault("contentData", {})
        for field, value in edits.items():
            _set_field(content, paths[field], value)
        text = dumps_json(document) if item.format == "json" else yamlio.dump(document)
    return _encoded(data, text, "edited", "shorten the text")


def _check_edits(item: Item, edits: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """The keys on the way to each edited field; InvalidItem when a name is no text field."""
    fields = flatten_strings(item.content)
    paths = _field_paths(item.content)
    for field, value in edits.items():
        if field not in fields:
            known = ", ".join(sorted(fields)) or "none"
            raise InvalidItem(
                f"{item.item_id} has no text field {field!r} to edit",
                hint=f"name one of its content fields: {known}",
            )
        if not isinstance(value, str):
            raise InvalidItem(f"the edit of {field!r} must be a string", hint="send text")
    return paths


def _field_paths(
    content: dict[str, Any], on_the_way: tuple[str, ...] = ()
) -> dict[str, tuple[str, ...]]:
    """Each string field's dotted name (as flatten_strings gives it) with the keys that lead to
    it: a key may hold a dot itself (`v1.2`), so a name is never split back into keys."""
    found: dict[str, tuple[str, ...]] = {}
    for key, value in content.items():
        if isinstance(value, dict):
            found.update(_field_paths(value, (*on_the_way, key)))
        elif isinstance(value, str):
            found[".".join((*on_the_way, key))] = (*on_the_way, key)
    return found


def _set_field(content: dict[str, Any], keys: tuple[str, ...], value: str) -> None:
    *parents, last = keys
    for key in parents:
        content = content[key]
    content[last] = value


def _edited_markdown(
    text: str, item: Item, edits: Mapping[str, str], paths: Mapping[str, tuple[str, ...]]
) -> str:
    bounds = split_front_matter(text)
    front = text[bounds.start : bounds.end]
    body: str = edits.get("body", item.content["body"])
    expected = copy.deepcopy(item.document)
    expected["body"] = body
    for field, value in edits.items():
        if field != "body":
            _set_field(expected, paths[field], value)
            if len(paths[field]) == 1:
                front = _set_top_level_key(front, field, value)
    edited = text[: bounds.start] + front + text[bounds.end : bounds.body] + body
    if _reads_as(edited, item, expected):
        return edited
    front_fields = {key: value for key, value in expected.items() if key != "body"}
    return text[: bounds.start] + yamlio.dump(front_fields) + text[bounds.end : bounds.body] + body


def _encoded(data: bytes, text: str, how: str, hint: str) -> bytes:
    """The new text as the file's bytes (keeping a byte-order mark); refused over 1 MiB."""
    new_data = (BOM if data.startswith(BOM) else b"") + text.encode("utf-8")
    if len(new_data) > MAX_ITEM_BYTES:
        raise ItemError(
            f"{how}, the item would be {len(new_data):,} bytes, over the 1 MiB limit", hint=hint
        )
    return new_data
