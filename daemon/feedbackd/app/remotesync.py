"""Remote sync (SPEC §8): pull with rebase and push, never touching a user's uncommitted work.

One sync is: fetch the branch; replay the local commits onto the remote's in a temporary
worktree, with the feedbackd merge driver for feedback files and ledgers; bring the user's files
and index along only where the pull changed them (refusing, and changing nothing, when such a
file is one the user modified); move the branch with a compare-and-swap; run the pipeline once
(decisions that came from elsewhere are already in the ledger, so they are not decided again,
and prompt snippets are regenerated from the merged feedback); push. A rejected push (someone
pushed first) starts the round again; an unreachable remote is retried later with backoff.

Generated snippets are never merged line by line: during the rebase they are merged by taking
either side (see mergedriver), and the pipeline run after the pull rewrites them from the merged
feedback.json, so every machine ends with the same text.

A conflict the driver cannot solve stops syncing (the daemon keeps working and committing
locally) until the branch or the remote changes; `status()` says what happened and which
command resolves it. The state lives in `.feedbackd/sync.json`, so `run --once` and `status`
see what the daemon saw.
"""

from __future__ import annotations

import json
import logging
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from feedbackd.app.commits.locking import write_lock
from feedbackd.app.commits.openrepo import open_repo
from feedbackd.app.reconcile import reconcile_all
from feedbackd.app.report import Report
from feedbackd.app.workspace.init import merge_driver_command
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.curation.merging import ATTRIBUTES, DRIVER_NAME, MERGE_SETTINGS
from feedbackd.core.errors import FeedbackdError, GitError
from feedbackd.core.timeutil import iso_ms, parse_iso
from feedbackd.edges.evaluation.revisions import sync_notes
from feedbackd.edges.files import (
    atomic_write_json,
    atomic_write_text,
    open_plain_file,
    read_file_text,
)
from feedbackd.edges.git.remote import RemoteUnreachable
from feedbackd.edges.git.repo import GitRepo
from feedbackd.edges.git.runner import identity_env

log = logging.getLogger("feedbackd")

STATE_FILE = "sync.json"
_MAX_STATE_BYTES = 1024 * 1024
BATCH_QUIET_S = 1.0  # after a commit, wait this long for more commits before pushing
BATCH_MAX_S = 10.0  # but push no later than this after the first unpushed commit
BACKOFF_MIN_S = 2.0
BACKOFF_MAX_S = 300.0
NETWORK_TIMEOUT_S = 60.0  # a black-holed host must not hold the daemon for long
ROUNDS = 3  # fetch-rebase-push rounds in one sync when others keep pushing first

Outcome = Literal["synced", "offline", "rejected", "conflict", "error", "disabled"]
ConflictKind = Literal["rebase", "local-changes", "operation"]


@dataclass(frozen=True)
class Conflict:
    """Why syncing stopped, and the command that resolves it."""

    kind: ConflictKind
    message: str
    resolve: str
    paths: tuple[str, ...] = ()
    local: str | None = None
    remote: str | None = None
    since: str = ""

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "paths": list(self.paths)}

    @classmethod
    def from_json(cls, value: object) -> Conflict | None:
        if not isinstance(value, dict):
            return None
        try:
            paths = tuple(str(path) for path in value.get("paths") or ())
            return cls(**{**value, "paths": paths})
        except TypeError:
            return None


@dataclass
class SyncResult:
    """What one sync did."""

    outcome: Outcome
    message: str
    pulled: int = 0
    pushed: int = 0
    conflict: Conflict | None = None
    report: Report = field(default_factory=Report)

    @property
    def ok(self) -> bool:
        return self.outcome == "synced"


@dataclass
class SyncMemory:
    """What `.feedbackd/sync.json` keeps between syncs and processes."""

    outcome: str | None = None
    last_attempt: float | None = None
    last_sync: float | None = None
    last_error: str | None = None
    failures: int = 0
    retry_at: float | None = None
    conflict: Conflict | None = None


