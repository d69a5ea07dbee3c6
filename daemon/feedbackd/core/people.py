"""People in the learning history: a git identity `Name <email>`, and feedbackd's own."""

from __future__ import annotations

import re
from dataclasses import dataclass

from feedbackd.core.errors import InvalidItem
from feedbackd.core.wording import quoted

_EMAIL = re.compile(r"^[^<>\s]+$")
_PERSON = re.compile(r"^\s*([^<>\n]*?)\s*<([^<>\s]+)>\s*$")


@dataclass(frozen=True)
class Person:
    """A git identity, written `Name <email>`."""

    name: str
    email: str

    def __post_init__(self) -> None:
        # git would silently drop or mangle these characters in an identity; a double quote
        # lets a name pass for markup (`Evil" onmouseover="…`) where a tool shows authors.
        if not self.name.strip() or re.search(r'[<>"\x00-\x1f]', self.name):
            raise ValueError(
                f'bad name {quoted(self.name)}: it must be non-empty, without < > " or newlines'
            )
        if not _EMAIL.fullmatch(self.email):
            raise ValueError(
                f"bad email {quoted(self.email)}: it must be non-empty, without < > or spaces"
            )

    @classmethod
    def parse(cls, text: str) -> Person:
        """`"Ada Curator <ada@example.org>"` → Person; anything else raises ValueError."""
        if not isinstance(text, str):
            raise ValueError(f"expected 'Name <email>', got {type(text).__name__}")
        match = _PERSON.match(text)
        if not match or not match.group(1):
            raise ValueError(f"{quoted(text)} is not in the form 'Name <email>'")
        return cls(match.group(1), match.group(2))

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"


def display_name(text: str) -> str:
    """A person's name as the tables show it: the name of `Name <email>`, else the text."""
    try:
        return Person.parse(text).name
    except ValueError:
        return text


# feedbackd itself: the committer unless `git.committer` names another, and the author of a change
# when no curator is known (not in the item, --curator, $FEEDBACKD_CURATOR or git's user).
FEEDBACKD_PERSON = Person("feedbackd", "feedbackd@localhost")


def agent_person(agent: str | None, feedbackd: Person) -> Person:
    """An agent as the author of its own act (a buyer's rating): `buyer-1 <buyer-1@localhost>`,
    on the mail domain of feedbackd's identity, so `git log --author=buyer-1` finds its
    ratings; feedbackd itself when the agent is unknown or its name makes no identity."""
    domain = feedbackd.email.rpartition("@")[2] or "localhost"
    try:
        return Person(agent, f"{agent}@{domain}") if agent else feedbackd
    except ValueError:
        return feedbackd


def parse_person(text: str, source: str) -> Person:
    """`Name <email>` from `source` (a file's `curator`, `--curator`, a setting), else a refusal
    naming where it came from."""
    try:
        return Person.parse(text)
    except ValueError:
        raise InvalidItem(
            f'{source}: {quoted(text)} is not `Name <email>` (a name without < > or ")',
            hint='write it like "Ada Curator <ada@example.org>"',
        ) from None
