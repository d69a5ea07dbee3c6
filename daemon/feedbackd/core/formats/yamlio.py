"""The only ruamel.yaml user: YAML as plain data, with positions for error messages.

Items and configuration are plain data, so anchors, aliases and tags are refused rather than
expanded (they let a small file grow huge, or smuggle types in).
"""

from __future__ import annotations

import io
from datetime import date, datetime
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent, NodeEvent, ScalarEvent


class YamlError(Exception):
    """YAML that cannot be read as plain data; line and column are 1-based when known.
    `not_plain`: the YAML is well formed but uses an anchor, alias or tag."""

    def __init__(
        self,
        message: str,
        line: int | None = None,
        column: int | None = None,
        *,
        not_plain: bool = False,
    ):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.not_plain = not_plain

    def where(self) -> str:
        if self.line is None:
            return ""
        return (
            f" (line {self.line}, column {self.column})" if self.column else f" (line {self.line})"
        )


def _parser(positions: bool) -> YAML:
    # The round-trip loader remembers where each key was written, for error messages; the safe
    # loader uses libyaml (ruamel.yaml.clib), about ten times faster on a 1 MiB item.
    yaml = YAML(typ="rt") if positions else YAML(typ="safe")
    yaml.allow_duplicate_keys = False
    return yaml


def load(text: str, *, positions: bool = True) -> Any:
    """Parse one YAML document; with positions, mappings keep them (see `key_position`)."""
    yaml = _parser(positions)
    try:
        _refuse_non_plain(yaml, text)
        documents = list(yaml.load_all(text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        if mark is None:
            raise YamlError(problem) from None
        raise YamlError(problem, mark.line + 1, mark.column + 1) from None
    except YAMLError as exc:
        raise YamlError(str(exc).strip().splitlines()[0]) from None
    if len(documents) > 1:
        raise YamlError("more than one YAML document (a second `---` line)")
    return documents[0] if documents else None


def _refuse_non_plain(yaml: YAML, text: str) -> None:
    for event in yaml.parse(io.StringIO(text)):
        line, column = event.start_mark.line + 1, event.start_mark.column + 1
        if isinstance(event, AliasEvent):
            what = f"alias *{event.anchor}"
        elif isinstance(event, NodeEvent) and event.anchor:
            what = f"anchor &{event.anchor}"
        elif getattr(event, "tag", None) is not None and not _implicit(event):
            what = f"tag {getattr(event, 'tag', '')}"
        else:
            continue
        raise YamlError(f"YAML {what} is not allowed", line, column, not_plain=True)


def _implicit(event: Any) -> bool:
    if isinstance(event, ScalarEvent):
        return any(event.implicit)
    return bool(getattr(event, "implicit", True))


def key_position(mapping: Any, key: str) -> tuple[int, int] | None:
    """1-based (line, column) of key in a mapping returned by `load`, if known."""
    lc = getattr(mapping, "lc", None)
    if lc is None:
        return None
    try:
        line, column = lc.key(key)
    except (KeyError, TypeError, AttributeError):
        return None
    return line + 1, column + 1


def item_position(sequence: Any, index: int) -> tuple[int, int] | None:
    """1-based (line, column) of a list's item in a document returned by `load`, if known."""
    lc = getattr(sequence, "lc", None)
    if lc is None:
        return None
    try:
        line, column = lc.item(index)
    except (KeyError, TypeError, AttributeError, IndexError):
        return None
    return int(line) + 1, int(column) + 1


def to_plain(value: Any) -> Any:
    """Strip ruamel's wrappers: dicts, lists, str, int, float, bool, None; dates as ISO strings."""
    if isinstance(value, dict):
        return {str(key): to_plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [to_plain(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return value


def dump(value: Any) -> str:
    """Plain data as block-style YAML (used for front matter that feedbackd writes)."""
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.allow_unicode = True
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
    buffer = io.StringIO()
    yaml.dump(value, buffer)
    return buffer.getvalue()