class _BranchMoved(Exception):
    """Someone committed while we moved the branch: start the round again."""


class Syncer:
    """Pull and push for one workspace; the daemon asks `due(now)` and calls `sync()`.

    Call it without holding the write lock: it takes the lock only for the local steps, so
    a slow network never holds up the curators' commands.
    """

    def __init__(self, runtime: Runtime, clock: Callable[[], float] = time.time) -> None:
        self.runtime = runtime
        self.clock = clock
        self.memory = load_memory(runtime)
        self._first_unpushed: float | None = None
        self._last_commit: float | None = None

    @property
    def enabled(self) -> bool:
        return self.runtime.git_enabled and bool(self.runtime.settings.git.remote)

    @property
    def remote(self) -> str:
        return self.runtime.settings.git.remote or ""

    # --- when -----------------------------------------------------------------------------------
    def after_commit(self, now: float | None = None) -> None:
        """The pipeline committed: push soon, batching commits that follow closely."""
        moment = self.clock() if now is None else now
        if self._first_unpushed is None:
            self._first_unpushed = moment
        self._last_commit = moment

    def seconds_until_due(self, now: float) -> float | None:
        """How long until the next sync is due (0: now); None when sync is off."""
        if not self.enabled:
            return None
        last = self.memory.last_attempt
        when = now if last is None else last + self.runtime.settings.git.pull_interval_s
        if self._first_unpushed is not None and self._last_commit is not None:
            when = min(when, self._last_commit + BATCH_QUIET_S, self._first_unpushed + BATCH_MAX_S)
        if self.memory.retry_at is not None:
            when = max(when, self.memory.retry_at)
        return max(0.0, when - now)

    def due(self, now: float) -> bool:
        wait = self.seconds_until_due(now)
        return wait is not None and wait <= 0

    # --- what -----------------------------------------------------------------------------------
    def sync(self) -> SyncResult:
        """One pull (rebase) and push; never raises for git or network trouble."""
        if not self.enabled:
            return SyncResult("disabled", "git.remote is not set (or git.enabled is false)")
        started = self.clock()
        self._first_unpushed = self._last_commit = None
        try:
            result = self._sync()
        except RemoteUnreachable as error:
            result = SyncResult("offline", error.message)
        except FeedbackdError as error:
            result = SyncResult("error", str(error))
        if result.outcome in ("offline", "rejected", "error"):
            # Unpushed work may be waiting: try again when the backoff ends, not an interval later.
            self._first_unpushed = self._last_commit = started
        self._remember(result, started)
        _log_result(result, self.remote)
        return result

    def status(self) -> dict[str, Any]:
        """The sync part of `status`: last sync, last error, a conflict and how to resolve it."""
        return describe(self.runtime, self.memory, pending=self._first_unpushed is not None)

    # --- one sync ---------------------------------------------------------------------------------
    def _sync(self) -> SyncResult:
        settings = self.runtime.settings.git
        with open_repo(self.runtime) as repo:
            if repo is None:
                return SyncResult("disabled", "git.enabled is false")
            branch = settings.branch or repo.current_branch()
            if branch is None:
                raise GitError(
                    "HEAD is detached, so there is no branch to sync",
                    hint="check out a branch (git switch main), or set git.branch",
                )
            result = SyncResult("synced", f"{self.remote}/{branch} is up to date")
            for _ in range(ROUNDS):
                if self._round(repo, branch, result):
                    self._sync_eval_notes(result)
                    return result
            result.outcome = "rejected"
            result.message = f"{self.remote} kept refusing the push of {branch}; trying again later"
            return result

    def _sync_eval_notes(self, result: SyncResult) -> None:
        """The reports `eval --note` keeps (refs/notes/feedbackd-eval) go with the branch."""
        if result.outcome != "synced":
            return
        person = self.runtime.committer
        identity = {**identity_env("AUTHOR", person), **identity_env("COMMITTER", person)}
        problem = sync_notes(
            self.runtime.workspace.root,
            self.remote,
            identity,
            push=self.runtime.settings.git.push,
            timeout=NETWORK_TIMEOUT_S,
        )
        if problem:
            log.warning("%s; trying again at the next sync", problem)

    def _round(self, repo: GitRepo, branch: str, result: SyncResult) -> bool:
        """Fetch, integrate, push; True when done (synced or stopped), False to go again."""
        remote_head = repo.remote.fetch_branch(self.remote, branch, timeout=NETWORK_TIMEOUT_S)
        try:
            with write_lock(self.runtime):
                if not self._integrate(repo, branch, remote_head, result):
                    return True
        except _BranchMoved:
            log.info("the branch moved while syncing; starting the round again")
            return False
        local = repo.rev(f"refs/heads/{branch}")
        if not self.runtime.settings.git.push or local is None or local == remote_head:
            return True
        if remote_head is not None and repo.is_ancestor(local, remote_head):
            return True
        if repo.remote.push_branch(self.remote, local, branch, timeout=NETWORK_TIMEOUT_S):
            result.pushed += repo.count_commits(remote_head, local)
            result.message = f"{self.remote}/{branch} is up to date"
            return True
        log.info(
            "%s refused the push of %s (someone pushed first); pulling again", self.remote, branch
        )
        return False

    def _integrate(
        self, repo: GitRepo, branch: str, remote_head: str | None, result: SyncResult
    ) -> bool:
        """Bring the remote's commits into the local branch; False when syncing must stop."""
        repo.remote.remove_sync_leftovers()
        local = repo.rev(f"refs/heads/{branch}")
        if remote_head is None or local == remote_head:
            return True
        if local is not None and repo.is_ancestor(remote_head, local):
            return True  # only local commits: push them
        conflict = self._operation_conflict(repo) or self._still_stopped(repo, local, remote_head)
        if conflict is None:
            new, conflict = self._rebased(repo, branch, local, remote_head)
            conflict = conflict or self._move(repo, branch, local, new)
        if conflict is not None:
            result.outcome, result.message, result.conflict = "conflict", conflict.message, conflict
            return False
        result.pulled += repo.count_commits(local, remote_head)
        # The pipeline after a pull: regenerate snippets; the ledger keeps decisions single; the
        # rules run for the skills the pull brought ratings for (rentals.rules_for_arrived),
        # and their commits go out with the push below.
        result.report.extend(reconcile_all(self.runtime))
        return True

    def _rebased(
        self, repo: GitRepo, branch: str, local: str | None, remote_head: str
    ) -> tuple[str, Conflict | None]:
        if local is None or repo.is_ancestor(local, remote_head):
            return remote_head, None  # a fast-forward: nothing to replay
        outcome = repo.remote.rebase_onto(remote_head, local, self._merge_config(repo))
        if outcome.commit is not None:
            return outcome.commit, None
        conflict = self._rebase_conflict(branch, outcome.conflicts, outcome.detail)
        return remote_head, replace(conflict, local=local, remote=remote_head)

    def _move(self, repo: GitRepo, branch: str, local: str | None, new: str) -> Conflict | None:
        """Point the branch at `new`; the user's files follow only where the pull changed them."""
        if repo.current_branch() != branch:
            if not repo.remote.move_branch(branch, new, local):
                raise _BranchMoved
            return None
        clash = overlapping(
            repo.listings.paths_changed(local, new), repo.listings.changed_paths(".")
        )
        if clash:
            return self._local_changes_conflict(clash, local)
        repo.remote.fast_forward_files(local, new)
        if not repo.remote.move_branch(branch, new, local):
            repo.remote.fast_forward_files(new, local)  # put the files back as they were
            raise _BranchMoved
        return None

    def _merge_config(self, repo: GitRepo) -> dict[str, str]:
        """Git settings for the rebase: the driver merges feedback files and ledgers, and takes
        either side of a generated snippet, which the pipeline regenerates after the pull."""
        attributes = repo.remote.sync_file("attributes")
        text = "\n".join(ATTRIBUTES) + "\n"
        if not attributes.exists() or read_file_text(attributes, "replace") != text:
            atomic_write_text(attributes, text)
        cap = self.runtime.settings.feedback.max_entries
        driver = merge_driver_command(cap)
        return {
            "merge.feedbackd.name": DRIVER_NAME,
            "merge.feedbackd.driver": driver,
            "core.attributesFile": str(attributes),
            **dict(MERGE_SETTINGS),
        }

    # --- conflicts ------------------------------------------------------------------------------
    def _operation_conflict(self, repo: GitRepo) -> Conflict | None:
        operation = repo.operation_in_progress()
        if operation is None:
            return None
        return Conflict(
            "operation",
            f"a git {operation} is in progress in the workspace; syncing waits until it is done",
            f"git -C {self._root()} {operation} --continue  (or --abort)",
            since=self._now(),
        )

    def _still_stopped(self, repo: GitRepo, local: str | None, remote_head: str) -> Conflict | None:
        """The recorded rebase conflict, while neither the branch nor the remote has moved on."""
        known = self.memory.conflict
        if known is None or known.kind != "rebase" or known.remote != remote_head:
            return None
        if local is None or known.local is None or repo.rev(known.local) is None:
            return None
        return known if repo.is_ancestor(known.local, local) else None

    def _rebase_conflict(self, branch: str, paths: Sequence[str], detail: str) -> Conflict:
        named = ", ".join(paths) or detail or "unknown files"
        return Conflict(
            "rebase",
            f"syncing stopped: the local commits conflict with {self.remote} in {named};"
            " the daemon keeps committing locally",
            f"git -C {self._root()} pull --rebase --autostash {self.remote} {branch}"
            " (fix the files it names, git add them, git rebase --continue, git push);"
            " syncing resumes by itself once the branch holds the remote's commits",
            tuple(paths),
            since=self._now(),
        )

    def _local_changes_conflict(self, paths: Sequence[str], local: str | None) -> Conflict:
        quoted = " ".join(shlex.quote(path) for path in paths)
        return Conflict(
            "local-changes",
            "syncing waits: the pull changes files you modified and have not committed: "
            + ", ".join(paths),
            f"git -C {self._root()} stash push -- {quoted}  (or commit them); syncing resumes"
            " at the next attempt; then git stash pop",
            tuple(paths),
            local,
            None,
            self._now(),
        )

    # --- memory ---------------------------------------------------------------------------------
    def _remember(self, result: SyncResult, started: float) -> None:
        memory = self.memory
        memory.outcome, memory.last_attempt = result.outcome, started
        if result.outcome == "synced":
            memory.last_sync, memory.last_error, memory.failures = self.clock(), None, 0
            memory.retry_at, memory.conflict = None, None
        elif result.outcome == "conflict":
            memory.last_error, memory.conflict = result.message, result.conflict
            memory.failures, memory.retry_at = 0, None
        else:
            memory.failures += 1
            memory.last_error = result.message
            memory.retry_at = self.clock() + backoff_s(memory.failures)
        save_memory(self.runtime, memory)

    def _root(self) -> str:
        return shlex.quote(str(self.runtime.workspace.root))

    def _now(self) -> str:
        return _iso(self.clock()) or ""


