"""A hostile workspace: files that are not files, folders where files belong, loops of symbolic
links, and a daemon that must keep going through all of them.

Each test is a finding that once broke feedbackd (a traceback, exit 3, or a dead daemon); each
checks that the answer is now a clear message and that the pipeline catches up once the
condition is fixed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from feedbackd.app.workspace.runtime import Runtime
from tests.cli_kit import run_process
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
    (site.agent("a1") / "feedback.json").unlink()  # committed empty with the draft
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
    (blocker / "feedback.md").unlink()  # committed empty with the draft
    blocker.rmdir()
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
    assert (site.agent("a1") / "queue" / "q2.json").is_file()  # where it was: not decided

    blocker.unlink()
    assert site.cli("run", "--once").returncode == 0
    assert committed(site, "approve(a1): q1, 1 correction (title)")
    assert site.cli("approve", "a1", "q2").returncode == 0
    assert committed(site, "approve(a1): q2, no corrections")
    assert len(site.feedback("a1")) == 1


def test_moving_the_whole_approved_folder_to_rejected_commits_the_moves(site: Site) -> None:
    for item in ("q1", "q2"):
        site.write("a1", f"{item}.json", draft({"title": "Hello"}))
    site.reconcile()
    # Folders that hold decisions only: without the .gitkeep files of the agent's first commit.
    site.git("rm", "-q", "_data/agents/a1/approved/.gitkeep", "_data/agents/a1/rejected/.gitkeep")
    site.git("commit", "-qm", "decision folders without .gitkeep")
    for item in ("q1", "q2"):
        site.move("a1", f"{item}.json", "approved")
    site.reconcile()
    rejected = site.agent("a1") / "rejected"
    if rejected.exists():
        rejected.rmdir()
    (site.agent("a1") / "approved").rename(rejected)

    report = site.reconcile()

    assert [event.summary for event in report.events] == ["q1", "q2"]
    assert site.git("status", "--porcelain", "--untracked-files=no") == ""
    assert "{approved => rejected}/q2.json" in site.git("show", "--stat", "--format=", "HEAD")


def test_a_very_deep_folder_tree_is_walked_without_overflowing(site: Site) -> None:
    site.write("a1", "q1.json", draft({"title": "Hello"}))
    top = deep = site.agent("a1") / "junk"
    deep.mkdir()
    try:
        for _ in range(1100):  # deeper than Python's recursion limit (mkdir -p recurses too)
            os.mkdir(deep := deep / "d")
        leftover = deep / ".x.json.0a1b2c3d.feedbackd-tmp"
        leftover.write_text("left by a killed writer\n")

        done = site.cli("run", "--once")

        assert done.returncode == 0, done.stderr
        assert "1 new draft (q1)" in done.stdout
        assert not leftover.exists()
    finally:
        subprocess.run(["rm", "-rf", str(top)], check=True)  # pytest's clean-up recurses


def test_a_file_name_too_long_for_its_error_file_holds_up_nothing(site: Site) -> None:
    site.write("a1", "q1.json", draft({"title": "Hello"}))
    site.reconcile()
    site.write("a1", "q1.json", draft({"title": "Hello, world"}))
    site.move("a1", "q1.json", "approved")
    long_name = site.write("a1", "x" * 250 + ".json", b"{not json")  # .error: 261 bytes
    site.write("a1", "zz.json", b"{not json")
    site.configure("daemon:\n  settle_ms: 0\n")

    done = site.cli("run", "--once")

    assert done.returncode == 0, done.stderr
    assert committed(site, "approve(a1): q1, 1 correction (title)")
    assert "cannot write" in done.stderr and "File name too long" in done.stderr
    assert (site.agent("a1") / "queue" / "zz.json.error").is_file()
    assert long_name.read_bytes() == b"{not json"


def _run_once_or_hang(site: Site, *args: str) -> subprocess.CompletedProcess[str]:
    """`run --once` in a process of its own with a short deadline: opening a named pipe to read
    waits forever, and only a process can be given up on."""
    return run_process(["-w", str(site.root), *(args or ("run", "--once"))], timeout=30)


def test_named_pipes_where_feedbackd_reads_never_hang_it(site: Site) -> None:
    site.write("a1", "q1.json", draft({"title": "Hello"}))
    site.write("a2", "q1.json", draft({"title": "Hello"}))
    os.mkfifo(site.agent("a1") / "feedback.json")
    os.mkfifo(site.agent("a2") / "decisions.jsonl")

    done = _run_once_or_hang(site)

    assert done.returncode == 0, done.stderr
    assert "a1/feedback.json: feedback.json cannot be read: not a plain file" in done.stderr
    assert "a2/decisions.jsonl: not a plain file (a pipe, socket or device)" in done.stderr
    assert _run_once_or_hang(site, "doctor").returncode == 1


def test_a_prompt_snippet_that_is_not_utf8_is_written_anew(site: Site) -> None:
    site.write("a1", "q1.json", draft({"title": "Hello"}))
    site.reconcile()
    site.write("a1", "q1.json", draft({"title": "Hello, world"}))
    site.move("a1", "q1.json", "approved")
    (site.agent("a1") / "prompt" / "feedback.md").write_bytes(b"\xff\xfe garbage")

    done = site.cli("run", "--once")

    assert done.returncode == 0, done.stderr
    assert "Corrected: Hello, world" in site.prompt("a1")


RATING = {
    "transaction_id": "6f1c2a9e-3b4d-4c5e-8f70-1a2b3c4d5e6f",
    "provider_agent": "provider",
    "requester_agent": "requester",
    "skill_id": "code-run",
    "rating": 5,
    "result_quality": "excellent",
    "would_reuse": True,
    "cost_value_ratio": "great",
}


def test_rating_inbox_refuses_what_is_not_a_plain_file_and_goes_on(site: Site) -> None:
    inbox = site.data / "inbox" / "ratings"
    inbox.mkdir(parents=True, exist_ok=True)
    (inbox / "folder.json").mkdir()
    os.mkfifo(inbox / "pipe.json")
    _loop(inbox, "loop1.json", "loop2.json")
    outside = site.root.parent / "outside.json"
    outside.write_text(
        json.dumps({**RATING, "transaction_id": "7f1c2a9e-3b4d-4c5e-8f70-1a2b3c4d5e6f"})
    )
    os.symlink(outside, inbox / "outside.json")
    (inbox / "good.json").write_text(json.dumps(RATING))

    done = _run_once_or_hang(site)

    assert done.returncode == 0, done.stderr
    assert "rating(provider): 5/5 excellent from requester" in done.stdout
    assert not (inbox / "good.json").exists()
    assert "folder.json: the file cannot be read: Is a directory" in done.stderr
    assert "pipe.json: the file cannot be read: not a plain file" in done.stderr
    assert "loop1.json: the file cannot be read: Too many levels of symbolic links" in done.stderr
    assert "outside.json: symbolic link leads outside the workspace" in done.stderr
    for name in ("folder.json", "pipe.json", "loop1.json", "outside.json"):
        assert (inbox / f"{name}.error").is_file()
    assert outside.exists() and (inbox / "outside.json").is_symlink()
    assert _run_once_or_hang(site, "doctor").returncode == 1


def test_approve_and_reject_into_a_file_change_nothing_and_say_why(site: Site) -> None:
    draft_path = site.write("a1", "q1.json", draft({"title": "Hello"}))
    before = draft_path.read_bytes()
    for folder in ("approved", "rejected"):
        (site.agent("a1") / folder).write_text("a file, not a folder\n")

    approving = site.cli("approve", "a1", "q1")
    rejecting = site.cli("reject", "a1", "q1", "--notes", "Too dry")

    for done, folder in ((approving, "approved"), (rejecting, "rejected")):
        assert done.returncode == 1, done.stderr
        where = f"_data/agents/a1/{folder}"  # relative to the workspace, as every message says
        assert f"error: workspace_error: {where} is a file" in done.stderr
    assert draft_path.read_bytes() == before  # the notes were not written either


# --- git -------------------------------------------------------------------------------------


def _start_conflicted_rebase(site: Site) -> None:
    """The user rebases a branch and stops at a conflict in a file of their own."""
    site.git("branch", "-M", "main")
    (site.root / "notes.txt").write_text("base\n")
    site.git("add", "notes.txt")
    site.git("commit", "-q", "-m", "base")
    site.git("checkout", "-q", "-b", "side")
    (site.root / "notes.txt").write_text("side\n")
    site.git("commit", "-q", "-am", "side")
    site.git("checkout", "-q", "main")
    (site.root / "notes.txt").write_text("main\n")
    site.git("commit", "-q", "-am", "main")
    site.git("checkout", "-q", "side")
    rebase = subprocess.run(["git", "rebase", "main"], cwd=site.root, capture_output=True)
    assert rebase.returncode != 0 and (site.root / ".git" / "rebase-merge").is_dir()


def test_nothing_is_written_or_committed_during_a_users_rebase(site: Site) -> None:
    _start_conflicted_rebase(site)
    draft_path = site.write("a1", "q1.json", draft({"title": "Hello"}))

    done = site.cli("run", "--once")
    approving = site.cli("approve", "a1", "q1")

    assert done.returncode == 0
    assert "a git rebase is in progress in the workspace; feedbackd records nothing" in (
        done.stderr
    )
    assert "git rebase --abort" in done.stderr
    assert approving.returncode == 1
    assert "error: git_error: a git rebase is in progress" in approving.stderr
    assert not (site.root / ".feedbackd" / "snapshots" / "a1").exists()  # nothing written
    assert draft_path.is_file()  # the approval that failed left the draft where it was

    # The abort would have thrown away a commit made meanwhile, and the draft with it.
    site.git("rebase", "--abort")
    assert draft_path.is_file()
    assert site.cli("run", "--once").returncode == 0
    assert committed(site, "draft(a1): 1 new draft (q1)")
    assert site.git("branch", "--show-current").strip() == "side"
    assert draft_path.is_file()


# --- configuration -------------------------------------------------------------------------


def test_status_works_with_a_broken_configuration(site: Site) -> None:
    site.configure("feedbak:\n  max_entries: 3\n")

    done = site.cli("status", "--json")

    assert done.returncode == 0, done.stderr
    assert "unknown key `feedbak`" in done.stdout
    assert site.cli("doctor").returncode == 1  # other commands refuse, with the reason


def test_a_configuration_written_after_start_up_is_read_on_reload(site: Site) -> None:
    (site.root / "feedbackd.yaml").unlink()
    runtime = site.runtime()
    assert runtime.config_file is None

    site.configure("prompt:\n  show_field: true\n")
    reloaded = runtime.reload()

    assert reloaded.settings.prompt.show_field
    assert reloaded.config_file == site.root / "feedbackd.yaml"
    assert isinstance(reloaded, Runtime)


# --- the daemon ------------------------------------------------------------------------------


@pytest.mark.slow
def test_daemon_keeps_its_configuration_on_a_bad_reload_and_says_so(site: Site) -> None:
    listener = NotifyListener(site.root.parent)
    daemon = DaemonProcess(site, listener)
    try:
        daemon.wait_ready()
        site.configure("feedback:\n  max_entries: [\n")
        daemon.signal(signal.SIGHUP)
        listener.wait("READY=1", count=2)
        problems = status_json(site)["problems"]
        assert any("configuration not reloaded, the old one stands" in p for p in problems)

        site.write("a1", "q1.json", draft({"title": "Hello"}))  # the old settings still work
        wait_for(lambda: committed(site, "draft(a1): 1 new draft (q1)"), what="the draft")

        site.configure("feedback:\n  max_entries: 50\n")
        daemon.signal(signal.SIGHUP)
        listener.wait("READY=1", count=3)
        wait_for(
            lambda: not any("configuration" in p for p in status_json(site)["problems"]),
            what="the problem to clear",
        )
        assert daemon.proc.poll() is None
    finally:
        daemon.close()
        listener.close()


@pytest.mark.slow
def test_daemon_waits_out_a_users_rebase_and_catches_up(site: Site) -> None:
    listener = NotifyListener(site.root.parent)
    daemon = DaemonProcess(site, listener)
    try:
        daemon.wait_ready()
        _start_conflicted_rebase(site)
        draft_path = site.write("a1", "q1.json", draft({"title": "Hello"}))
        wait_for(
            lambda: any("rebase is in progress" in p for p in status_json(site)["problems"]),
            what="status to show the rebase",
        )
        site.git("rebase", "--abort")
        wait_for(lambda: committed(site, "draft(a1): 1 new draft (q1)"), what="the draft")
        assert draft_path.is_file() and daemon.proc.poll() is None
    finally:
        daemon.close()
        listener.close()


@pytest.mark.slow
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
