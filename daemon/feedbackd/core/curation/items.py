"""Curator items: read `.json`, `.yaml`/`.yml` and `.md` drafts as plain data, and diff them.

Reading is strict because a file that cannot be read is never moved or changed: every refusal
says what is wrong (with line and column where known) and how to fix it. Diffing is pure: the
corrections an approval records are computed from two content mappings, nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

from feedbackd.core.errors import InvalidId, InvalidItem
from feedbackd.core.formats import yamlio
from feedbackd.core.formats.jsontext import (
    MAX_NESTING,
    MalformedJson,
    half_character,
    json_kind,
    load_strict_json,
)
from feedbackd.core.ids import validate_id
from feedbackd.core.wording import quoted

MAX_ITEM_BYTES = 1024 * 1024

ItemFormat = Literal["json", "yaml", "md"]
FORMATS: dict[str, ItemFormat] = {".json": "json", ".yaml": "yaml", ".yml": "yaml", ".md": "md"}
MD_RESERVED_KEYS = frozenset(
    {
        "id",
        "agentId",
        "collection",
        "slug",
        "generatedAt",
        "originalContentData",
        "rejectionFeedback",
        "curator",
        "status",
    }
)
BOM = b"\xef\xbb\xbf"
_CURATOR = re.compile(
    r'^(?P<name>[^<>"\x00-\x1f\x7f]*[^<>"\s\x00-\x1f\x7f])\s*<(?P<email>[^<>\s@]+@[^<>\s@]+)>$'
)
_CURATOR_HINT = 'write it as "Name <email>", e.g. "Ada Curator <ada@example.org>"'
_WRAP_HINT = "make the item an object with a contentData field holding the draft's fields"
_PLAIN_YAML_HINT = (
    "items are plain data: write each value out in full (no anchors &, aliases * or tags !)"
)
# The usual slip in a YAML item: a value holding `: ` or ` #` left unquoted.
_QUOTE_HINT = 'a value holding ": " or " #" needs quotes, e.g. title: "Postgres: five indexes"'


# Where a key of the item's top-level mapping was written: (line, column), 1-based, if known.
Locator = Callable[[str], tuple[int, int] | None]


class ItemError(InvalidItem):
    """An item that cannot be read; `what` is the problem alone, `message` adds the position."""

    def __init__(
        self, what: str, *, hint: str, line: int | None = None, column: int | None = None
    ) -> None:
        super().__init__(what + _where(line, column), hint=hint)
        self.what = what
        self.line = line
        self.column = column
        self.path: Path | None = None


def _where(line: int | None, column: int | None) -> str:
    if line is None:
        return ""
    return f" (line {line}, column {column})" if column else f" (line {line})"


@dataclass(frozen=True)
class Item:
    """One draft as plain data; `content` is what the curator edits and approval diffs."""

    item_id: str
    path: Path | None
    format: ItemFormat
    content: dict[str, Any]
    original: dict[str, Any] | None
    rejection_feedback: str | None
    curator: str | None
    document: dict[str, Any]


@dataclass(frozen=True)
class Correction:
    """One field the curator changed: dotted name, and both values exactly as written."""

    field: str
    original: str
    corrected: str


def item_format(path: Path) -> ItemFormat | None:
    """The item format a file name stands for, or None when it is not an item file."""
    return FORMATS.get(path.suffix.lower())


# ---------------------------------------------------------------------------------------------
# Reading


def check_size(size: int) -> None:
    if size > MAX_ITEM_BYTES:
        raise ItemError(
            f"the file is {size:,} bytes, over the limit of 1 MiB ({MAX_ITEM_BYTES:,} bytes)",
            hint="keep items under 1 MiB: move large assets out of the item and link to them",
        )


def parse_item(
    data: bytes, suffix: str, item_id: str, path: Path | None = None, *, own_id: bool = False
) -> Item:
    """Parse and check an item from its bytes; pure (`path` is only carried along).

    `own_id`: an item that is no file of an agent's folders (a task given to `prompt --for`),
    whose `id`, if it writes one, need not be its file's name; `item_id` then stands in."""
    try:
        return _parse(data, suffix, item_id, path, own_id)
    except ItemError as exc:
        exc.path = path
        raise


