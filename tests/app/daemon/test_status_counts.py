"""`status` (and `/metrics`) count what the workspace recorded since the daemon started, whoever
recorded it: the daemon, a command, the panel, another clone whose commits were pulled. And a
daemon still in its start-up pass says it is starting, with a well-typed `status --json`."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

import pytest

from feedbackd.app.daemon.statusfile import write_status
from feedbackd.core.commitmsg import build_message
from feedbackd.edges.clock import utcnow
from feedbackd.edges.git.repo import GitRepo, history_of
from feedbackd.edges.instance import InstanceLock
from tests.conftest import git
from tests.daemon_kit import DaemonProcess, NotifyListener, idle, status_json, wait_for
from tests.web_kit import serving
from tests.workspace_kit import SAVED_AGO_S, Site, draft

AGENT = "w"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "ws")


# --- start-up -----------------------------------------------------------------------------------
def test_a_daemon_in_its_start_up_pass_is_starting_never_up_none(site: Site) -> None:
    state_dir = site.root / ".feedbackd"
    with InstanceLock(state_dir):
        # The lock is taken; the daemon has not written its status file yet.
        state = status_json(site)
        assert state["running"] is True and state["starting"] is True
        assert state["uptime_s"] is None and state["pid"] == os.getpid()
        human = site.cli("status").stdout
        assert human.startswith(f"starting (pid {os.getpid()})") and "None" not in human

        started = utcnow() - timedelta(seconds=3)
        write_status(state_dir, pid=os.getpid(), started_at=started, starting=True)
        state = status_json(site)
        assert state["starting"] is True and isinstance(state["uptime_s"], int)
        assert site.cli("status").stdout.startswith(f"starting (pid {os.getpid()}, up ")

        write_status(state_dir, pid=os.getpid(), started_at=started)
        assert status_json(site)["starting"] is False
        assert site.cli("status").stdout.startswith(f"running (pid {os.getpid()}, up ")
    assert status_json(site)["starting"] is False  # not running: not starting either


# --- what reached HEAD between two commits (edges) ----------------------------------------------
def commit_event(root: Path, item: str, event: str = "approve") -> str:
    message = build_message(event, AGENT, item, trailers=[("Feedback-Item", item)])
    git(root, "commit", "-q", "--allow-empty", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


def test_the_events_since_a_commit_leave_out_the_copies_a_rebase_made(site: Site) -> None:
    base = git(site.root, "rev-parse", "HEAD").strip()
    mine = commit_event(site.root, "d1")  # counted already: the old tip
    git(site.root, "checkout", "-q", "-b", "remote", base)
    theirs = commit_event(site.root, "d2", "reject")  # another clone's decision
    git(site.root, "checkout", "-q", "-")
    git(site.root, "rebase", "-q", "remote")  # what a pull with rebase does
    latest = commit_event(site.root, "d3")
    with GitRepo(site.root) as repo:
        found = history_of(repo).events_since(mine, latest)
        assert [(e.event, e.item) for e in found] == [("approve", "d3"), ("reject", "d2")]
        assert found[1].commit == theirs
        assert [e.item for e in history_of(repo).events_since(None, latest)] == [
            "d3",
            "d1",
            "d2",
        ]
        assert history_of(repo).events_since(latest, latest) == []
        # HEAD read through the long-lived cat-file: the same answers, dated alike.
        assert history_of(repo).events_to_head(mine) == (latest, found)
        assert history_of(repo).events_to_head(latest) == (latest, [])
        rebased = git(site.root, "rev-parse", "HEAD~").strip()
        assert history_of(repo).events_to_head(rebased) == (latest, found[:1])
        assert history_of(repo).events_to_head(None)[1] == history_of(repo).events_since(
            None, latest
        )


# --- the daemon, counting what others recorded ------------------------------------------------
def saved_long_ago(path: Path) -> None:
    os.utime(path, (os.path.getmtime(path) - SAVED_AGO_S,) * 2)


@pytest.mark.slow
def test_status_counts_every_decision_whoever_made_it(
    site: Site, tmp_path: Path, listener: NotifyListener, start: type[DaemonProcess]
) -> None:
    for name in ("d1", "d2", "d3", "d4", "d5"):
        site.write(AGENT, f"{name}.json", draft({"title": f"Draft {name}"}))
    site.reconcile()
    other = tmp_path / "other"  # another machine's clone decides d5
    git(tmp_path, "clone", "-q", str(site.root), str(other))
    approved = other / "_data/agents/w/approved"
    approved.mkdir(exist_ok=True)  # the clone has it, kept by its .gitkeep
    (other / "_data/agents/w/queue/d5.json").rename(approved / "d5.json")
    saved_long_ago(approved / "d5.json")
    assert site.cli("-w", str(other), "run", "--once").returncode == 0

    daemon = start(site, listener)
    daemon.wait_ready()
    git(site.root, "pull", "-q", "--ff-only", str(other), "HEAD")  # a sync, by hand
    site.move(AGENT, "d1.json", "rejected")  # the daemon's own decision
    wait_for(lambda: status_json(site)["counts"].get("reject") == 1, what="the daemon's reject")
    assert site.cli("approve", AGENT, "d2").returncode == 0
    with serving(site.root) as client:
        assert client.post(f"/api/agents/{AGENT}/queue/d3/approve", {}).status == 200
    assert site.cli("reject", AGENT, "d4", "--notes", "Too vague").returncode == 0

    expected = {"approve": 3, "reject": 2}
    wait_for(
        lambda: {k: v for k, v in status_json(site)["counts"].items() if k in expected} == expected,
        what="every decision counted",
    )
    idle(daemon)
    state = status_json(site)
    assert (state["last_event"]["event"], state["last_event"]["summary"]) == ("reject", "d4")
    assert state["starting"] is False
    with serving(site.root) as client:
        metrics = client.get("/metrics").text
    assert 'feedbackd_events_total{event="approve"} 3' in metrics
    assert daemon.stop() == 0
    assert json.loads((site.root / ".feedbackd/status.json").read_text())["counts"]["reject"] == 2
