"""Which commits a `git revert` undid: read from the revert commits' own messages.

`git revert X` commits `Revert "…"` with the body line `This reverts commit X.`. A decision
whose commit was reverted is undone: nothing may restore it from history, and the item is
decided again only when a curator decides it again. Reverting the revert puts the decision
back, so a commit is undone when a revert of it stands, that is, is not undone itself.

The learning history (`log`, the panel) shows both sides: each commit a standing revert undid is
marked `reverted`, and each revert of a history commit is a row of its own (`with_reverts`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from feedbackd.core.commitmsg import LogEntry, iso_date

_REVERTS = re.compile(r"^This reverts commit ([0-9a-f]{7,64})\b", re.MULTILINE)
GREP = "^This reverts commit [0-9a-f]"  # for `git log -E --grep`: the revert commits only


def reverted_by(message: str) -> list[str]:
    """The commits (as named, maybe abbreviated) that a commit message says it reverts."""
    return _REVERTS.findall(message)


class Undone:
    """The commits of a history that stand reverted, from each revert commit's targets."""

    def __init__(self, reverts: Mapping[str, Iterable[str]]) -> None:
        """`reverts`: each revert commit (its full id) → the commits its message names."""
        self._reverters: dict[str, list[str]] = {}
        for revert, targets in reverts.items():
            for target in targets:
                full = _full_id(target, reverts) or target
                self._reverters.setdefault(full, []).append(revert)
        self._known: dict[str, bool] = {}

    def __contains__(self, commit: object) -> bool:
        return isinstance(commit, str) and self._undone(commit, frozenset())

    def _undone(self, commit: str, seen: frozenset[str]) -> bool:
        if commit in self._known:
            return self._known[commit]
        reverters = [
            revert
            for named, reverts in self._reverters.items()
            if commit.startswith(named)
            for revert in reverts
        ]
        # A revert that is itself undone does not count; a loop (not made by git) undoes nothing.
        answer = any(
            revert not in seen and not self._undone(revert, seen | {commit}) for revert in reverters
        )
        self._known[commit] = answer
        return answer


def _full_id(named: str, commits: Iterable[str]) -> str | None:
    """The one of `commits` that an abbreviated id names (a revert of a revert)."""
    found = [commit for commit in commits if commit.startswith(named)]
    return found[0] if len(found) == 1 else None


@dataclass(frozen=True)
class RevertCommit:
    """A `git revert` commit: when, by whom, its subject and the commits its message names."""

    commit: str
    date: str
    curator: str | None
    subject: str
    targets: tuple[str, ...]


def revert_commit(commit: str, date: str, author: str, message: str) -> RevertCommit | None:
    """The revert a commit's raw fields tell (as `log_entry` reads them); None for another."""
    targets = tuple(reverted_by(message))
    if not targets:
        return None
    subject = message.split("\n", 1)[0].strip()
    return RevertCommit(commit.strip(), iso_date(date), author.strip() or None, subject, targets)


def with_reverts(history: Sequence[LogEntry | RevertCommit]) -> list[LogEntry]:
    """The learning history (newest first) as people read it: each entry marked `reverted`
    when a standing revert undid it, and in its place in time each revert of one of its
    commits, as a `revert` row of the agent and item it undid that names the commit (a revert
    of a revert names the revert). Reverts of commits outside the history are left out."""
    reverts = [step for step in history if isinstance(step, RevertCommit)]
    undone = Undone({revert.commit: revert.targets for revert in reverts})
    rows: dict[str, list[LogEntry]] = {
        step.commit: [step] for step in history if isinstance(step, LogEntry)
    }
    for revert in reversed(reverts):  # oldest first: a revert's own row is there for its revert
        targets = [rows[found][0] for found in _known(revert.targets, rows)]
        rows[revert.commit] = [_revert_row(revert, target) for target in targets]
    return [
        replace(row, reverted=row.commit in undone)
        for step in history
        for row in rows.get(step.commit, [])
    ]


def _known(targets: Iterable[str], rows: Mapping[str, object]) -> list[str]:
    """The full ids of those of `targets` (maybe abbreviated) that `rows` holds."""
    found = []
    for target in targets:
        full = target if target in rows else _full_id(target, rows)
        if full is not None and rows[full]:
            found.append(full)
    return found


def _revert_row(revert: RevertCommit, target: LogEntry) -> LogEntry:
    """The row of a revert: the agent, item and skill of what it undid; its subject says what
    that was (`revert(w): undoes reject(w): qi-2 (3f2a1b0)`)."""
    agent = target.agent or ""
    return LogEntry(
        commit=revert.commit,
        date=revert.date,
        event="revert",
        agent=target.agent,
        item=target.item,
        skill=target.skill,
        curator=revert.curator,
        fields=None,
        price_old=None,
        price_new=None,
        subject=f"revert({agent}): undoes {target.subject} ({target.commit[:7]})",
        reverts=target.commit,
    )
