"""File events under `_data/` turned into "which agents may have changed".

The events come from inotify (edges/inotify.py): the watcher sleeps until the kernel pushes one.
Where inotify cannot serve (a network file system, the watch limit reached, another system)
watchfiles polls instead.

Events are hints, never facts: a move arrives as deleted + added, an editor's save as a burst,
a renamed folder as one event for the folder and none for the files inside. So a batch only says
which agents to look at again (or that everything should be looked at); the caller re-reads disk.

Each time a watch starts (at first, and again whenever `_data/` is replaced or reappears) the
first batch is `everything=True`, sent once the watch is in place: anything may have changed while
nobody was watching, and a full pass from that moment on leaves no gap.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from watchfiles import Change

# RustNotify is what watchfiles.watch() drives (documented in watchfiles' "Rust backend" API page);
# used directly when polling, so the first batch goes out as soon as the watch is in place.
from watchfiles._rust_notify import RustNotify

from feedbackd.core.ids import is_valid_id
from feedbackd.core.workspacepaths import is_report_or_editors
from feedbackd.edges import inotify
from feedbackd.edges.files import TMP_SUFFIX
from feedbackd.edges.inotify import TreeWatch

log = logging.getLogger(__name__)

# Editors' swap, backup and lock files (vim `.swp`/`.swo`/`4913`, emacs `#x#`/`.#x`, `x~`).
# Idle wake-ups to notice that `_data/` itself was deleted or replaced (its watch is then dead).
DEFAULT_CHECK_MS = 1000
# inotify pushes events: the watcher sleeps until one comes, then sends the batch once nothing
# more came for QUIET_MS (a move is two events, an editor's save a few, all within microseconds).
# A batch that goes on is a burst: it waits as long as it has gone on, up to BURST_QUIET_MS, so
# a burst written as fast as the machine lets its writer run arrives in few batches.
QUIET_MS = 1
BURST_QUIET_MS = 10
# While nothing happens the watcher wakes only to look at `stop` (a shutdown waits at most this).
STOP_LOOK_MS = 100
# Polling (network file systems, inotify exhausted) and systems without inotify: watchfiles'
# own loop, which looks for new events every step and sends a batch after one quiet step.
DEFAULT_STEP_MS = 10


@dataclass(frozen=True)
class Changes:
    """One batch of hints: agents to reconcile, whether the rating inbox changed, or everything."""

    agents: frozenset[str] = frozenset()
    inbox: bool = False
    everything: bool = False

    def __bool__(self) -> bool:
        return bool(self.agents) or self.inbox or self.everything


EVERYTHING = Changes(everything=True, inbox=True)


def watch_agents(
    data_dir: Path,
    stop: threading.Event,
    *,
    debounce_ms: int,
    step_ms: int = DEFAULT_STEP_MS,
    check_ms: int = DEFAULT_CHECK_MS,
    shared_file: Path | None = None,
) -> Iterator[Changes]:
    """Yield batches of changes under data_dir until `stop` is set.

    A batch is yielded once nothing more changed for a moment (QUIET_MS, longer in a burst; one
    `step_ms` when polling), or after `debounce_ms` of continuous changes. A missing data_dir
    is waited for (checked every `check_ms`, interruptibly). `shared_file`, a file in data_dir
    that concerns every agent (webhouse's curation queue), calls for a full pass when it changes.
    """
    data_dir = data_dir.absolute()  # events name absolute paths; compare like with like
    shared = shared_file.absolute() if shared_file is not None else None
    while not stop.is_set():
        if not _wait_for_folder(data_dir, stop, check_ms):
            return
        yield from _watch_folder(data_dir, stop, debounce_ms, step_ms, check_ms, shared)


def classify(
    data_dir: Path, raw_changes: Iterable[tuple[int, str]], shared_file: Path | None = None
) -> Changes:
    """Turn raw (change, path) events into one batch of hints (pure, apart from `isdir`).

    `everything` implies `inbox`: a full pass includes the rating inbox.
    """
    agents: set[str] = set()
    inbox = everything = False
    for change, path in raw_changes:
        parts = _relative_parts(data_dir, path)
        if parts is None or _is_noise(parts):
            continue
        if not parts or Path(path) == shared_file:
            everything = True
        elif parts[0] == "inbox":
            inbox = True
        elif parts[0] == "agents":
            agent, whole = _agent_hint(parts, Change(change), path)
            everything = everything or whole
            if agent is not None:
                agents.add(agent)
    return Changes(frozenset(agents), inbox or everything, everything)


def _watch_folder(
    data_dir: Path,
    stop: threading.Event,
    debounce_ms: int,
    step_ms: int,
    check_ms: int,
    shared_file: Path | None,
) -> Iterator[Changes]:
    """Watch one incarnation of data_dir; return when it is gone or replaced, or on stop."""
    identity = _identity(data_dir)
    source = _start_watch(data_dir, step_ms)
    if source is None:
        stop.wait(check_ms / 1000)  # removed while the watch was set up: wait for it again
        return
    with source:
        log.debug("watching %s", data_dir)
        yield EVERYTHING
        while True:
            raw = source.batch(debounce_ms, check_ms, stop)
            if raw == "stop":
                return
            if isinstance(raw, set):
                changes = classify(data_dir, raw, shared_file)
                if changes:
                    yield changes
            lost = source.lost_events()
            if lost is not None:
                log.info("file events under %s may be lost (%s); watching anew", data_dir, lost)
                return  # the next watch starts with everything
            if _watch_is_dead(data_dir, identity, raw):
                log.info("%s was removed, moved or replaced; watching it again", data_dir)
                return


Batch = set[tuple[int, str]] | str  # raw (change, path) events, or "stop" or "timeout"


class _Pushed:
    """inotify's events, waited for in poll(): no wake-up while nothing happens but a look at
    `stop` every STOP_LOOK_MS."""

    def __init__(self, data_dir: Path) -> None:
        self.tree = TreeWatch(str(data_dir))

    def __enter__(self) -> _Pushed:
        return self

    def __exit__(self, *_: object) -> None:
        self.tree.close()

    def lost_events(self) -> str | None:
        return self.tree.lost

    def batch(self, debounce_ms: int, check_ms: int, stop: threading.Event) -> Batch:
        """The next batch, or "timeout" after check_ms without events, or "stop"."""
        if not self._wait_for_events(check_ms / 1000, stop):
            return "stop" if stop.is_set() else "timeout"
        found = self.tree.changes()
        began = time.monotonic()
        while not stop.is_set():
            lasted = time.monotonic() - began
            if lasted * 1000 >= debounce_ms:
                break
            # Slept through rather than woken by each event: a burst (the daemon's own writes
            # as it records one) costs a wake-up per wait, not one per event.
            time.sleep(min(max(lasted, QUIET_MS / 1000), BURST_QUIET_MS / 1000))
            if not self.tree.wait(0):
                break
            found |= self.tree.changes()
        return "stop" if stop.is_set() else found

    def _wait_for_events(self, timeout_s: float, stop: threading.Event) -> bool:
        deadline = time.monotonic() + timeout_s
        while not stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if self.tree.wait(min(left, STOP_LOOK_MS / 1000)):
                return True
        return False


class _Polled:
    """watchfiles' own loop: polling, or a system without inotify. It looks every step."""

    def __init__(self, notify: RustNotify, step_ms: int) -> None:
        self.notify = notify
        self.step_ms = step_ms

    def __enter__(self) -> _Polled:
        return self

    def __exit__(self, *_: object) -> None:
        self.notify.close()

    def lost_events(self) -> str | None:
        return None

    def batch(self, debounce_ms: int, check_ms: int, stop: threading.Event) -> Batch:
        raw = self.notify.watch(debounce_ms, self.step_ms, check_ms, stop)
        if raw == "signal":
            # A signal handler raised (Ctrl-C without a handler of our own): let it through.
            raise KeyboardInterrupt
        return raw


def _start_watch(data_dir: Path, step_ms: int) -> _Pushed | _Polled | None:
    """A recursive watch on data_dir (None if it vanished); polls when inotify is exhausted."""
    try:
        if _polling_requested() or not inotify.available():
            return _Polled(_notify(data_dir, polling=_polling_requested()), step_ms)
        return _Pushed(data_dir)
    except FileNotFoundError:
        return None
    except OSError as error:
        # Typically "OS file watch limit reached": keep working, more slowly, rather than stop.
        log.warning(
            "cannot watch %s with inotify (%s); polling instead. To fix, raise "
            "fs.inotify.max_user_watches (sysctl) and restart feedbackd",
            data_dir,
            error,
        )
    with contextlib.suppress(FileNotFoundError):
        return _Polled(_notify(data_dir, polling=True), step_ms)
    return None


def _notify(data_dir: Path, *, polling: bool) -> RustNotify:
    return RustNotify(
        watch_paths=[str(data_dir)],
        debug=False,
        force_polling=polling,
        poll_delay_ms=300,
        recursive=True,
        # Unreadable subfolders are skipped rather than stopping the daemon; reconcile reports them.
        ignore_permission_denied=True,
    )


def _polling_requested() -> bool:
    """WATCHFILES_FORCE_POLLING, read as watchfiles reads it (for network file systems)."""
    value = os.environ.get("WATCHFILES_FORCE_POLLING", "").lower()
    return value not in ("", "false", "disable", "disabled")


def _wait_for_folder(data_dir: Path, stop: threading.Event, check_ms: int) -> bool:
    """Wait until data_dir is a folder; False when stopped first."""
    if not data_dir.is_dir():
        log.info("waiting for %s to appear", data_dir)
    while not data_dir.is_dir():
        if stop.wait(check_ms / 1000):
            return False
    return not stop.is_set()


def _watch_is_dead(data_dir: Path, identity: tuple[int, int] | None, raw: object) -> bool:
    """True when data_dir itself was deleted, moved or replaced: its inotify watch is gone.

    An event naming data_dir itself says so; the identity check catches what events missed
    (a new folder may even reuse the old inode number, so it cannot be the only check).
    """
    if isinstance(raw, set) and any(Path(path) == data_dir for _, path in raw):
        return True
    return _identity(data_dir) != identity


def _identity(folder: Path) -> tuple[int, int] | None:
    try:
        info = folder.stat()
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def _relative_parts(data_dir: Path, path: str) -> tuple[str, ...] | None:
    try:
        return Path(path).relative_to(data_dir).parts
    except ValueError:
        return None


def _is_noise(parts: tuple[str, ...]) -> bool:
    """feedbackd's own temporary files, `.error` reports and editors' swap and backup files."""
    if not parts:
        return False
    name = parts[-1]
    return name.endswith(TMP_SUFFIX) or is_report_or_editors(name)


def _agent_hint(parts: tuple[str, ...], change: Change, path: str) -> tuple[str | None, bool]:
    """(agent id to reconcile, whether to reconcile everything) for a path under `agents/`.

    The agents folder itself, or an agent folder appearing, disappearing or being renamed,
    calls for a full pass: the files inside a moved folder send no events of their own.
    """
    if len(parts) == 1:
        return None, True
    agent = parts[1] if is_valid_id(parts[1]) else None
    if len(parts) > 2:
        return agent, False
    folder_level = change == Change.deleted or os.path.isdir(path)
    return (agent, True) if folder_level else (None, False)
