"""Passes with many decisions waiting stay short and stop when asked.

A pass starts a bounded number of git processes, however many decisions wait: reading the
drafts' first versions (which approvals are diffed against) walks history once per pass, not
once per item. What grows with the decisions is their commits: one `update-ref` each (HEAD moved
by compare-and-swap), and one `update-index` (the user's index follows) for each short run of
decisions made holding git's index lock. And SIGTERM during such a pass ends the daemon within
seconds, after the decision in hand, even where each walk of history is slow (a big site's)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from feedbackd.app.curation import agentpass
from feedbackd.app.curation.agentpass import RUN_STEPS
from feedbackd.edges.git import commit as commit_module
from feedbackd.edges.git.repo import GitRepo
from tests.conftest import git
from tests.daemon_kit import DaemonProcess, NotifyListener, committed, decided, ledger, wait_for
from tests.git_kit import counting_git
from tests.workspace_kit import Site, draft, settling_in

# The git commands that grow with the decisions (edges/git/commit.py); anything else is reading.
# (and git's repack of the packs commits leave, started now and then: edges/git/upkeep.py)
COMMIT_COMMANDS = ("update-ref", "update-index", "repack")


def cloned_site(root: Path, approvals: int, agents: int = 1) -> Site:
    """A site whose drafts came with a clone (committed by another machine, first versions in
    git), then `approvals` of them in each of `agents` agents edited and moved to approved/
    before the next pass."""
    site = settling_in(root, 50)
    names = [f"writer-{agent}" for agent in range(agents)]
    for name in names:
        for number in range(approvals + 1):
            site.write(name, f"qd-{number}.json", draft({"title": f"Draft {number}"}))
    site.git("add", "-A")
    site.git("commit", "-q", "-m", "drafts from another machine")
    site.reconcile()  # keeps the drafts as git first had them
    for name in names:
        for number in range(approvals):
            site.write(name, f"qd-{number}.json", draft({"title": f"Kept {number}"}), "approved")
            (site.agent(name) / "queue" / f"qd-{number}.json").unlink()
    return site


def pass_git_commands(site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many git processes of each command a pass started. Its runs of decisions end by
    count, not by the clock: a loaded machine must not change what is counted."""
    wrapper, calls = counting_git(tmp_path / f"git-{site.root.name}")
    with monkeypatch.context() as patched:
        patched.setenv("GIT_PYTHON_GIT_EXECUTABLE", str(wrapper))
        patched.setattr(agentpass, "RUN_S", 3600.0)
        site.reconcile()
    lines = calls.read_text().splitlines() if calls.exists() else []
    return Counter(_command_of(line) for line in lines)


def _command_of(line: str) -> str:
    """The git command of one logged call (`-C dir`, `-c key=value` and the like skipped)."""
    words = line.split()
    index = 0
    while index < len(words) and words[index].startswith("-"):
        index += 2 if words[index] in ("-C", "-c") else 1
    return words[index] if index < len(words) else ""


def test_a_pass_over_30_approvals_reads_history_as_often_as_over_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    few = pass_git_commands(cloned_site(tmp_path / "small", 3), tmp_path, monkeypatch)
    big_site = cloned_site(tmp_path / "big", 30)
    (big_site.root / "notes.md").write_text("the user's own work, staged\n")
    big_site.git("add", "notes.md")
    many = pass_git_commands(big_site, tmp_path, monkeypatch)
    reads_few = {k: v for k, v in few.items() if k not in COMMIT_COMMANDS}
    reads_many = {k: v for k, v in many.items() if k not in COMMIT_COMMANDS}
    assert reads_many == reads_few, f"3 approvals: {few}; 30 approvals: {many}"
    assert many["update-ref"] == few["update-ref"] == 0  # HEAD moves in this process
    approvals = big_site.git("log", "--format=%s").splitlines()
    assert len([s for s in approvals if s.startswith("approve(")]) == 30  # one commit each
    assert many["update-index"] - few["update-index"] == 27  # a small index follows each
    # The index follows HEAD, and what the user staged stays staged.
    assert big_site.git("diff", "--cached", "--name-only") == "notes.md\n"
    assert sorted(decided(big_site, "writer-0")) == sorted(f"qd-{n}" for n in range(30))
    feedback = json.loads((big_site.agent("writer-0") / "feedback.json").read_text())
    assert len(feedback) == 30  # each approval's correction, diffed against the first version


