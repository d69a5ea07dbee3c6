"""`feedbackd serve` stopped by SIGTERM while a write is in flight (SPEC section 12): the write
either completes and answers truthfully, or answers 503 having changed nothing; and the server
exits 0. The write is made to outlive the 10 s grace by holding the workspace's write lock from
the test, as a daemon pass or a command would."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest

from feedbackd.app.commits.locking import write_lock
from feedbackd.edges.instance import WAITING, WRITE_LOCK
from tests.daemon_kit import wait_for
from tests.web_kit import Answer, Server
from tests.workspace_kit import Site, draft

pytestmark = pytest.mark.slow

GRACE_S = 10.0  # the server's grace for requests in flight after SIGTERM


def test_write_that_outlives_the_grace_answers_what_git_holds(tmp_path: Path) -> None:
    site = Site(tmp_path / "ws")
    site.write("writer", "qi-1.json", draft({"title": "A title"}))
    site.reconcile()
    commits = site.commit_count()
    server = Server(site.root, log=tmp_path / "serve.log")
    state_dir = site.runtime().workspace.state_dir
    answers: list[Answer] = []
    try:
        with write_lock(site.runtime()):
            writer = threading.Thread(
                target=lambda: answers.append(
                    server.post("/api/agents/writer/queue/qi-1/approve", {})
                )
            )
            writer.start()
            marker = f"{WRITE_LOCK}{WAITING}{server.process.pid}."
            wait_for(
                lambda: any(p.name.startswith(marker) for p in state_dir.iterdir()),
                what="the server's write to wait for the workspace lock",
            )
            server.process.send_signal(signal.SIGTERM)
            wait_for(
                lambda: "waiting for 1 write in flight" in server.log_text(),
                timeout=GRACE_S + 10,
                what="the server to wait for the write past its grace",
            )
        writer.join(timeout=30)
        stopped = server.process.wait(timeout=30)
    finally:
        server.close()

    assert stopped == 0
    [answer] = answers
    if answer.status == 200:
        assert site.commit_count() == commits + 1
        assert "writer/approved/qi-1.json" in site.git("show", "--name-only", "--format=", "HEAD")
        assert (site.agent("writer") / "approved" / "qi-1.json").is_file()
    else:
        assert (answer.status, answer.json()["error"]) == (503, "stopping")
        assert answer.headers["retry-after"]
        assert site.commit_count() == commits
        assert (site.agent("writer") / "queue" / "qi-1.json").is_file()
    assert "Traceback" not in server.log_text()
