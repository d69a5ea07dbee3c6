"""The daemon's status file and the `status --json` object built from it and the instance lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from feedbackd.app.daemon.statusfile import (
    STATUS_FILE,
    LastEvent,
    PassProgress,
    PassTimes,
    daemon_progress,
    describe,
    pass_times,
    read_status,
    status_path,
    write_status,
)
from feedbackd.edges.files import TMP_SUFFIX
from feedbackd.edges.instance import InstanceLock

STARTED = datetime(2026, 4, 8, 10, 0, 0, tzinfo=UTC)
EVENT = LastEvent(
    time=STARTED + timedelta(seconds=30),
    event="approve",
    agent="content-writer",
    summary="qi-123, 2 corrections (title, excerpt)",
)
STATUS_KEYS = {
    "running", "starting", "pid", "uptime_s", "last_event", "counts", "pending", "problems",
}  # fmt: skip


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / ".feedbackd"


def write_sample(state_dir: Path, pid: int) -> None:
    write_status(
        state_dir,
        pid=pid,
        started_at=STARTED,
        last_event=EVENT,
        counts={"reject": 1, "approve": 3},
        pending=2,
        problems=["_data/agents/a/queue/x.json: not valid JSON (line 3, column 1)"],
    )


def test_written_file_is_indented_json_with_every_field(state_dir: Path) -> None:
    write_sample(state_dir, pid=4242)
    text = status_path(state_dir).read_text()
    # Padded with spaces: the room to rewrite it in place when the disk is full.
    assert text.rstrip(" ").endswith("}\n") and '\n  "pid": 4242,' in text
    assert json.loads(text) == {
        "pid": 4242,
        "started_at": "2026-04-08T10:00:00.000Z",
        "starting": False,
        "last_event": {
            "time": "2026-04-08T10:00:30.000Z",
            "event": "approve",
            "agent": "content-writer",
            "summary": "qi-123, 2 corrections (title, excerpt)",
        },
        "counts": {"approve": 3, "reject": 1},
        "pending": 2,
        "problems": ["_data/agents/a/queue/x.json: not valid JSON (line 3, column 1)"],
        "passes": {"count": 0, "seconds_total": 0.0, "last_s": 0.0, "longest_s": 0.0},
        "progress": None,
    }
    assert read_status(state_dir) == json.loads(text)
    assert [p.name for p in state_dir.iterdir()] == [STATUS_FILE]  # no temporary file left


def test_minimal_status_before_any_event(state_dir: Path) -> None:
    write_status(state_dir, pid=7, started_at=STARTED)
    assert read_status(state_dir) == {
        "pid": 7,
        "started_at": "2026-04-08T10:00:00.000Z",
        "starting": False,
        "last_event": None,
        "counts": {},
        "pending": 0,
        "problems": [],
        "passes": {"count": 0, "seconds_total": 0.0, "last_s": 0.0, "longest_s": 0.0},
        "progress": None,
    }


def test_pass_times_are_read_back_while_the_daemon_runs(state_dir: Path) -> None:
    times = PassTimes()
    for seconds in (0.25, 1.5, 0.5):
        times.add(seconds)
    write_status(state_dir, pid=os.getpid(), started_at=STARTED, passes=times)
    assert pass_times(state_dir) is None  # no daemon holds the workspace
    with InstanceLock(state_dir):
        assert pass_times(state_dir) == PassTimes(3, 2.25, 0.5, 1.5)
        recorded = json.loads(status_path(state_dir).read_text())
        recorded["passes"]["count"] = "three"  # a damaged file reads as zero, not as a crash
        status_path(state_dir).write_text(json.dumps(recorded))
        assert pass_times(state_dir) == PassTimes(0, 2.25, 0.5, 1.5)


def test_running_daemon_is_described_with_uptime(state_dir: Path) -> None:
    with InstanceLock(state_dir):
        write_sample(state_dir, pid=os.getpid())
        status = describe(state_dir, now=STARTED + timedelta(minutes=5, seconds=1.9))
    assert set(status) == STATUS_KEYS
    assert status["running"] is True
    assert status["pid"] == os.getpid()
    assert status["uptime_s"] == 301
    assert status["last_event"] == EVENT.to_json()
    assert status["counts"] == {"approve": 3, "reject": 1}
    assert status["pending"] == 2
    assert status["problems"] == ["_data/agents/a/queue/x.json: not valid JSON (line 3, column 1)"]
    json.dumps(status)  # printable as is


def test_stopped_daemon_shows_what_it_last_did_without_pid_or_uptime(state_dir: Path) -> None:
    with InstanceLock(state_dir):
        write_sample(state_dir, pid=os.getpid())
    status = describe(state_dir, now=STARTED + timedelta(hours=1))
    assert status["running"] is False
    assert status["pid"] is None
    assert status["uptime_s"] is None
    assert status["last_event"] == EVENT.to_json()
    assert status["counts"] == {"approve": 3, "reject": 1}


def test_status_left_by_a_killed_daemon_does_not_claim_it_runs(state_dir: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    write_sample(state_dir, pid=int(dead.stdout))
    (state_dir / "daemon.lock").write_text(dead.stdout)
    status = describe(state_dir)
    assert (status["running"], status["pid"], status["uptime_s"]) == (False, None, None)


def test_new_daemon_before_its_first_status_write(state_dir: Path) -> None:
    write_sample(state_dir, pid=1)  # left by an earlier daemon
    with InstanceLock(state_dir):
        status = describe(state_dir)
    assert status["running"] is True and status["pid"] == os.getpid()
    assert status["uptime_s"] is None  # the recorded start belongs to the earlier daemon


def test_nothing_recorded_yet(state_dir: Path) -> None:
    assert read_status(state_dir) is None
    assert describe(state_dir) == {
        "running": False,
        "starting": False,
        "pid": None,
        "uptime_s": None,
        "last_event": None,
        "counts": {},
        "pending": 0,
        "problems": [],
    }


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"{not json",
        b'{"pid": 1, "started_at": "2026-04-08T10:00:00.000Z"',  # cut short by a crash
        b"[1, 2, 3]",
        b'"a string"',
        b"\xff\xfe not utf-8",
        b'{"pid": ' + b"1" * 10 + b"}" + b" " * (1024 * 1024),  # over 1 MiB
    ],
    ids=["empty", "malformed", "half-written", "array", "string", "binary", "huge"],
)
def test_unreadable_status_file_is_reported_not_fatal(state_dir: Path, content: bytes) -> None:
    state_dir.mkdir()
    status_path(state_dir).write_bytes(content)
    assert read_status(state_dir) is None
    status = describe(state_dir)
    assert status["running"] is False and status["counts"] == {}
    assert len(status["problems"]) == 1
    assert "status.json is unreadable" in status["problems"][0]
    assert "delete it" in status["problems"][0]


def test_wrong_types_inside_are_dropped_field_by_field(state_dir: Path) -> None:
    state_dir.mkdir()
    status_path(state_dir).write_text(
        json.dumps(
            {
                "pid": "12",
                "started_at": "yesterday",
                "last_event": {"time": "t", "event": "approve", "agent": 5, "summary": "s"},
                "counts": {"approve": 2, "reject": "3", "record": -1, "rating": True},
                "pending": -4,
                "problems": ["kept", 7, None],
            }
        )
    )
    status = describe(state_dir)
    assert status["last_event"] is None
    assert status["counts"] == {"approve": 2}
    assert status["pending"] == 0
    assert status["problems"] == ["kept"]


def test_bad_start_time_gives_no_uptime(state_dir: Path) -> None:
    with InstanceLock(state_dir):
        write_sample(state_dir, pid=os.getpid())
        recorded = json.loads(status_path(state_dir).read_text())
        for bad in ("yesterday", 12, None):
            recorded["started_at"] = bad
            status_path(state_dir).write_text(json.dumps(recorded))
            assert describe(state_dir)["uptime_s"] is None


def test_clock_set_back_gives_zero_uptime(state_dir: Path) -> None:
    with InstanceLock(state_dir):
        write_sample(state_dir, pid=os.getpid())
        assert describe(state_dir, now=STARTED - timedelta(hours=1))["uptime_s"] == 0


def test_state_dir_that_is_a_file(tmp_path: Path) -> None:
    not_a_folder = tmp_path / ".feedbackd"
    not_a_folder.write_text("")
    assert read_status(not_a_folder) is None
    assert describe(not_a_folder)["running"] is False


def test_leftover_temporary_file_is_not_read(state_dir: Path) -> None:
    state_dir.mkdir()
    (state_dir / f".status.json.1234{TMP_SUFFIX}").write_text('{"pid": 1}')
    assert read_status(state_dir) is None


def test_a_burst_in_hand_is_shown_only_while_its_daemon_runs(state_dir: Path) -> None:
    with InstanceLock(state_dir):
        write_status(
            state_dir, pid=os.getpid(), started_at=STARTED, progress=PassProgress("w", 3, 9)
        )
        assert daemon_progress(state_dir) == PassProgress("w", 3, 9)
        assert set(describe(state_dir)) == STATUS_KEYS  # `status --json` keeps its keys
    assert daemon_progress(state_dir) is None
    assert PassProgress("w", 1200, 1600).line() == "working: w, 1,200 of 1,600 decisions"
