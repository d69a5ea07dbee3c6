"""The daemon and `feedbackd serve` on one workspace, as the README's two units run them: a lock
left by a killed git is cleared while the server's git helpers live, a pass that keeps failing
shows in `status`, and a write over HTTP that cannot go ahead answers 503 instead of hanging."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from feedbackd.edges.gitlocks import FRESH_LOCK_S
from tests.web_kit import Server
from tests.workspace_kit import Site, draft, settling_in

pytestmark = pytest.mark.slow


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = settling_in(tmp_path / "ws", 50)
    for item in ("qi-1", "qi-2", "qi-3"):
        site.write("writer", f"{item}.json", draft({"title": f"Draft {item}"}))
    site.reconcile()  # the drafts are on record, as the daemon would have them
    return site


@pytest.fixture
def server(site: Site) -> Iterator[Server]:
    running = Server(site.root)
    yield running
    running.close()


def leave_stale_lock(site: Site) -> Path:
    """What a `kill -9` of the daemon during a burst leaves: an empty index lock, past its
    first moments (younger ones are always given time)."""
    lock = site.root / ".git" / "index.lock"
    lock.touch()
    old = time.time() - FRESH_LOCK_S - 10
    os.utime(lock, (old, old))
    return lock


def git_helpers_of(server: Server) -> list[str]:
    """The command lines of the server's git child processes."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) == server.process.pid:
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (OSError, ValueError):
            continue
    return [line for line in found if line.startswith("git")]


def test_a_stale_index_lock_is_cleared_while_serve_keeps_its_git_helpers(
    site: Site, server: Server
) -> None:
    assert server.post("/api/agents/writer/queue/qi-1/approve", {}).status == 200
    assert any("cat-file" in line for line in git_helpers_of(server))  # alive, as in the issue

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
