"""JSON text as feedbackd writes and accepts it: pure functions, no files.

A value that a command prints, the API answers or a file keeps as a JSON object says itself one
way: a dataclass (or, for a file's entries checked against the contract, a pydantic model) with
`to_json()`, the object as `json.dumps` writes it, and `from_json` where it is read back: the
`ToJson` protocol.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Collection
from typing import Any, Protocol, runtime_checkable

from feedbackd.core.errors import InvalidFeedback
from feedbackd.core.wording import quoted


@runtime_checkable
class ToJson(Protocol):
    """A value that says itself as a JSON object: its keys and values, ready for `json.dumps`."""

    def to_json(self) -> dict[str, Any]: ...


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


# --- reading JSON that someone else wrote ---------------------------------------------------------
# Items, ratings, record payloads and request bodies hold a handful of fields and small nested
# blocks: anything deeper is not one of them, and refusing it keeps every later walk of the value
# far from Python's recursion limit.
MAX_NESTING = 64
# Python refuses to turn more than 4,300 digits into an int, with a ValueError no reader expects;
# no count, price or rating needs more than a few digits.
MAX_INTEGER_DIGITS = 100


class MalformedJson(InvalidFeedback):
    """JSON text feedbackd refuses; `what` is the problem alone, `message` adds the position."""

    def __init__(
        self, what: str, *, hint: str, line: int | None = None, column: int | None = None
    ) -> None:
        where = "" if line is None else f" (line {line}, column {column})"
        super().__init__(what + where, hint=hint)
        self.what = what
        self.line = line
        self.column = column


def load_strict_json(text: str, max_nesting: int = MAX_NESTING) -> Any:
    """JSON text as plain values, or MalformedJson saying what is wrong and where.

    Stricter than json.loads, the same for every reader (item files, rating files and
    submissions, record payloads, HTTP bodies): a key given twice in one object (json.loads
    keeps the last one silently), NaN and Infinity, integers of more than 100 digits, nesting
    deeper than `max_nesting` and escapes of half a character pair are all refused.
    """
    try:
        value = json.loads(
            text,
            object_pairs_hook=_object_of_unique_keys,
            parse_constant=_refuse_constant,
            parse_int=_bounded_int,
        )
    except json.JSONDecodeError as exc:
        raise _syntax_error(exc, text) from None
    except RecursionError:
        raise _too_deep(max_nesting) from None
    _check_nesting(value, max_nesting)
    half = half_character(value) if "\\u" in text else None
    if half is not None:
        raise MalformedJson(
            f"the JSON holds {half}, half of a character pair",
            hint="write the character itself, or both halves of its escape pair",
        )
    return value


def _syntax_error(exc: json.JSONDecodeError, text: str) -> MalformedJson:
    # An unterminated string can only run to the end of the text: a newline would stop it first.
    if exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string"):
        return MalformedJson(
            "the JSON ends before it is complete",
            hint="add the missing end (a closing quote, } or ]); a file that a program is still "
            "writing is read again once it is complete",
            line=exc.lineno,
            column=exc.colno,
        )
    problem = exc.msg.removesuffix(" at")  # "Invalid control character at": the place follows
    return MalformedJson(
        f"invalid JSON: {problem[:1].lower()}{problem[1:]}",
        hint="fix the JSON at that position (a missing comma, quote or bracket is the usual cause)",
        line=exc.lineno,
        column=exc.colno,
    )


def _object_of_unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise MalformedJson(
                f"the key {quoted(key)} appears twice in one object",
                hint="keep one of the two values and delete the other",
            )
        result[key] = value
    return result


def _refuse_constant(name: str) -> Any:
    raise MalformedJson(
        f"{name} is not a JSON value", hint="write the number as a string or use null instead"
    )


def _bounded_int(digits: str) -> int:
    count = len(digits.lstrip("-"))
    if count > MAX_INTEGER_DIGITS:
        raise MalformedJson(
            f"a number of {count:,} digits (at most {MAX_INTEGER_DIGITS} are accepted)",
            hint="write a number that long as a string",
        )
    return int(digits)


def _check_nesting(value: Any, limit: int) -> None:
    pending = [(value, 1)]
    while pending:
        current, depth = pending.pop()
        if depth > limit:
            raise _too_deep(limit)
        if isinstance(current, dict):
            pending.extend((child, depth + 1) for child in current.values())
        elif isinstance(current, list):
            pending.extend((child, depth + 1) for child in current)


def _too_deep(limit: int) -> MalformedJson:
    return MalformedJson(
        f"the JSON is nested more than {limit} levels deep",
        hint="flatten it: fields and small nested blocks are all it needs",
    )


def load_json_object(text: str, what: str) -> dict[str, Any]:
    """`load_strict_json` of text that must hold one object; `what` names the text in the
    message (`--json`, `the body`)."""
    value = load_strict_json(text)
    if not isinstance(value, dict):
        raise MalformedJson(
            f"{what} must be a JSON object, not {json_kind(value)}",
            hint='send an object of fields: {"name": value, ...}',
        )
    return value


def refuse_unknown_keys(data: dict[str, Any], allowed: Collection[str]) -> None:
    """InvalidFeedback naming the first key that is not allowed (and the allowed one it
    resembles): a misspelt field must not be silently ignored."""
    unknown = sorted(set(data) - set(allowed))
    if not unknown:
        return
    close = difflib.get_close_matches(unknown[0], sorted(allowed), n=1)
    guess = f" (did you mean `{close[0]}`?)" if close else ""
    raise InvalidFeedback(
        f"unknown field `{unknown[0]}`{guess}", hint=f"allowed: {', '.join(sorted(allowed))}"
    )


def json_kind(value: Any) -> str:
    """What a JSON value is, in words: `an object`, `a list`, `a string`, ..."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "true/false"
    return "null" if value is None else "a number"
