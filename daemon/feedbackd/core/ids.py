"""Ids: the rule every agent, item, skill and category id must follow, and the ids feedbackd makes.

A name used as a folder or file name must follow ID_PATTERN (and hold no `..`), so that no id can
lead outside the workspace. The records feedbackd writes get ids `{prefix}-{unix ms}-{6 random
characters}`; each kind of record keeps the prefix and alphabet it has always had, because the
ids already stored must keep meaning the same; their random characters come from the caller (a
`Draw`: edges/randomness.py), as the core holds no randomness. A record that is one decision
however many machines make it (a price cut) gets an id derived from what it is instead
(`derived_id`).
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from feedbackd.core.errors import InvalidId
from feedbackd.core.timeutil import unix_ms
from feedbackd.core.wording import quoted

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
ID_RULE = "1-128 characters from A-Z a-z 0-9 . _ -, starting with a letter or digit"

LOWER_ALNUM = string.ascii_lowercase + string.digits
LOWER_HEX = "0123456789abcdef"
RANDOM_CHARS = 6


def validate_id(value: str, kind: str = "id") -> str:
    """Return value if it is a safe agent/item/skill id, else raise InvalidId saying why."""
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value) or ".." in value:
        raise InvalidId(f"{kind} {quoted(value)} is not a valid id", hint=f"use {ID_RULE}")
    return value


def is_valid_id(value: str) -> bool:
    return bool(ID_PATTERN.fullmatch(value)) and ".." not in value


def shown_name(name: str) -> str:
    """A file name as a curator can read and type it: quoted, with line breaks and tabs
    visible, and each byte that is not UTF-8 (read with surrogateescape) as `\\xNN`."""
    return re.sub(r"\\udc([89a-f][0-9a-f])", r"\\x\1", repr(name))


def is_utf8(text: str) -> bool:
    """False when the text holds what UTF-8 cannot encode: a file name's bytes that are not
    UTF-8 (read with surrogateescape), or half of a character pair read leniently."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_path(path: str) -> str:
    """A path on one line of output: as it is, unless it holds a line break, a tab, another
    control character or a byte that is not UTF-8; then quoted as shown_name quotes it."""
    return path if path.isprintable() else shown_name(path)


@dataclass(frozen=True)
class IdKind:
    """How the ids of one kind of record look: `{prefix}-{unix ms}-{6 of alphabet}`."""

    prefix: str
    alphabet: str


FEEDBACK_ENTRY = IdKind("fb", LOWER_ALNUM)  # SPEC §4: fb-{unix ms}-{6 random [a-z0-9]}
MEMORY_RECORD = IdKind("mem", LOWER_ALNUM)
DECISION = IdKind("d", LOWER_HEX)
PRICE_CHANGE = IdKind("price", LOWER_HEX)


# `count` characters of `alphabet`, drawn at random (edges.randomness.random_chars).
Draw = Callable[[str, int], str]


def new_id(kind: IdKind, now: datetime, draw: Draw) -> str:
    """A fresh id of that kind, made at `now`; `draw` gives its random characters."""
    suffix = draw(kind.alphabet, RANDOM_CHARS)
    if len(suffix) != RANDOM_CHARS or not set(suffix) <= set(kind.alphabet):
        raise ValueError(f"{suffix!r} is not {RANDOM_CHARS} characters of {kind.alphabet!r}")
    return f"{kind.prefix}-{unix_ms(now)}-{suffix}"


DERIVED_CHARS = 16
# A derived id, or one made from it (`mem-price-…`): random ids hold their time, and a `-` in it.
_DERIVED = re.compile(r"(?:[a-z]+-)+[0-9a-f]{16}\Z")


def derived_id(kind: IdKind, *parts: str) -> str:
    """`{prefix}-{16 hex}`, the same wherever it is made from the same parts: two machines
    that make the same decision on their own give it one id, so merging keeps it once."""
    digest = hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()
    return f"{kind.prefix}-{digest[:DERIVED_CHARS]}"


def is_derived_id(value: str) -> bool:
    """True for an id `derived_id` made (or one made from it): a record that is one decision
    wherever it was made, so any copy of it is as good as another."""
    return bool(_DERIVED.match(value))
