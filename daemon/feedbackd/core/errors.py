"""One error family: every refusal carries a stable code, a message and a hint on how to fix it.

The CLI maps these to `error: {code}: {message}` and exit code 1; anything else is a bug (exit 3).
A file or folder that cannot be used is told in the same words, as a `PathProblem`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


class FeedbackdError(Exception):
    """A refused input or failed operation that the user can act on. Each kind of error names
    its code where it is declared: `class NotFound(FeedbackdError, code="not_found")`."""

    code = "error"

    def __init_subclass__(cls, code: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.code = code

    def __init__(self, message: str, *, hint: str = "", code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return _told(self.message, self.hint)


def _told(message: str, hint: str) -> str:
    return f"{message} ({hint})" if hint else message


class InvalidItem(FeedbackdError, code="invalid_item"): ...


class InvalidFeedback(FeedbackdError, code="invalid_feedback"): ...


class InvalidId(FeedbackdError, code="invalid_id"): ...


class InvalidMemory(FeedbackdError, code="invalid_memory"): ...


class NotFound(FeedbackdError, code="not_found"): ...


class AlreadySubmitted(FeedbackdError, code="feedback_already_submitted"): ...


class ConfigError(FeedbackdError, code="config_error"): ...


class WorkspaceError(FeedbackdError, code="workspace_error"): ...


class DiskFull(FeedbackdError, code="disk_full"): ...


class GitError(FeedbackdError, code="git_error"): ...


@dataclass(frozen=True)
class PathProblem:
    """A file or folder that cannot be used: where (as its finder names it), what is wrong and
    how to fix it. What a pass explains beside a file, a pass's report and `doctor` list."""

    path: Path
    message: str
    hint: str

    def __str__(self) -> str:
        return _told(self.message, self.hint)

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "message": self.message, "hint": self.hint}


DAMAGE_HINT = (
    "feedbackd records nothing until `git fsck` finds the repository whole;"
    " restore the missing objects from a clone (docs/git.md, 'A damaged repository')"
)


class RepositoryDamaged(GitError):
    """git's object store lacks (or cannot read) an object that HEAD reaches: a commit made on
    top would carry the damage on. Nothing is recorded until `git fsck` finds the repository
    whole again."""

    def __init__(self, message: str) -> None:
        super().__init__(message, hint=DAMAGE_HINT)


class KeptChanging(GitError, code="workspace_changing"):
    """The workspace changed under a pass each time it was read (a user's commits, a pull): the
    pass is tried again shortly, and nothing was written. Not a fault."""


class Locked(FeedbackdError, code="locked"): ...


class Busy:
    """Mixed into the errors of a write that gave up before it changed anything, because another
    writer held the workspace (its write lock, or git's index lock) for longer than the write
    may wait. The commands say so with their usual codes; the HTTP server answers 503 `busy`
    with `who`, which names no file of the server's disk."""

    who = "another writer holds the workspace"


class WriterBusy(Locked, Busy):
    """The workspace's write lock stayed held by another feedbackd process."""

    who = "another feedbackd process (the daemon, a command) is writing to the workspace"


class IndexHeld(GitError, Busy):
    """git's index lock stayed held by a running git command."""

    who = "a git command holds the workspace's git index (a commit waiting for its editor?)"


class MergeRefused(FeedbackdError, code="merge_conflict"):
    """The merge driver cannot merge these versions; git records a conflict instead."""


class UsageError(FeedbackdError, code="usage"):
    """Bad command-line usage (exit code 2)."""


class Forbidden(FeedbackdError, code="forbidden"):
    """A request the asker may not make as the one it names (over HTTP, a curator other than
    the one its token names: 403)."""


class AlreadyDecided(FeedbackdError, code="already_decided"):
    """An item asked to be decided that a curator already moved to approved/ or rejected/."""


class Aborted(FeedbackdError, code="aborted"):
    """The user stopped a command at a prompt."""


class InternalError(FeedbackdError, code="internal"):
    """A bug, reported in the error format (exit code 3); the traceback goes to the log."""


class EvalFailed(FeedbackdError, code="eval_failed"):
    """`eval` or `bisect`: the agent command failed on every item, so nothing was scored."""


class NotWorse(FeedbackdError, code="not_worse"):
    """`bisect`: --bad does not score below --good, so there is no decision to find."""
