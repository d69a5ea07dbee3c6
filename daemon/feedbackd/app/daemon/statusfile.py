"""The daemon's own report on what it is doing, in `.feedbackd/status.json`, for `feedbackd status`.

The daemon rewrites the file (atomically) after each event; `describe` combines it with the
instance lock, because only the lock can tell whether the daemon that wrote it is still running.
The file is local state: it is git-ignored and a missing or damaged one is simply reported.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from feedbackd.core.formats.jsontext import dumps_json
from feedbackd.core.timeutil import iso_ms, parse_iso
from feedbackd.core.wording import noun
from feedbackd.edges.clock import utcnow
from feedbackd.edges.files import (
    NotAPlainFile,
    atomic_write_json,
    open_plain_file,
    write_in_reserved_room,
)
from feedbackd.edges.instance import daemon_running, holder_pid

STATUS_FILE = "status.json"
# The daemon writes a few kB; anything far bigger is not ours and is not worth reading.
_MAX_BYTES = 1024 * 1024
# The status file keeps this much room (JSON, then spaces): on a full disk the daemon rewrites
# it in place, so `status` still tells what is wrong.
_ROOM_BYTES = 16 * 1024


@dataclass(frozen=True)
class LastEvent:
    """The last thing the daemon did, e.g. `approve` of an item for agent `content-writer`."""

    time: datetime
    event: str
    agent: str
    summary: str

    def to_json(self) -> dict[str, Any]:
        return {
            "time": iso_ms(self.time),
            "event": self.event,
            "agent": self.agent,
            "summary": self.summary,
        }


@dataclass(frozen=True)
class PassProgress:
    """The decisions of the agent pass in hand: how many are done of how many it found (what
    the pass's `Progress` last heard, core/wording.py), as the status file keeps it."""

    agent: str
    done: int
    total: int

    def to_json(self) -> dict[str, Any]:
        return {"agent": self.agent, "done": self.done, "total": self.total}

    def line(self) -> str:
        decisions = noun(self.total, "decision")
        return f"working: {self.agent}, {self.done:,} of {self.total:,} {decisions}"


@dataclass
class PassTimes:
    """How many passes the daemon made and how long they took, in seconds."""

    count: int = 0
    seconds_total: float = 0.0
    last_s: float = 0.0
    longest_s: float = 0.0

    def add(self, seconds: float) -> None:
        self.count += 1
        self.seconds_total += seconds
        self.last_s = seconds
        self.longest_s = max(self.longest_s, seconds)

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "seconds_total": round(self.seconds_total, 6),
            "last_s": round(self.last_s, 6),
            "longest_s": round(self.longest_s, 6),
        }

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> PassTimes:
        """What the status file holds; a damaged number reads as 0."""

        def number(key: str) -> float:
            found = value.get(key)
            if isinstance(found, bool) or not isinstance(found, int | float):
                return 0.0
            return float(found)

        return cls(
            int(number("count")), number("seconds_total"), number("last_s"), number("longest_s")
        )


def status_path(state_dir: Path) -> Path:
    return state_dir / STATUS_FILE


def write_status(
    state_dir: Path,
    *,
    pid: int,
    started_at: datetime,
    starting: bool = False,
    last_event: LastEvent | None = None,
    counts: Mapping[str, int] | None = None,
    pending: int = 0,
    problems: Sequence[str] = (),
    passes: PassTimes | None = None,
    progress: PassProgress | None = None,
) -> None:
    """Replace the status file with the daemon's current state (in place on a full disk)."""
    write_in_reserved_room(
        status_path(state_dir),
        json_bytes(
            {
                "pid": pid,
                "started_at": iso_ms(started_at),
                "starting": starting,
                "last_event": last_event.to_json() if last_event is not None else None,
                "counts": dict(sorted((counts or {}).items())),
                "pending": pending,
                "problems": list(problems),
                "passes": (passes or PassTimes()).to_json(),
                "progress": progress.to_json() if progress is not None else None,
            }
        ),
        _ROOM_BYTES,
    )


def json_bytes(value: Any) -> bytes:
    text = dumps_json(value)
    return (text if text.endswith("\n") else text + "\n").encode("utf-8")