# --- helpers ------------------------------------------------------------------------------------
def sync_once(runtime: Runtime, report: Report) -> Report:
    """The end of `run --once`: one pull and push when git.remote is set, even with no commits."""
    syncer = Syncer(runtime)
    if not syncer.enabled:
        return report
    result = syncer.sync()
    if result.pulled:  # the pass after the pull saw the files as they are now
        report = report.followed_by(result.report)
    if not result.ok:
        resolve = f" To resolve: {result.conflict.resolve}" if result.conflict else ""
        report.warnings.append(f"sync: {result.message}.{resolve}")
    return report


def overlapping(changed: Sequence[str], modified: Sequence[str]) -> list[str]:
    """The user's modified paths that a change of `changed` would touch (also through folders)."""
    clash = set()
    for path in modified:
        for other in changed:
            if path == other or path.startswith(other + "/") or other.startswith(path + "/"):
                clash.add(path)
    return sorted(clash)


def backoff_s(failures: int) -> float:
    """2, 4, 8 … seconds after consecutive failures, at most five minutes."""
    return float(min(BACKOFF_MAX_S, BACKOFF_MIN_S * 2 ** max(failures - 1, 0)))


def state_path(runtime: Runtime) -> Path:
    return runtime.workspace.state_dir / STATE_FILE