def _parse(data: bytes, suffix: str, item_id: str, path: Path | None, own_id: bool) -> Item:
    fmt = FORMATS.get(suffix.lower())
    if fmt is None:
        raise ItemError(
            f"{suffix or 'a file without extension'} is not an item format",
            hint="name item files .json, .yaml, .yml or .md",
        )
    _check_file_name(item_id, suffix)
    check_size(len(data))
    text = decode_text(data)
    if not text.strip():
        raise ItemError("the file is empty", hint=_empty_hint(fmt))
    if fmt == "md":
        return _whole_characters(_markdown_item(text, item_id, path, own_id))
    document, locate = _load_json(text) if fmt == "json" else _load_yaml_item(text)
    return _item_of(document, item_id, path, fmt, suffix, locate, own_id)


def item_from_object(document: dict[str, Any], item_id: str, path: Path | None) -> Item:
    """An item held inside another JSON document (an entry of webhouse's curation queue),
    checked as a `.json` item file with that id is."""
    return _item_of(document, item_id, path, "json", ".json", _nowhere)


def _item_of(
    document: dict[str, Any],
    item_id: str,
    path: Path | None,
    fmt: ItemFormat,
    suffix: str,
    locate: Locator,
    own_id: bool = False,
) -> Item:
    header = _check_header(document, item_id, suffix, locate, own_id)
    content = _object_field(document, "contentData", locate, required=True)
    assert content is not None  # required=True never returns None
    return _whole_characters(Item(item_id, path, fmt, content, **header, document=document))


def _whole_characters(item: Item) -> Item:
    half = half_character(item.document)
    if half is not None:
        raise ItemError(
            f"the escape {half} is half of a character pair, which no text file can hold",
            hint="write the character itself, or both halves of its escape pair",
        )
    return item


def _check_file_name(item_id: str, suffix: str) -> None:
    try:
        validate_id(item_id, "item id")
    except InvalidId:
        raise ItemError(
            f"the file name gives item id {item_id!r}, which is not a valid id",
            hint=f"rename the file to <id>{suffix}, where <id> is 1-128 characters from "
            "A-Z a-z 0-9 . _ -, starting with a letter or digit",
        ) from None


def _empty_hint(fmt: ItemFormat) -> str:
    shape = {
        "json": 'a JSON object such as {"contentData": {"title": "..."}}',
        "yaml": "a mapping with a contentData block",
        "md": "front matter between two --- lines, then the body",
    }[fmt]
    return f"if a program is still writing it, wait; otherwise write the item: {shape}"


def decode_text(data: bytes) -> str:
    # A byte-order mark is how some editors say "UTF-8"; it is not part of the item.
    offset = len(BOM) if data.startswith(BOM) else 0
    try:
        return data[offset:].decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = offset + exc.start
        line = data.count(b"\n", 0, bad) + 1
        line_start = data.rfind(b"\n", 0, bad) + 1
        column = len(data[line_start:bad].decode("utf-8", errors="replace")) + 1
        raise ItemError(
            f"the file is not UTF-8: byte 0x{data[bad]:02x} at byte offset {bad} cannot be read",
            hint="save the file with UTF-8 encoding (most editors offer it under Save As)",
            line=line,
            column=column,
        ) from None


# ---------------------------------------------------------------------------------------------
# JSON and YAML documents


def _load_json(text: str) -> tuple[dict[str, Any], Locator]:
    value = load_json_value(text)
    return _top_mapping(value, "a JSON object", _WRAP_HINT), _nowhere