def pass_times(state_dir: Path) -> PassTimes | None:
    """The running daemon's pass durations (for /metrics); None when no daemon runs."""
    recorded = read_status(state_dir) if daemon_running(state_dir) else None
    value = (recorded or {}).get("passes")
    return PassTimes.from_json(value) if isinstance(value, dict) else None


def add_run(
    state_dir: Path,
    events: Sequence[LastEvent],
    *,
    pending: int,
) -> None:
    """Fold one `run --once` into the status file, so `status` tells what a scheduled run did.

    Counts add up over runs; the last event is this run's, if it recorded any. No problems are
    kept: `.error` files tell what still stands, and the run printed its warnings. While a
    daemon runs, the file is the daemon's and is left alone.
    """
    if daemon_running(state_dir):
        return
    recorded = read_status(state_dir) or {}
    counts = _counts(recorded.get("counts"))
    for event in events:
        counts[event.event] = counts.get(event.event, 0) + 1
    last = events[-1].to_json() if events else _last_event(recorded.get("last_event"))
    atomic_write_json(
        status_path(state_dir),
        {
            "pid": None,
            "started_at": None,
            "last_event": last,
            "counts": dict(sorted(counts.items())),
            "pending": pending,
            "problems": [],
        },
    )


def read_status(state_dir: Path) -> dict[str, Any] | None:
    """The status file's object, or None when it is missing, too large or not a JSON object."""
    path = status_path(state_dir)
    try:
        with open_plain_file(path) as handle:
            data = handle.read(_MAX_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, NotAPlainFile):
        return None
    if len(data) > _MAX_BYTES:
        return None
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def describe(state_dir: Path, *, now: datetime | None = None) -> dict[str, Any]:
    """The `status --json` object: running, starting, pid, uptime_s, last_event, counts,
    pending, problems.

    When no daemon runs, the last recorded event, counts and problems are still shown (what it
    did before it stopped), but pid and uptime are null. `starting` is true while a running
    daemon is in its start-up pass, and until it has written its status file (its uptime is
    null until then).
    """
    running = daemon_running(state_dir)
    pid = holder_pid(state_dir) if running else None
    recorded = read_status(state_dir)
    problems: list[str] = []
    if recorded is None:
        recorded = {}
        if status_path(state_dir).exists():
            problems.append(
                f"{status_path(state_dir)} is unreadable; the daemon rewrites it after its next "
                "event (or delete it)"
            )
    problems.extend(_problems(recorded.get("problems")))
    same_daemon = pid is not None and recorded.get("pid") == pid
    return {
        "running": running,
        "starting": running and (not same_daemon or recorded.get("starting") is True),
        "pid": pid,
        "uptime_s": _uptime(recorded.get("started_at"), now or utcnow()) if same_daemon else None,
        "last_event": _last_event(recorded.get("last_event")),
        "counts": _counts(recorded.get("counts")),
        "pending": _count(recorded.get("pending")),
        "problems": problems,
    }


def daemon_progress(state_dir: Path) -> PassProgress | None:
    """The running daemon's burst in hand, if any (`status` shows it as a line of its own)."""
    recorded = read_status(state_dir) if daemon_running(state_dir) else None
    value = (recorded or {}).get("progress")
    if not isinstance(value, dict) or not isinstance(value.get("agent"), str):
        return None
    done, total = value.get("done"), value.get("total")
    if not isinstance(done, int) or not isinstance(total, int):
        return None
    return PassProgress(value["agent"], done, total)


def _uptime(started_at: object, now: datetime) -> int | None:
    if not isinstance(started_at, str):
        return None
    try:
        seconds = (now - parse_iso(started_at)).total_seconds()
    except ValueError:
        return None
    return max(0, math.floor(seconds))


def _last_event(value: object) -> dict[str, str] | None:
    if not isinstance(value, dict):
        return None
    keys = ("time", "event", "agent", "summary")
    if not all(isinstance(value.get(key), str) for key in keys):
        return None
    return {key: value[key] for key in keys}


def _counts(value: object) -> dict[str, int]:
    if not isinstance(value, dict):
        return {}
    return {
        str(event): count
        for event, count in value.items()
        if isinstance(count, int) and not isinstance(count, bool) and count >= 0
    }


def _count(value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return 0


def _problems(value: object) -> list[str]:
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, str)]