def test_a_pass_over_approvals_in_six_agents_reads_git_as_often_as_in_two(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    two = pass_git_commands(cloned_site(tmp_path / "two", 1, agents=2), tmp_path, monkeypatch)
    six_site = cloned_site(tmp_path / "six", 1, agents=6)
    six = pass_git_commands(six_site, tmp_path, monkeypatch)
    reads_two = {k: v for k, v in two.items() if k not in COMMIT_COMMANDS}
    reads_six = {k: v for k, v in six.items() if k not in COMMIT_COMMANDS}
    assert reads_six == reads_two, f"2 agents: {two}; 6 agents: {six}"
    for agent in range(6):
        assert decided(six_site, f"writer-{agent}") == ["qd-0"]


@pytest.mark.slow
def test_sigterm_in_a_pass_over_200_approvals_stops_within_10_s(
    tmp_path: Path,
    listener: NotifyListener,
    start: type[DaemonProcess],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    site = settling_in(tmp_path / "ws", 50)
    names = [f"qd-{number:03d}" for number in range(200)]
    for name in names:
        site.write("w", f"{name}.json", draft({"title": f"Draft {name}"}))
    site.git("add", "-A")
    site.git("commit", "-q", "-m", "drafts from another machine")
    wrapper, _ = counting_git(tmp_path / "bin", history_s=0.15)
    monkeypatch.setenv("GIT_PYTHON_GIT_EXECUTABLE", str(wrapper))
    daemon = start(site, listener)
    daemon.wait_ready()
    for name in names:  # edited, then dropped into approved/ at once
        site.write("w", f"{name}.json", draft({"title": f"Kept {name}"}), "approved")
        (site.agent("w") / "queue" / f"{name}.json").unlink()
    # The pass reads the drafts' history once, not once per approval, before it decides.
    wait_for(lambda: committed(site, "approve(w)"), 10, "the first approval's commit")
    asked = time.monotonic()
    daemon.signal(signal.SIGTERM)
    assert daemon.proc.wait(30) == 0
    assert time.monotonic() - asked < 10, daemon.log()

    stopped_at = decided(site, "w")
    assert 0 < len(stopped_at) < 200, "the burst was over before SIGTERM; make it larger"
    _each_committed_whole(site, stopped_at)
    monkeypatch.delenv("GIT_PYTHON_GIT_EXECUTABLE")
    done = site.cli("run", "--once")
    assert done.returncode == 0, done.stderr
    assert sorted(decided(site, "w")) == names  # each exactly once
    _each_committed_whole(site, names)


def _each_committed_whole(site: Site, items: list[str], name: str = "w") -> None:
    """Each decided item has its ledger line, its correction in feedback.json, its file in
    approved/ and its approval commit, all in HEAD; the agent's lessons and ledger are committed
    as they stand."""
    agent = f"_data/agents/{name}"
    learned = [f"{agent}/{file}" for file in ("decisions.jsonl", "feedback.json", "prompt")]
    assert site.git("status", "--porcelain", "--", *learned) == ""
    lines = site.git("show", f"HEAD:{agent}/decisions.jsonl").splitlines()
    assert [json.loads(line)["item"] for line in lines] == [r["item"] for r in ledger(site, name)]
    feedback = json.loads(site.git("show", f"HEAD:{agent}/feedback.json"))
    assert sorted(e["queueItemId"] for e in feedback if e["type"] == "correction") == sorted(items)
    in_head = set(site.git("ls-tree", "--name-only", "HEAD", f"{agent}/approved/").split())
    assert in_head == {f"{agent}/approved/{item}.json" for item in items}
    subjects = git(site.root, "log", "--format=%s").splitlines()
    approvals = [
        s.split(": ", 1)[1].split(",")[0] for s in subjects if s.startswith(f"approve({name})")
    ]
    assert sorted(approvals) == sorted(items)


@pytest.mark.slow
def test_sigterm_in_run_once_ends_it_after_the_decision_in_hand(tmp_path: Path) -> None:
    site = cloned_site(tmp_path / "ws", 120)
    command = [sys.executable, "-m", "feedbackd", "-w", str(site.root), "run", "--once"]
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as run:
        wait_for(lambda: committed(site, "approve(writer-0)"), 10, "the first approval's commit")
        asked = time.monotonic()
        run.send_signal(signal.SIGTERM)
        _, stderr = run.communicate(timeout=30)
    assert time.monotonic() - asked < 10
    assert run.returncode == 1, stderr
    assert "stopped by SIGTERM" in stderr and "run --once" in stderr
    stopped_at = decided(site, "writer-0")
    assert 0 < len(stopped_at) < 120, "the run was over before SIGTERM; make it larger"
    _each_committed_whole(site, stopped_at, "writer-0")

    done = site.cli("run", "--once")
    assert done.returncode == 0, done.stderr
    assert sorted(decided(site, "writer-0")) == sorted(f"qd-{n}" for n in range(120))


def test_a_pass_asks_git_once_for_a_missing_feedback_file_and_never_for_a_missing_snippet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An idle pass over agents whose feedback.json and snippet are gone from disk (deleted,
    the deletion not committed): HEAD's feedback.json is read once per agent, and git is not
    asked about a snippet that is not there to compare."""
    site = Site(tmp_path / "ws")
    agents = [f"writer-{n}" for n in range(4)]
    for agent in agents:
        site.write(agent, "qi-1.json", draft({"title": "Draft"}))
    site.reconcile()  # the drafts' commit, with the empty feedback files
    for agent in agents:
        (site.agent(agent) / "feedback.json").unlink()
        (site.agent(agent) / "prompt" / "feedback.md").unlink()
    asked: Counter[str] = Counter()
    for name in ("file_at_head", "object_at_head"):
        original = getattr(GitRepo, name)

        def counted(repo: GitRepo, rel: str, _name: str = name, _original: Any = original) -> Any:
            asked[f"{_name} {rel.rsplit('/', 2)[-2]}/{rel.rsplit('/', 1)[-1]}"] += 1
            return _original(repo, rel)

        monkeypatch.setattr(GitRepo, name, counted)
    site.reconcile()
    reads = {key: count for key, count in asked.items() if "feedback" in key}
    assert reads == {f"file_at_head {agent}/feedback.json": 1 for agent in agents}, asked


def test_a_big_index_follows_a_run_of_commits_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where writing the index costs more than a commit, it follows each run of decisions once
    (any index counts as big here), and still ends as HEAD holds it."""
    monkeypatch.setattr(commit_module, "INDEX_ONCE_BYTES", 0)
    few = pass_git_commands(cloned_site(tmp_path / "small", 3), tmp_path, monkeypatch)
    big_site = cloned_site(tmp_path / "big", 30)
    (big_site.root / "notes.md").write_text("the user's own work, staged\n")
    big_site.git("add", "notes.md")
    many = pass_git_commands(big_site, tmp_path, monkeypatch)
    assert many["update-index"] - few["update-index"] <= 27 // RUN_STEPS + 1
    assert big_site.git("diff", "--cached", "--name-only") == "notes.md\n"
    assert big_site.git("status", "--porcelain", "--", "_data") == ""
