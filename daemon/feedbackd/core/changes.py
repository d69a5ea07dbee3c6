"""One change to the workspace as a value: what it writes, appends and removes, in order, and
the one commit that records it.

Every writer plans its change as one of these and hands it to the same applier
(app/commits/recording.py): curation's decisions, `record` and `forget` (core/curation/
agentplan.py), a rating and the price, lessons and description changes it calls for
(core/ratings/plans.py). The planners are pure: they get what was read as values and say what to
write; only the applier touches the disk and git. A change applied in part (a crash) is planned
again by the next pass from what it finds, which is why every writer puts its ledger line (what
says the change was made) where a replay sees it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from feedbackd.core.people import Person


@dataclass(frozen=True)
class CommitRequest:
    """What to commit: exactly `paths`, and what the commit message says about them."""

    event: str
    agent: str
    summary: str
    paths: Sequence[Path]
    author: Person | None = None  # None: the workspace's own identity (feedbackd's act)
    skill: str | None = None
    item: str | None = None
    body: Sequence[str] = ()
    trailers: Sequence[tuple[str, str]] = ()
    # The folder the change lives in (an agent's): moved away meanwhile, nothing is written in
    # it (its folders are not made again) and nothing is committed.
    within: Path | None = None
    # Files of `paths` the change stands on (the item a decision decides, the lines a rating
    # appended): one removed meanwhile (a `git clean`), nothing is committed, and the change is
    # planned again.
    needed: Sequence[Path] = ()


@dataclass(frozen=True)
class Write:
    """A whole file to write (atomically): its text, or what makes the text when it is written.

    A burst of decisions in one pass plans a version of feedback.json for each (200 entries,
    tens of kilobytes): held as text, a burst of 500 would keep them all in memory at once, and
    the allocator the high-water mark. Versions made when written are held one at a time.
    """

    path: Path
    content: str | Callable[[], str]
    # The text as it is: no final newline added (a SOUL.md without one must stay without one).
    exact: bool = False

    @property
    def text(self) -> str:
        return self.content if isinstance(self.content, str) else self.content()


@dataclass(frozen=True)
class Append:
    """One line to append to a log (a ledger, ratings, memory)."""

    path: Path
    line: str


@dataclass(frozen=True)
class Remove:
    """A file the change removes (gone already is as good)."""

    path: Path


Action = Write | Append | Remove


@dataclass(frozen=True)
class Change:
    """Apply `actions` in order, then make `commit`."""

    commit: CommitRequest
    actions: tuple[Action, ...] = ()