def load_memory(runtime: Runtime) -> SyncMemory:
    """The saved sync state; a missing or damaged file is a fresh start (it is only a cache)."""
    raw = _read_object(state_path(runtime))
    return SyncMemory(
        outcome=_str(raw.get("outcome")),
        last_attempt=_time(raw.get("last_attempt")),
        last_sync=_time(raw.get("last_sync")),
        last_error=_str(raw.get("last_error")),
        failures=raw["failures"] if isinstance(raw.get("failures"), int) else 0,
        retry_at=_time(raw.get("retry_at")),
        conflict=Conflict.from_json(raw.get("conflict")),
    )


def save_memory(runtime: Runtime, memory: SyncMemory) -> None:
    runtime.workspace.state_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(
        state_path(runtime),
        {
            "outcome": memory.outcome,
            "last_attempt": _iso(memory.last_attempt),
            "last_sync": _iso(memory.last_sync),
            "last_error": memory.last_error,
            "failures": memory.failures,
            "retry_at": _iso(memory.retry_at),
            "conflict": memory.conflict.to_json() if memory.conflict else None,
        },
    )


def describe(runtime: Runtime, memory: SyncMemory, *, pending: bool = False) -> dict[str, Any]:
    """The `sync` object of `status --json`."""
    conflict = memory.conflict
    return {
        "enabled": runtime.git_enabled and bool(runtime.settings.git.remote),
        "remote": runtime.settings.git.remote,
        "branch": runtime.settings.git.branch,
        "state": memory.outcome,
        "last_attempt": _iso(memory.last_attempt),
        "last_sync": _iso(memory.last_sync),
        "last_error": memory.last_error,
        "failures": memory.failures,
        "retry_at": _iso(memory.retry_at),
        "pending_push": pending,
        "conflict": conflict.to_json() if conflict else None,
    }