def load_json_value(text: str, extra_nesting: int = 0) -> Any:
    """JSON text as plain values, read as strictly as every JSON feedbackd accepts (no repeated
    keys, no NaN, no runaway nesting); ItemError says where it breaks. A document that holds
    items (a list of them) may nest `extra_nesting` levels deeper."""
    try:
        return load_strict_json(text, MAX_NESTING + extra_nesting)
    except MalformedJson as exc:
        raise ItemError(exc.what, hint=exc.hint, line=exc.line, column=exc.column) from None


def _nowhere(key: str) -> tuple[int, int] | None:
    return None


def _load_yaml_item(text: str) -> tuple[dict[str, Any], Locator]:
    raw, locate = _load_yaml(text)
    if raw is None:
        raise ItemError("the file holds no item, only comments", hint=_empty_hint("yaml"))
    return _top_mapping(raw, "a mapping of keys to values", _WRAP_HINT), locate


def _load_yaml(text: str, line_offset: int = 0) -> tuple[Any, Locator]:
    """Plain data (None for no document) and where its top-level keys were written; a line
    offset means the text is a Markdown item's front matter."""
    if _flow_nesting(text) > MAX_NESTING:
        raise _too_deep()
    try:
        raw = yamlio.load(text, positions=False)
    except yamlio.YamlError as exc:
        line = exc.line + line_offset if exc.line is not None else None
        raise ItemError(
            f"invalid YAML: {exc.message}",
            hint=_yaml_hint(exc, front_matter=line_offset > 0),
            line=line,
            column=exc.column,
        ) from None
    except RecursionError:
        raise _too_deep() from None

    def locate(key: str) -> tuple[int, int] | None:
        # Positions are only needed for an error message, so only then is the text read again
        # with the slower loader that keeps them.
        position = yamlio.key_position(yamlio.load(text), key)
        return None if position is None else (position[0] + line_offset, position[1])

    # to_plain recurses, so the depth is checked on ruamel's nodes first.
    _check_nesting(raw)
    return yamlio.to_plain(raw), locate


def _yaml_hint(error: yamlio.YamlError, *, front_matter: bool) -> str:
    if error.not_plain:
        return _PLAIN_YAML_HINT
    where = "the front matter" if front_matter else "the YAML"
    return f"fix {where} at that position; {_QUOTE_HINT}"


def _flow_nesting(text: str) -> int:
    """Deepest run of unclosed [ and { (quotes not considered: an upper bound, never less).

    The YAML parser slows down with every level of flow nesting (seconds for a few thousand
    levels), so a file of nothing but brackets is refused before it reaches the parser.
    """
    depth = deepest = 0
    for bracket in re.finditer(r"[\[\]{}]", text):
        depth = depth + 1 if bracket.group() in "[{" else max(depth - 1, 0)
        deepest = max(deepest, depth)
    return deepest


