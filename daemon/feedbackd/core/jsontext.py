"""JSON text as feedbackd writes and accepts it: pure functions, no files."""

from __future__ import annotations

import json
from typing import Any


def dumps_json(value: Any) -> str:
    """JSON as feedbackd writes it: 2-space indent, UTF-8 kept readable, trailing newline."""
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def half_character(value: Any) -> str | None:
    """The first `\\uD800`-`\\uDFFF` escape in a parsed JSON or YAML value that stands alone.

    Such an escape decodes to half of a character pair, which no UTF-8 file can hold: written
    back it would fail, so readers refuse it up front. Returns it spelled as an escape, or None.
    """
    pending = [value]
    while pending:
        current = pending.pop()
        if isinstance(current, str):
            try:
                current.encode("utf-8")
            except UnicodeEncodeError as error:
                return f"\\u{ord(current[error.start]):04x}"
        elif isinstance(current, dict):
            pending.extend(current.keys())
            pending.extend(current.values())
        elif isinstance(current, list):
            pending.extend(current)
    return None
