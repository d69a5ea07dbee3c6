"""The daemon and `feedbackd serve` on one workspace, as the README's two units run them: a lock
left by a killed git is cleared while the server's git helpers live, a pass that keeps failing
shows in `status`, and a write over HTTP that cannot go ahead answers 503 instead of hanging."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from subprocess import PIPE

import pytest

from feedbackd.edges.git.locks import FRESH_LOCK_S
from feedbackd.edges.instance import WriteLock
from tests.daemon_kit import DaemonProcess, NotifyListener, status_json, wait_for
from tests.web_kit import Answer, Server
from tests.workspace_kit import Site, draft, settling_in

pytestmark = pytest.mark.slow

EDIT = {"type": "edit", "field": "title", "original": "a", "corrected": "b"}
NOTE = {"notes": "off topic"}
RATING = {
    "transaction_id": "3f1c2a9e-8d4b-4c7a-9e2f-1b5d6c7a8e90",
    "provider_agent": "provider-1",
    "skill_id": "summarise",
    "rating": 2,
    "result_quality": "poor",
    "would_reuse": False,
    "cost_value_ratio": "overpriced",
    "requester_agent": "buyer-1",
}


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = settling_in(tmp_path / "ws", 50)
    for item in ("qi-1", "qi-2", "qi-3"):
        site.write("writer", f"{item}.json", draft({"title": f"Draft {item}"}))
    site.reconcile()  # the drafts are on record, as the daemon would have them
    return site


def leave_stale_lock(site: Site) -> Path:
    """What a `kill -9` of the daemon during a burst leaves: an empty index lock, past its
    first moments (younger ones are always given time)."""
    lock = site.root / ".git" / "index.lock"
    lock.touch()
    old = time.time() - FRESH_LOCK_S - 10
    os.utime(lock, (old, old))
    return lock


def test_a_stale_index_lock_is_cleared_while_serve_has_the_repository_open(
    site: Site, server: Server
) -> None:
    """Neither the server's repository (libgit2, and git's helpers where libgit2 does not
    serve) nor anything it started is taken for a live holder of the lock."""
    assert server.post("/api/agents/writer/queue/qi-1/approve", {}).status == 200

    lock = leave_stale_lock(site)
    site.move("writer", "qi-2.json", "approved")  # the daemon has something to commit
    done = site.cli("run", "--once")
    assert done.returncode == 0, done.stderr
    assert "removed a stale" in done.stderr
    assert not lock.exists()
    assert site.git("log", "-1", "--format=%s").startswith("approve(writer): qi-2")

    lock = leave_stale_lock(site)
    answer = server.post("/api/agents/writer/queue/qi-3/approve", {})
    assert answer.status == 200, answer.body
    assert not lock.exists()
    assert site.git("log", "-1", "--format=%s").startswith("approve(writer): qi-3")
    assert site.git("status", "--porcelain") == ""


@contextlib.contextmanager
def users_git_holding_the_index(site: Site) -> Iterator[None]:
    """A real git that holds `.git/index.lock` while it waits on its input, as a user's commit
    waiting for its editor does; it lets go when its input ends."""
    with subprocess.Popen(["git", "update-index", "--stdin"], cwd=site.root, stdin=PIPE) as git:
        wait_for(lambda: (site.root / ".git" / "index.lock").exists(), what="git to take the lock")
        try:
            yield
        finally:
            assert git.stdin is not None
            git.stdin.close()


def impatient(site: Site) -> None:
    """Writes over HTTP wait half a second for the workspace, not the default 30 s."""
    site.configure("daemon:\n  settle_ms: 50\nhttp:\n  write_wait_s: 0.5\n")
    site.git("commit", "-q", "-am", "writes over HTTP wait half a second")


def assert_busy(answer: Answer, site: Site) -> None:
    """503 `busy`, with a message that names no path of the server's disk, and Retry-After."""
    assert answer.status == 503, answer.body
    assert answer.json()["error"] == "busy"
    assert "try again" in answer.json()["message"]
    assert str(site.root) not in answer.json()["message"]
    headers = {name.lower(): value for name, value in answer.headers.items()}
    assert int(headers["retry-after"]) > 0


def test_a_write_over_http_answers_busy_while_another_writer_holds_the_workspace(
    site: Site,
) -> None:
    impatient(site)
    server = Server(site.root)
    try:
        head = site.git("rev-parse", "HEAD")
        with WriteLock(site.root / ".feedbackd"):  # a daemon pass, a command: another writer
            started = time.monotonic()
            assert_busy(server.post("/api/agents/writer/queue/qi-1/approve", {}), site)
            assert_busy(server.post("/api/agents/writer/queue/qi-2/reject", NOTE), site)
            assert_busy(server.post("/api/cms/agents/writer/feedback", EDIT), site)
            assert_busy(server.post("/api/feedback", RATING), site)
            assert time.monotonic() - started < 10  # it did not hang
        assert site.git("rev-parse", "HEAD") == head
        assert site.git("status", "--porcelain") == ""
        assert (site.agent("writer") / "queue" / "qi-1.json").is_file()
        assert server.post("/api/agents/writer/queue/qi-1/approve", {}).status == 200
        assert server.post("/api/feedback", RATING).status == 201  # not stored before
    finally:
        server.close()


def test_a_write_over_http_answers_busy_while_a_git_command_holds_the_index(
    site: Site,
) -> None:
    impatient(site)
    server = Server(site.root)
    try:
        head = site.git("rev-parse", "HEAD")
        with users_git_holding_the_index(site):
            assert_busy(server.post("/api/agents/writer/queue/qi-1/approve", {}), site)
            assert_busy(server.post("/api/cms/agents/writer/feedback", EDIT), site)
            assert (site.agent("writer") / "queue" / "qi-1.json").is_file()
            assert not site.feedback("writer")
        assert site.git("rev-parse", "HEAD") == head
        assert site.git("status", "--porcelain") == ""
        assert server.post("/api/agents/writer/queue/qi-1/approve", {}).status == 200
    finally:
        server.close()


def test_a_pass_that_keeps_failing_is_a_status_problem_until_one_succeeds(
    site: Site, server: Server, start: type[DaemonProcess], listener: NotifyListener
) -> None:
    site.write("reader", "qi-9.json", draft({"title": "On record, nothing to commit"}))
    site.reconcile()
    site.move("writer", "qi-1.json", "approved")
    with users_git_holding_the_index(site):
        daemon = start(site, listener)
        problems = wait_for(lambda: status_json(site)["problems"], what="a status problem")
        assert any("index" in line and "git command" in line for line in problems), problems
        assert not any(line.startswith("reader") for line in problems)  # it needs no index
        shown = server.get("/api/status").json()["problems"]  # the same object, over HTTP
        assert any("index" in line and "git command" in line for line in shown), shown
        assert "approve(writer): qi-1" not in site.git("log", "--format=%s")
    wait_for(lambda: "approve(writer): qi-1" in site.git("log", "--format=%s"), what="a commit")
    wait_for(lambda: not status_json(site)["problems"], what="the problem to clear")
    assert server.get("/api/status").json()["problems"] == []
    assert daemon.proc.poll() is None
