"""A writing command during a burst records its own item or rating and leaves the rest of the
pending work to the daemon (or to `run --once` when no daemon runs)."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from feedbackd.app.commands import actions, submitting
from feedbackd.core.errors import AlreadySubmitted, WriterBusy
from feedbackd.edges.instance import WAITING, WRITE_LOCK, InstanceLock, WriteLock
from tests.daemon_kit import (
    DEADLINE_S,
    DaemonProcess,
    NotifyListener,
    decided,
    subjects,
    wait_for,
)
from tests.workspace_kit import Site, draft, settling_in

BURST = 80  # inbox ratings
APPROVALS = 100
RATING = {
    "transaction_id": "7d2e4b1a-3c5f-4e6a-8b9c-0d1e2f3a4b5c",
    "provider_agent": "provider-1",
    "skill_id": "summarise",
    "rating": 4,
    "result_quality": "good",
    "would_reuse": True,
    "cost_value_ratio": "fair",
    "requester_agent": "buyer-1",
}


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return settling_in(tmp_path / "ws", 50)


def queue_drafts(site: Site, count: int) -> list[str]:
    """count drafts in w's queue/, committed as a daemon's earlier pass did."""
    names = [f"qi-{number:03d}" for number in range(count)]
    for name in names:
        site.write("w", f"{name}.json", draft({"title": f"Draft {name}", "excerpt": "Same."}))
    site.reconcile()
    return names


def approve_by_hand(site: Site, names: list[str]) -> None:
    """A curator's burst: each draft edited, then moved to approved/."""
    for name in names:
        site.write("w", f"{name}.json", draft({"title": f"Edited {name}", "excerpt": "Same."}))
        site.move("w", f"{name}.json", "approved")


