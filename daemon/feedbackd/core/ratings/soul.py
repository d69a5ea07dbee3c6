"""SOUL.md: read an agent's persona and priced skills, and edit one price or description in place.

Pure text in, text out; no disk. The layout (SPEC section 6): `# Name` (the first level-1
heading), a description paragraph, then one `## Skill Name` section per skill. A section runs
until the next level-1 or level-2 heading (`### ` sub-headings stay inside it) or the end of the
file. A skill's price is a bare line `pricing: N` in its section (none means DEFAULT_PRICE); its
description is the paragraph that starts at the first line after the heading that is neither blank
nor the pricing line. Lines inside fenced code blocks (``` or ~~~) and inside a leading YAML front
matter block are never headings, prices or descriptions.

Edits touch only the line they are about: a curator's formatting, comments, line endings (CRLF
files stay CRLF) and a missing final newline all survive every automatic price cut.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Context, Decimal

from feedbackd.core.errors import InvalidItem, NotFound
from feedbackd.core.ids import is_valid_id

DEFAULT_PRICE = 10.0
MAX_SOUL_CHARS = 1024 * 1024
MAX_DESCRIPTION_CHARS = 2000

_PRICING_KEY = "pricing:"
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|[0-9]{1,9}[.)])(?:[ \t]|$)")
_QUOTE_OR_BREAK = re.compile(r" {0,3}(?:>|(?:-[ \t]*){3,}$|(?:\*[ \t]*){3,}$|(?:_[ \t]*){3,}$)")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
# Enough digits for any finite float, so rounding never fails on a huge price.
_WIDE = Context(prec=400)

# What each line is, as far as SOUL.md cares.
BLANK, H1, H2, SUB, PRICING, LIST, BLOCK, TEXT, CODE, META = (
    "blank",
    "h1",
    "h2",
    "sub",
    "pricing",
    "list",
    "block",
    "text",
    "code",
    "front matter",
)


@dataclass(frozen=True)
class Skill:
    """One `## Skill Name` section. Line numbers are 0-based indexes into the file's lines."""

    skill_id: str
    name: str
    price: float
    price_explicit: bool
    description: str
    heading_line: int
    pricing_line: int | None


@dataclass(frozen=True)
class Soul:
    """An agent's persona: its name, its description and its skills in file order."""

    name: str | None
    description: str
    skills: tuple[Skill, ...]

    def skill(self, skill_id: str) -> Skill | None:
        return next((s for s in self.skills if s.skill_id == skill_id), None)


@dataclass(frozen=True)
class _Section:
    skill: Skill
    end: int  # index of the first line after the section
    paragraph: tuple[int, int] | None  # [start, stop) of the description lines


@dataclass(frozen=True)
class _Layout:
    lines: list[str]  # with their line endings, so "".join(lines) is the text
    kinds: list[str]
    unclosed_fence: int | None
    soul: Soul
    sections: dict[str, _Section]

    def section(self, skill_id: str) -> _Section:
        found = self.sections.get(skill_id)
        if found is None:
            known = ", ".join(self.sections) or "none"
            raise NotFound(
                f'SOUL.md has no skill "{skill_id}" (skills: {known})',
                hint="add a `## Skill Name` section for it, or use one of the listed ids",
            )
        return found


# ---------------------------------------------------------------------------------------------
# Public API


def parse_soul(text: str) -> Soul:
    """Read SOUL.md text; raise InvalidItem naming the line when it cannot be read safely."""
    return _layout(text).soul


def skill_id_for(name: str) -> str:
    """The id of a skill heading: lowercased, spaces to `-`, anything outside [a-z0-9-] dropped."""
    kept = ("-" if ch.isspace() else ch for ch in name.lower())
    return "".join(ch for ch in kept if ch == "-" or ("a" <= ch <= "z") or ("0" <= ch <= "9"))