def sync_status(runtime: Runtime) -> dict[str, Any]:
    """The sync state as the last sync of any process left it (for `status` without a daemon)."""
    return describe(runtime, load_memory(runtime))


def problem_line(status: dict[str, Any]) -> str | None:
    """One line for `status` problems when syncing is stopped or failing, else None."""
    conflict = status.get("conflict")
    if isinstance(conflict, dict):
        return f"sync: {conflict.get('message')}. To resolve: {conflict.get('resolve')}"
    if status.get("last_error"):
        return f"sync: {status['last_error']} (retrying at {status.get('retry_at')})"
    return None


def _read_object(path: Path) -> dict[str, Any]:
    try:
        with open_plain_file(path) as handle:
            value = json.loads(handle.read(_MAX_STATE_BYTES).decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def _log_result(result: SyncResult, remote: str) -> None:
    if result.ok:
        if result.pulled or result.pushed:
            log.info("sync with %s: pulled %d, pushed %d", remote, result.pulled, result.pushed)
        return
    log.warning("sync with %s: %s", remote, result.message)


def _iso(moment: float | None) -> str | None:
    return None if moment is None else iso_ms(datetime.fromtimestamp(moment, UTC))


def _time(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_iso(value).timestamp()
    except ValueError:
        return None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None
