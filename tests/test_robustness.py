"""A hostile workspace: files that are not files, folders where files belong, loops of symbolic
links, and a daemon that must keep going through all of them.

Each test is a finding that once broke feedbackd (a traceback, exit 3, or a dead daemon); each
checks that the answer is now a clear message and that the pipeline catches up once the
condition is fixed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.daemon_kit import DaemonProcess, NotifyListener, committed, status_json, wait_for
from tests.workspace_kit import Site, draft


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "ws")


def _loop(folder: Path, first: str, second: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    os.symlink(second, folder / first)
    os.symlink(first, folder / second)


# --- run --once ------------------------------------------------------------------------------


def test_symbolic_link_loops_are_ignored_with_a_reason(site: Site) -> None:
    site.write("a1", "good.json", draft({"title": "Hello"}))
    _loop(site.agent("a1") / "queue", "loop1.json", "loop2.json")
    _loop(site.data / "agents", "loopA", "loopB")

    done = site.cli("run", "--once")

    assert done.returncode == 0, done.stderr
    assert "1 new draft (good)" in done.stdout
    assert "queue/loop1.json: cannot be read (Too many levels of symbolic links)" in done.stderr


def test_entries_named_like_items_that_are_not_files_are_reported(site: Site) -> None:
    queue, approved = site.agent("a1") / "queue", site.agent("a1") / "approved"
    (queue / "qi-1.json").mkdir(parents=True)
    (approved / "qi-2.json").mkdir(parents=True)
    os.mkfifo(queue / "pipe.json")
    site.write("a1", "good.json", draft({"title": "Hello"}))

    report = site.reconcile()

    assert "_data/agents/a1/queue/qi-1.json: a folder, not an item file; ignored" in (
        report.warnings
    )
    assert "_data/agents/a1/approved/qi-2.json: a folder, not an item file; ignored" in (
        report.warnings
    )
    assert any("pipe.json: not a plain file" in warning for warning in report.warnings)
    assert committed_drafts(site) == ["draft(a1): 1 new draft (good)"]


def test_a_folder_named_feedback_json_makes_decisions_wait(site: Site) -> None:
    site.write("a1", "q1.json", draft({"title": "Hello"}))
    site.reconcile()
    site.write("a1", "q1.json", draft({"title": "Hello, world"}))
    site.move("a1", "q1.json", "approved")
    (site.agent("a1") / "feedback.json").mkdir()

    done = site.cli("run", "--once")

    assert done.returncode == 0, done.stderr
    assert "feedback.json cannot be read: Is a directory" in done.stderr
    assert (site.agent("a1") / "feedback.json.error").is_file()
    assert not committed(site, "approve(a1)")

    (site.agent("a1") / "feedback.json").rmdir()
    assert site.cli("run", "--once").returncode == 0
    assert [entry["corrected"] for entry in site.feedback("a1")] == ["Hello, world"]


def test_a_file_named_prompt_holds_up_only_its_agent(site: Site) -> None:
    for agent in ("a1", "a2"):
        site.write(agent, "q1.json", draft({"title": "Hello"}))
    site.reconcile()
    for agent in ("a1", "a2"):
        site.write(agent, "q1.json", draft({"title": "Hello, world"}))
        site.move(agent, "q1.json", "approved")
    blocker = site.agent("a1") / "prompt"
    blocker.write_text("not a folder\n")

    done = site.cli("run", "--once")

    assert done.returncode == 0, done.stderr
    assert "_data/agents/a1/prompt: a file stands where feedbackd needs a folder" in done.stderr
    assert committed(site, "approve(a2): q1, 1 correction (title)")
    assert not committed(site, "approve(a1)")
    assert blocker.read_text() == "not a folder\n"  # never replaced or removed

    site.write("a1", "q2.json", draft({"title": "Bye"}))
    approving = site.cli("approve", "a1", "q2")  # a command on that agent says why it failed
    assert approving.returncode == 1
    assert "error: workspace_error: _data/agents/a1/prompt: a file stands" in approving.stderr

    blocker.unlink()
    assert site.cli("run", "--once").returncode == 0
    assert committed(site, "approve(a1): q1, 1 correction (title)")
    assert committed(site, "approve(a1): q2, no corrections")
    assert len(site.feedback("a1")) == 1


# --- the daemon ------------------------------------------------------------------------------


def test_daemon_survives_a_symbolic_link_loop_among_agent_folders(site: Site) -> None:
    listener = NotifyListener(site.root.parent)
    daemon = DaemonProcess(site, listener)
    try:
        daemon.wait_ready()
        _loop(site.data / "agents", "loopA", "loopB")
        site.write("a1", "q1.json", draft({"title": "Hello"}))
        wait_for(lambda: committed(site, "draft(a1): 1 new draft (q1)"), what="the draft")
        assert daemon.proc.poll() is None, daemon.log()
        assert "Traceback" not in daemon.log()
        assert status_json(site)["running"]
    finally:
        daemon.close()
        listener.close()


def committed_drafts(site: Site) -> list[str]:
    return [s for s in site.git("log", "--format=%s").splitlines() if s.startswith("draft(")]