def format_price(value: float) -> str:
    """A price as SOUL.md writes it: rounded half-up to 2 decimals, no trailing zeros."""
    _check_price(value)
    rounded = Decimal(repr(float(value))).quantize(
        Decimal("0.01"), rounding=ROUND_HALF_UP, context=_WIDE
    )
    text = format(rounded, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def set_price(text: str, skill_id: str, price: float) -> str:
    """Set one skill's price: rewrite its `pricing:` value, or add the line at its section's end."""
    value = format_price(price)
    layout = _layout(text)
    section = layout.section(skill_id)
    if section.skill.pricing_line is not None:
        return _replace_price(layout.lines, section.skill.pricing_line, value)
    at = _end_of_content(layout, section)
    return _insert_line(layout.lines, at, f"{_PRICING_KEY} {value}")


def set_description(text: str, skill_id: str, description: str) -> str:
    """Replace one skill's description paragraph with one line, or add it under the heading."""
    line = _description_line(description)
    layout = _layout(text)
    section = layout.section(skill_id)
    if section.paragraph is None:
        return _insert_line(layout.lines, section.skill.heading_line + 1, line)
    start, stop = section.paragraph
    lines = layout.lines
    return "".join([*lines[:start], line + _ending(lines[stop - 1]), *lines[stop:]])


# ---------------------------------------------------------------------------------------------
# Lines and what they are


def _split_lines(text: str) -> list[str]:
    """Lines with their endings kept, split at `\\n` only, so joining them gives the text back."""
    parts = text.split("\n")
    last = parts.pop()
    lines = [part + "\n" for part in parts]
    return [*lines, last] if last else lines


def _content(line: str) -> str:
    return line.removesuffix("\n").removesuffix("\r")


def _ending(line: str) -> str:
    return line[len(_content(line)) :]


def _heading(content: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading such as `## Name ##`, or None for any other line."""
    stripped = content.lstrip(" ")
    if len(content) - len(stripped) > 3:
        return None
    level = len(stripped) - len(stripped.lstrip("#"))
    rest = stripped[level:]
    if not 1 <= level <= 6 or (rest and rest[0] not in " \t"):
        return None
    text = rest.strip(" \t")
    unclosed = text.rstrip("#")
    # A closing run of `#` counts only when separated by a space ("C#" keeps its `#`).
    if not unclosed or unclosed[-1] in " \t":
        text = unclosed.rstrip(" \t")
    return level, text


def _kind(content: str) -> str:
    """What a line outside code is: blank, heading, pricing, list item, block marker or text."""
    if not content.strip(" \t"):
        return BLANK
    heading = _heading(content)
    if heading is not None:
        return {1: H1, 2: H2}.get(heading[0], SUB)
    if content.startswith(_PRICING_KEY):
        return PRICING
    if _LIST_ITEM.match(content):
        return LIST
    return BLOCK if _QUOTE_OR_BREAK.match(content) else TEXT


def _front_matter_end(contents: list[str]) -> int:
    """Number of lines of a leading `---` YAML block (0 when there is none or it never closes)."""
    if not contents or contents[0].rstrip(" \t") != "---":
        return 0
    for i in range(1, len(contents)):
        if contents[i].rstrip(" \t") in ("---", "..."):
            return i + 1
    return 0


def _opens_fence(content: str) -> tuple[str, int] | None:
    match = _FENCE_OPEN.fullmatch(content)
    if match is None or (match[1][0] == "`" and "`" in match[2]):
        return None
    return match[1][0], len(match[1])


def _closes_fence(content: str, fence: tuple[str, int]) -> bool:
    stripped = content.lstrip(" ")
    run = stripped.rstrip(" \t")
    return len(content) - len(stripped) <= 3 and len(run) >= fence[1] and run == fence[0] * len(run)


def _classify(contents: list[str]) -> tuple[list[str], int | None]:
    """Kinds of all lines, and the line of a code fence that is never closed (if any)."""
    skip = _front_matter_end(contents)
    kinds = [META] * skip
    fence: tuple[str, int] | None = None
    opened_at: int | None = None
    for i in range(skip, len(contents)):
        content = contents[i]
        if fence is not None:
            kinds.append(CODE)
            fence = None if _closes_fence(content, fence) else fence
        elif (fence := _opens_fence(content)) is not None:
            kinds.append(CODE)
            opened_at = i
        else:
            kinds.append(_kind(content))
    return kinds, (opened_at if fence is not None else None)


# ---------------------------------------------------------------------------------------------
# Parsing


def _layout(text: str) -> _Layout:
    if len(text) > MAX_SOUL_CHARS:
        raise InvalidItem(
            f"SOUL.md holds {len(text)} characters; the limit is {MAX_SOUL_CHARS}",
            hint="keep SOUL.md to the persona and its skills; move long material elsewhere",
        )
    lines = _split_lines(text)
    contents = [_content(line) for line in lines]
    kinds, unclosed = _classify(contents)
    sections = _sections(contents, kinds)
    name, description = _persona(contents, kinds)
    skills = tuple(section.skill for section in sections.values())
    return _Layout(lines, kinds, unclosed, Soul(name, description, skills), sections)


def _next_heading(kinds: list[str], start: int) -> int:
    """Index of the first level-1 or level-2 heading at or after start (or the line count)."""
    return next((i for i in range(start, len(kinds)) if kinds[i] in (H1, H2)), len(kinds))


def _persona(contents: list[str], kinds: list[str]) -> tuple[str | None, str]:
    """The agent's name (first `# ` heading) and the paragraph that follows it."""
    h1 = next((i for i, kind in enumerate(kinds) if kind == H1), None)
    name = _heading_text(contents, h1) if h1 is not None else None
    start = 0 if h1 is None else h1 + 1
    span = _paragraph(kinds, start, _next_heading(kinds, start))
    return name or None, _paragraph_text(contents, span)


def _heading_text(contents: list[str], index: int) -> str:
    heading = _heading(contents[index])
    assert heading is not None, "only called on lines classified as headings"
    return heading[1]


def _paragraph(kinds: list[str], start: int, stop: int) -> tuple[int, int] | None:
    """[start, stop) of the paragraph at the first line that is not blank or a price, if text."""
    first = next((i for i in range(start, stop) if kinds[i] not in (BLANK, PRICING, META)), stop)
    if first == stop or kinds[first] != TEXT:
        return None
    last = next((i for i in range(first, stop) if kinds[i] != TEXT), stop)
    return first, last


def _paragraph_text(contents: list[str], span: tuple[int, int] | None) -> str:
    # A Markdown paragraph's line breaks are soft: it reads as one line of text.
    return "" if span is None else " ".join(contents[i].strip() for i in range(*span))


def _sections(contents: list[str], kinds: list[str]) -> dict[str, _Section]:
    sections: dict[str, _Section] = {}
    for heading in (i for i, kind in enumerate(kinds) if kind == H2):
        section = _section(contents, kinds, heading)
        earlier = sections.get(section.skill.skill_id)
        if earlier is not None:
            raise _duplicate(earlier.skill, section.skill)
        sections[section.skill.skill_id] = section
    return sections


def _section(contents: list[str], kinds: list[str], heading: int) -> _Section:
    end = _next_heading(kinds, heading + 1)
    name = _heading_text(contents, heading)
    skill_id = _checked_skill_id(name, heading)
    pricing_line = _pricing_line(kinds, heading, end, name)
    price = DEFAULT_PRICE if pricing_line is None else _price_value(contents, pricing_line)
    paragraph = _paragraph(kinds, heading + 1, end)
    description = _paragraph_text(contents, paragraph)
    skill = Skill(
        skill_id, name, price, pricing_line is not None, description, heading, pricing_line
    )
    return _Section(skill, end, paragraph)


def _checked_skill_id(name: str, heading: int) -> str:
    skill_id = skill_id_for(name)
    if not is_valid_id(skill_id):
        raise InvalidItem(
            f'line {heading + 1}: the skill heading "## {_shorten(name)}" gives the id '
            f'"{_shorten(skill_id)}", which is not a usable skill id',
            hint="start the skill name with a letter or digit and keep it under 128 characters",
        )
    return skill_id


def _duplicate(first: Skill, second: Skill) -> InvalidItem:
    return InvalidItem(
        f'line {second.heading_line + 1}: the skill heading "## {_shorten(second.name)}" gives '
        f'the id "{second.skill_id}", already used by "## {_shorten(first.name)}" on line '
        f"{first.heading_line + 1}",
        hint="rename one of the two skills so their ids differ",
    )


def _pricing_line(kinds: list[str], heading: int, end: int, name: str) -> int | None:
    found = [i for i in range(heading + 1, end) if kinds[i] == PRICING]
    if len(found) > 1:
        raise InvalidItem(
            f'lines {found[0] + 1} and {found[1] + 1}: the skill "{_shorten(name)}" has more '
            "than one `pricing:` line",
            hint="keep exactly one `pricing: N` line in each skill section",
        )
    return found[0] if found else None


def _price_value(contents: list[str], index: int) -> float:
    raw = contents[index][len(_PRICING_KEY) :].strip(" \t")
    value = float(raw) if _NUMBER.fullmatch(raw) else math.nan
    if not math.isfinite(value):
        raise InvalidItem(
            f'line {index + 1}: "{_shorten(contents[index])}" is not a price',
            hint="write a non-negative number, e.g. `pricing: 12` or `pricing: 9.5`",
        )
    return value


def _shorten(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------------
# Editing


def _check_price(value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidItem(f"a price must be a number, not {type(value).__name__}")
    try:
        usable = math.isfinite(value) and value >= 0
    except OverflowError:  # an int too large for a float
        usable = False
    if not usable:
        raise InvalidItem(
            f"a price must be a non-negative finite number, not {value!r}",
            hint="use a value such as 12 or 9.5",
        )


def _replace_price(lines: list[str], index: int, value: str) -> str:
    """The text with only the number on the pricing line changed; spacing and ending kept."""
    line = lines[index]
    content = _content(line)
    rest = content[len(_PRICING_KEY) :]
    gap = rest[: len(rest) - len(rest.lstrip(" \t"))]
    trail = rest[len(rest.rstrip(" \t")) :]
    new_line = f"{_PRICING_KEY}{gap}{value}{trail}{_ending(line)}"
    return "".join([*lines[:index], new_line, *lines[index + 1 :]])


def _end_of_content(layout: _Layout, section: _Section) -> int:
    """Where a line added at the end of a section goes: after its last non-blank line."""
    heading = section.skill.heading_line
    last = next(i for i in range(section.end - 1, heading - 1, -1) if layout.kinds[i] != BLANK)
    fence = layout.unclosed_fence
    if fence is not None and fence <= last:
        raise InvalidItem(
            f"line {fence + 1}: this code block is never closed, so a price added at the end "
            f'of skill "{section.skill.name}" would land inside it',
            hint="close the code block with a matching ``` (or ~~~) line",
        )
    return last + 1


def _insert_line(lines: list[str], at: int, content: str) -> str:
    """The text with one line inserted before index `at`, ended like its neighbours."""
    before = lines[:at]
    eol = _ending(before[-1]) or _file_ending(lines)
    if not _ending(before[-1]):
        # The file ends without a newline: end the old last line and keep that style.
        before[-1] += eol
        return "".join([*before, content])
    return "".join([*before, content + eol, *lines[at:]])


def _file_ending(lines: list[str]) -> str:
    return next((_ending(line) for line in lines if _ending(line)), "\n")


def _description_line(description: str) -> str:
    """A description as one line of plain text that reads back as the same paragraph."""
    line = " ".join(description.split())
    if not line:
        raise InvalidItem("a skill description cannot be empty", hint="give at least one word")
    if len(line) > MAX_DESCRIPTION_CHARS:
        raise InvalidItem(
            f"a skill description holds {len(line)} characters; the limit is "
            f"{MAX_DESCRIPTION_CHARS}",
            hint="describe the skill in a short paragraph",
        )
    if any(unicodedata.category(ch) == "Cc" for ch in line):
        raise InvalidItem("a skill description cannot hold control characters")
    if _kind(line) != TEXT or _opens_fence(line) is not None:
        raise InvalidItem(
            f'a skill description cannot start like "{_shorten(line, 20)}": it would read as '
            "a heading, list item, quote, code fence or pricing line",
            hint="start the description with a plain word",
        )
    return line