def _top_mapping(value: Any, shape: str, hint: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ItemError(f"the item must be {shape}, not {json_kind(value)}", hint=hint)
    return value


def _check_nesting(value: Any, limit: int = MAX_NESTING) -> None:
    pending = [(value, 1)]
    while pending:
        current, depth = pending.pop()
        if depth > limit:
            raise _too_deep()
        children = current.values() if isinstance(current, dict) else current
        if isinstance(current, dict | list):
            pending.extend((child, depth + 1) for child in children)


def _too_deep() -> ItemError:
    return ItemError(
        f"the item is nested more than {MAX_NESTING} levels deep",
        hint="flatten the content: items hold fields and small nested blocks",
    )


# ---------------------------------------------------------------------------------------------
# Fields every format shares


def _check_header(
    fields: dict[str, Any], item_id: str, suffix: str, locate: Locator, own_id: bool = False
) -> dict[str, Any]:
    """Check id, originalContentData, rejectionFeedback and curator; return Item keywords."""
    _check_id_field(fields, item_id, suffix, locate, own_id)
    return {
        "original": _object_field(fields, "originalContentData", locate, required=False),
        "rejection_feedback": _feedback_field(fields, locate),
        "curator": _curator_field(fields, locate),
    }


def _check_id_field(
    fields: dict[str, Any], item_id: str, suffix: str, locate: Locator, own_id: bool
) -> None:
    written = fields.get("id")
    if written is None:
        return
    if isinstance(written, bool) or not isinstance(written, str | int):
        raise _field_error(
            f"id must be a string, not {json_kind(written)}", "id", locate, f'write id: "{item_id}"'
        )
    if str(written) != item_id and not own_id:
        raise _field_error(
            f"the id field says {str(written)!r} but the file name says {item_id!r}",
            "id",
            locate,
            f"make them agree: set id to {item_id!r}, or rename the file to {written}{suffix}",
        )


def _object_field(
    fields: dict[str, Any], key: str, locate: Locator, *, required: bool
) -> dict[str, Any] | None:
    value = fields.get(key)
    if value is None and not required:
        return None
    if key not in fields:
        raise ItemError(
            f"{key} is missing",
            hint=f"add a {key} object holding the draft's fields (title, body, ...)",
        )
    if not isinstance(value, dict):
        raise _field_error(
            f"{key} must be an object, not {json_kind(value)}",
            key,
            locate,
            f"make {key} an object of field names to values",
        )
    return value


def _feedback_field(fields: dict[str, Any], locate: Locator) -> str | None:
    value = fields.get("rejectionFeedback")
    if value is None or isinstance(value, str):
        return value
    raise _field_error(
        f"rejectionFeedback must be a string, not {json_kind(value)}",
        "rejectionFeedback",
        locate,
        "write the rejection notes as text in quotes",
    )


def _curator_field(fields: dict[str, Any], locate: Locator) -> str | None:
    value = fields.get("curator")
    if value is None:
        return None
    curator = parse_curator(value) if isinstance(value, str) else None
    if curator is None:
        shown = quoted(value) if isinstance(value, str) else repr(value)[:40]
        what = f'curator {shown} is not of the form Name <email> (a name without < > or ")'
        raise _field_error(what, "curator", locate, _CURATOR_HINT)
    return curator


def parse_curator(value: str) -> str | None:
    """`Name <email>` tidied (surrounding space dropped), or None when it is not that shape."""
    match = _CURATOR.match(value.strip())
    if match is None:
        return None
    return f"{match['name'].strip()} <{match['email']}>"


def _field_error(what: str, key: str, locate: Locator, hint: str) -> ItemError:
    position = locate(key)
    line, column = position if position else (None, None)
    return ItemError(what, hint=hint, line=line, column=column)


# ---------------------------------------------------------------------------------------------
# Markdown items: YAML front matter and a body


class _FrontMatter(NamedTuple):
    """Offsets into the text: YAML from `start` to `end`, body from `body`."""

    start: int
    end: int
    body: int


def split_front_matter(text: str) -> _FrontMatter:
    first_end = text.find("\n")
    if first_end < 0 or text[:first_end].rstrip() != "---":
        raise ItemError(
            "the Markdown item has no front matter (its first line must be ---)",
            hint="start the file with a --- line, the item's fields as YAML, another --- line, "
            "then the body",
            line=1,
        )
    position = first_end + 1
    while position < len(text):
        end = text.find("\n", position)
        line_end = len(text) if end < 0 else end
        if text[position:line_end].rstrip() == "---":
            return _FrontMatter(first_end + 1, position, min(line_end + 1, len(text)))
        position = line_end + 1
    raise ItemError(
        "the front matter opened on line 1 has no closing --- line",
        hint="add a --- line after the front matter fields, before the body",
        line=1,
    )


def _markdown_item(text: str, item_id: str, path: Path | None, own_id: bool) -> Item:
    bounds = split_front_matter(text)
    raw, locate = _load_yaml(text[bounds.start : bounds.end], line_offset=1)
    front = _top_mapping(
        {} if raw is None else raw,
        "front matter of key: value lines",
        "write the front matter as YAML key: value lines between the --- lines",
    )
    if "body" in front:
        raise _field_error(
            "the front matter has a body field, but the body is the text after the front matter",
            "body",
            locate,
            "rename the body field in the front matter",
        )
    header = _check_header(front, item_id, ".md", locate, own_id)
    body = text[bounds.body :]
    content = {key: value for key, value in front.items() if key not in MD_RESERVED_KEYS}
    content["body"] = body
    return Item(item_id, path, "md", content, **header, document={**front, "body": body})


# ---------------------------------------------------------------------------------------------
# Approval diff


def diff_content(original: dict[str, Any], current: dict[str, Any]) -> list[Correction]:
    """Corrections from original to current, in the depth-first field order of `current`.

    Only strings on both sides count; line-ending and trailing-space differences do not.
    """
    return _diff(original, current, "")


def _diff(original: dict[str, Any], current: dict[str, Any], prefix: str) -> list[Correction]:
    corrections: list[Correction] = []
    for key, now in current.items():
        field = f"{prefix}{key}"
        before = original.get(key)
        if isinstance(now, dict) and isinstance(before, dict):
            corrections.extend(_diff(before, now, f"{field}."))
        elif isinstance(now, str) and isinstance(before, str) and _differs(before, now):
            corrections.append(Correction(field, before, now))
    return corrections


def unrecorded_changes(original: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """The content fields on both sides whose change yields no correction, sorted: lists,
    numbers, yes/no values and nulls (only text is compared), and a value that changed kind.
    An approval says so, so that no edit is dropped silently."""
    return sorted(_unrecorded(original, current, ""))


def _unrecorded(original: dict[str, Any], current: dict[str, Any], prefix: str) -> list[str]:
    found: list[str] = []
    for key, now in current.items():
        if key not in original:
            continue  # a field one side lacks is not an edit of a value
        field, before = f"{prefix}{key}", original[key]
        if isinstance(now, dict) and isinstance(before, dict):
            found.extend(_unrecorded(before, now, f"{field}."))
        elif not (isinstance(now, str) and isinstance(before, str)) and _unequal(before, now):
            found.append(field)
    return found


def _unequal(before: object, now: object) -> bool:
    """Values that differ, a number and a yes/no of the same worth too (`1` and `true`)."""
    return type(before) is not type(now) or before != now


# Who decided, the decision and a rejection's note (kept when a rejected item is moved back to
# queue/ and approved later): they change with decisions and are never content.
_DECISION_KEYS = frozenset({"curator", "status", "rejectionFeedback"})


def outside_content(item: Item) -> dict[str, Any]:
    """The item's fields that are not its content (an approval records none of them): in JSON
    and YAML every top-level key but contentData, in Markdown the reserved front matter keys;
    the keys of decisions (_DECISION_KEYS) left out."""
    if item.format == "md":
        outside = {k: v for k, v in item.document.items() if k in MD_RESERVED_KEYS}
    else:
        outside = {k: v for k, v in item.document.items() if k != "contentData"}
    return {k: v for k, v in outside.items() if k not in _DECISION_KEYS}


def changed_keys(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The keys added, removed or changed from before to after, sorted."""
    missing = object()  # a key set to null differs from no key
    keys = before.keys() | after.keys()
    return sorted(key for key in keys if before.get(key, missing) != after.get(key, missing))


def flatten_strings(content: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Every string field reachable through objects, by its dotted name (`seo.metaTitle`): the
    names feedback entries and a curator's edits use."""
    found: dict[str, str] = {}
    for key, value in content.items():
        if isinstance(value, dict):
            found.update(flatten_strings(value, f"{prefix}{key}."))
        elif isinstance(value, str):
            found[f"{prefix}{key}"] = value
    return found


def _differs(before: str, now: str) -> bool:
    return normalised(before) != normalised(now)


def normalised(value: str) -> str:
    """A value as curators read it: `\n` line endings, no trailing white space (a Markdown
    body ends with its newline; an editor may add CRLF endings or a blank line)."""
    return value.replace("\r\n", "\n").replace("\r", "\n").rstrip()
