"""Which commits a `git revert` undid: read from the revert commits' own messages.

`git revert X` commits `Revert "…"` with the body line `This reverts commit X.`. A decision
whose commit was reverted is undone: nothing may restore it from history, and the item is
decided again only when a curator decides it again. Reverting the revert puts the decision
back, so a commit is undone when a revert of it stands, that is, is not undone itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

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