def command(site: Site, *args: str) -> subprocess.Popen[str]:
    """The real command line, started (Site.cli runs one to its end)."""
    argv = [sys.executable, "-m", "feedbackd", "-w", str(site.root), *args]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished(started: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    stdout, stderr = started.communicate(timeout=120)
    return subprocess.CompletedProcess(started.args, started.returncode, stdout, stderr)


def items_named(text: str) -> set[str]:
    return set(re.findall(r"qi-\d{3}", text))


def test_approve_without_a_daemon_records_its_own_item_only(
    site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    """`approve w qi-003` records qi-003; the approvals waiting beside it stay pending for the
    daemon or `run --once`, which records each of them as before."""
    names = queue_drafts(site, 4)
    approve_by_hand(site, names[:3])
    with caplog.at_level(logging.INFO, logger="feedbackd"):
        report = actions.approve(site.runtime(), "w", names[3])
    assert "w: 3 other decisions wait" in caplog.text
    assert [(event.event, event.item) for event in report.events] == [("approve", names[3])]
    assert subjects(site)[0].startswith(f"approve(w): {names[3]}")
    assert decided(site, "w") == [names[3]]
    assert site.git("status", "--porcelain", "--", "_data/agents/w/approved/qi-003.json") == ""

    site.reconcile()  # what `run --once` (or the daemon) does with the rest
    assert sorted(decided(site, "w")) == names
    titles = {entry["corrected"] for entry in site.feedback("w") if entry["type"] == "correction"}
    assert titles == {f"Edited {name}" for name in names[:3]}


def test_reject_and_approve_with_edits_leave_the_other_pending_decisions(site: Site) -> None:
    names = queue_drafts(site, 4)
    approve_by_hand(site, names[:2])
    actions.reject(site.runtime(), "w", names[2], "Too dry")
    actions.approve(site.runtime(), "w", names[3], {"title": "Better title"})
    assert decided(site, "w", "rejected") == [names[2]]
    assert decided(site, "w") == [names[3]]
    corrected = [
        entry["corrected"] for entry in site.feedback("w") if entry["type"] == "correction"
    ]
    assert corrected == ["Better title"]


@pytest.mark.slow
def test_approve_and_submit_during_a_burst_record_only_their_own(
    site: Site, listener: NotifyListener, start: type[DaemonProcess]
) -> None:
    """While the daemon works through a burst, `approve` and `feedback submit` each take the
    lock after the decision in hand, record their own item or rating, and leave the burst to
    the daemon: the command names no item of the burst, and the daemon's burst goes on after
    the command's own decision."""
    names = queue_drafts(site, APPROVALS + 1)
    own, burst = names[-1], names[:-1]
    daemon = start(site, listener)
    daemon.wait_ready()
    approve_by_hand(site, burst)
    wait_for(lambda: len(decided(site, "w")) >= 1, what="the burst's first decision")

    # Both at once, as two users would, started while the daemon stands still in its burst
    # (maybe holding the lock), so that the burst goes on however slowly they start.
    with standing_still(daemon):
        assert len(decided(site, "w")) < len(burst), "the burst was over; make it larger"
        approving = command(site, "approve", "w", own)
        rating = command(site, "feedback", "submit", "--json", json.dumps(RATING))
        wait_for(lambda: at_the_write_lock(site, [approving, rating]), what="both at the lock")
    approved, rated = finished(approving), finished(rating)
    assert approved.returncode == 0, approved.stderr
    assert items_named(approved.stdout + approved.stderr) == {own}
    assert rated.returncode == 0, rated.stderr
    assert_recorded_or_queued(site, rated)
    assert items_named(rated.stdout + rated.stderr) == set()

    wait_for(lambda: sorted(decided(site, "w")) == names, what="the rest of the burst")
    in_order = decided(site, "w")
    assert in_order.count(own) == 1
    # Each waited for the decision in hand, not for the burst: the daemon's went on after.
    assert in_order[in_order.index(own) + 1 :], in_order
    wait_for(lambda: stored_ratings(site) == [RATING["transaction_id"]], what="the rating")
    assert "busy" not in daemon.log()


@contextmanager
def standing_still(daemon: DaemonProcess) -> Iterator[None]:
    """The daemon stopped (SIGSTOP) wherever it is, and going on (SIGCONT) afterwards."""
    os.kill(daemon.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(daemon.pid, signal.SIGCONT)


def at_the_write_lock(site: Site, commands: list[subprocess.Popen[str]]) -> bool:
    """Each command done, or waiting for the write lock (its mark beside the lock says so)."""
    marks = (site.root / ".feedbackd").glob(f"{WRITE_LOCK}{WAITING}*")
    waiting = {mark.name.removeprefix(f"{WRITE_LOCK}{WAITING}").split(".")[0] for mark in marks}
    return all(started.poll() is not None or str(started.pid) in waiting for started in commands)


def assert_recorded_or_queued(site: Site, rated: subprocess.CompletedProcess[str]) -> None:
    """What `feedback submit` promises beside a running daemon: the rating recorded, or, when the
    workspace stayed busy longer than a command waits (a busy machine), queued in the rating
    inbox for the daemon, which records it. Either way it ends up stored exactly once, which
    the caller waits for (stored_ratings)."""
    answer = json.loads(rated.stdout)
    assert answer["status"] in ("recorded", "queued"), answer
    if answer["status"] == "queued":
        assert answer["file"].startswith("_data/inbox/ratings/"), answer


def stored_ratings(site: Site) -> list[str]:
    """The transaction ids of provider-1's stored ratings, one per stored line, and only once
    its commit is in (so a rating stored twice shows twice)."""
    if not any(s.startswith("rating(provider-1/summarise)") for s in subjects(site)):
        return []
    stored = (site.agent("provider-1") / "ratings").rglob("*.jsonl")
    lines = [line for path in stored for line in path.read_text().splitlines()]
    return [json.loads(line)["transaction_id"] for line in lines]


@contextmanager
def held_by_a_daemon(site: Site) -> Iterator[None]:
    """The workspace's instance and write locks held by another thread, as a daemon in the
    middle of a long write holds them (flock locks of two open files exclude each other)."""
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        state_dir = site.root / ".feedbackd"
        with InstanceLock(state_dir), WriteLock(state_dir):
            taken.set()
            release.wait(DEADLINE_S)

    holder = threading.Thread(target=hold)
    holder.start()
    taken.wait(DEADLINE_S)
    try:
        yield
    finally:
        release.set()
        holder.join()


def test_a_rating_that_cannot_wait_any_longer_is_queued_for_the_daemon(site: Site) -> None:
    """The rating is never lost: kept in the rating inbox, the daemon records it once the
    workspace is free, exactly once."""
    runtime = replace(site.runtime(), write_wait_s=0.2)
    with held_by_a_daemon(site):
        queued = submitting.submit_or_queue(runtime, json.dumps(RATING), None)
        assert isinstance(queued, Path) and queued.parent == site.data / "inbox" / "ratings"
        with pytest.raises(AlreadySubmitted):
            submitting.submit_or_queue(runtime, json.dumps(RATING), None)
    site.reconcile()  # the daemon's next pass over the inbox
    assert not queued.exists()
    assert [s for s in subjects(site) if s.startswith("rating(provider-1/summarise)")]
    stored = (site.agent("provider-1") / "ratings").rglob("*.jsonl")
    lines = [line for path in stored for line in path.read_text().splitlines()]
    assert [json.loads(line)["transaction_id"] for line in lines] == [RATING["transaction_id"]]


def test_without_a_daemon_a_busy_workspace_says_the_rating_was_not_recorded(
    site: Site,
) -> None:
    runtime = replace(site.runtime(), write_wait_s=0.2)
    state_dir = site.root / ".feedbackd"
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with WriteLock(state_dir):  # another command writing, no daemon
            taken.set()
            release.wait(DEADLINE_S)

    holder = threading.Thread(target=hold)
    holder.start()
    taken.wait(DEADLINE_S)
    try:
        with pytest.raises(WriterBusy) as refused:
            submitting.submit_or_queue(runtime, json.dumps(RATING), None)
    finally:
        release.set()
        holder.join()
    assert "NOT recorded" in refused.value.message
    assert "again" in (refused.value.hint or "")
    assert not (site.data / "inbox" / "ratings").exists() or not any(
        (site.data / "inbox" / "ratings").iterdir()
    )


def inbox_rating(number: int) -> dict[str, object]:
    return {
        **RATING,
        "transaction_id": f"00000000-0000-4000-8000-{number:012d}",
        "requester_agent": f"buyer-{number % 3}",
    }


@pytest.mark.slow
def test_submit_during_a_burst_of_inbox_ratings_waits_for_one_of_them(
    site: Site, listener: NotifyListener, start: type[DaemonProcess]
) -> None:
    """Rating files dropped in the inbox are recorded one commit each; a `feedback submit`
    meanwhile goes first after the one in hand, not after the whole inbox."""
    inbox = site.data / "inbox" / "ratings"
    inbox.mkdir(parents=True, exist_ok=True)
    daemon = start(site, listener)
    daemon.wait_ready()
    for number in range(BURST):
        (inbox / f".r{number}.tmp").write_text(json.dumps(inbox_rating(number)))
        (inbox / f".r{number}.tmp").rename(inbox / f"r{number:03d}.json")
    wait_for(lambda: len(list(inbox.glob("*.json"))) < BURST, what="the first inbox rating")

    rated = site.cli("feedback", "submit", "--json", json.dumps(RATING))
    assert rated.returncode == 0, rated.stderr
    assert_recorded_or_queued(site, rated)
    assert list(inbox.glob("*.json")), "the inbox was emptied first; make the burst larger"
    wait_for(lambda: not list(inbox.glob("*.json")), what="the rest of the inbox")
    wait_for(lambda: RATING["transaction_id"] in stored_ratings(site), what="the rating")
    assert stored_ratings(site).count(str(RATING["transaction_id"])) == 1
    assert "busy" not in daemon.log()
