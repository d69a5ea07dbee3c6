"""An agent folder renamed with `mv` under the running daemon: the agent keeps its drafts'
originals and its decisions, and the rename is one commit."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from feedbackd.app.commits import recording
from feedbackd.app.curation import agentpass
from feedbackd.app.reconcile import reconcile_all
from tests.daemon_kit import (
    DaemonProcess,
    NotifyListener,
    committed,
    decided,
    idle,
    subjects,
    wait_for,
)
from tests.workspace_kit import Site, draft, settling_in

OLD, NEW = "Why TypeScript Generics Matter", "How TypeScript Generics Save You From Refactoring"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return settling_in(tmp_path / "ws", 200)


@pytest.fixture
def daemon(site: Site, listener: NotifyListener, start: type[DaemonProcess]) -> DaemonProcess:
    started = start(site, listener)
    started.wait_ready()
    return started


def committed_paths(site: Site, under: str) -> list[str]:
    return site.git("ls-tree", "-r", "--name-only", "HEAD", "--", under).split()


def approvals(site: Site) -> Counter[str]:
    """How many commits approved each item: added its file to an approved/ folder (the rename
    commit moves the folder, it decides nothing)."""
    found: Counter[str] = Counter()
    log = site.git("log", "--no-renames", "--diff-filter=A", "--name-only", "--format=%x01%s")
    for commit in log.split("\x01")[1:]:
        subject, *paths = commit.strip().splitlines()
        if not subject.startswith("rename("):
            found.update(
                Path(p).stem
                for p in paths
                if Path(p).parent.name == "approved" and not Path(p).name.startswith(".")
            )  # the .gitkeep of a new agent's approved/ is no item
    return found


def clean(site: Site) -> bool:
    return site.git("status", "--porcelain", "--", "_data") == ""


def write_draft(site: Site, agent: str, name: str, title: str) -> None:
    site.write(agent, f"{name}.json", draft({"title": title, "excerpt": "Same."}))


@pytest.mark.slow
def test_a_renamed_agent_keeps_the_original_of_an_edited_draft(
    site: Site, daemon: DaemonProcess
) -> None:
    write_draft(site, "w", "d1", OLD)
    wait_for(lambda: committed(site, "draft(w): 1 new draft (d1)"), what="the draft commit")
    write_draft(site, "w", "d1", NEW)  # the curator's edit, not committed
    (site.data / "agents" / "w").rename(site.data / "agents" / "w2")
    wait_for(lambda: committed(site, "rename(w2): from w"), what="the rename commit")
    site.move("w2", "d1.json", "approved")

    wait_for(lambda: committed(site, "approve(w2): d1, 1 correction (title)"), what="approval")
    assert [e["original"] for e in site.feedback("w2")] == [OLD]
    assert not any(s.startswith("draft(w2)") for s in subjects(site))
    rename = site.git("log", "-1", "--format=%H", "--grep=^rename(").strip()
    trailers = site.trailers(rename)
    assert trailers["Feedback-Event"] == ["rename"] and trailers["Feedback-Agent"] == ["w2"]
    # a pure rename: git follows each file back to the version the agent wrote
    moves = site.git("show", "--format=", "--name-status", "-M", rename).splitlines()
    assert moves and all(line.startswith("R100\t_data/agents/w/") for line in moves)
    history = site.git("log", "--follow", "--format=%s", "--", "_data/agents/w2/queue/d1.json")
    assert history.splitlines()[-1] == "draft(w): 1 new draft (d1)"
    assert committed_paths(site, "_data/agents/w") == []
    idle(daemon)
    assert clean(site) and decided(site, "w2") == ["d1"]


@pytest.mark.slow
def test_renaming_in_the_middle_of_a_burst_of_approvals_loses_and_doubles_nothing(
    site: Site, daemon: DaemonProcess
) -> None:
    names = [f"d{number:02d}" for number in range(40)]
    for name in names:
        write_draft(site, "w", name, f"{OLD} {name}")
    wait_for(lambda: len(committed_paths(site, "_data/agents/w/queue")) == 40, what="drafts")
    for name in names:
        write_draft(site, "w", name, f"{NEW} {name}")
    for name in names[:20]:
        site.move("w", f"{name}.json", "approved")
    wait_for(lambda: len(decided(site, "w")) >= 3, what="some approvals under w")
    (site.data / "agents" / "w").rename(site.data / "agents" / "w2")
    for name in names[20:]:
        site.move("w2", f"{name}.json", "approved")

    wait_for(lambda: sorted(approvals(site)) == names, timeout=60, what="40 approvals")
    idle(daemon)
    assert approvals(site) == Counter({name: 1 for name in names})
    assert sorted(decided(site, "w2")) == names
    feedback = site.feedback("w2")
    assert sorted(entry["queueItemId"] for entry in feedback) == names
    assert all(entry["original"] == f"{OLD} {entry['queueItemId']}" for entry in feedback)
    assert [s for s in subjects(site) if s.startswith("rename(")] == ["rename(w2): from w"]
    assert committed_paths(site, "_data/agents/w") == []
    assert clean(site)


def test_a_rename_while_the_daemon_is_stopped_is_committed_at_start_up(
    site: Site, tmp_path: Path
) -> None:
    write_draft(site, "w", "d1", OLD)
    write_draft(site, "w", "d2", OLD)
    site.reconcile()
    write_draft(site, "w", "d1", NEW)
    site.move("w", "d2.json", "approved")
    site.reconcile()
    assert committed(site, "approve(w): d2")
    shutil.move(site.data / "agents" / "w", site.data / "agents" / "writer")
    site.move("writer", "d1.json", "approved")

    done = site.cli("run", "--once", "--json")

    assert done.returncode == 0, done.stderr
    events = [event["event"] for event in json.loads(done.stdout)["events"]]
    assert events == ["rename", "approve"], done.stdout
    assert committed(site, "rename(writer): from w")
    assert committed(site, "approve(writer): d1, 1 correction (title)")
    assert approvals(site) == Counter({"d1": 1, "d2": 1})
    assert committed_paths(site, "_data/agents/w") == [] and clean(site)


def test_a_lost_ledger_of_a_renamed_agent_comes_back_from_the_decisions_under_its_old_name(
    site: Site,
) -> None:
    for name in ("d1", "d2"):
        write_draft(site, "w", name, OLD)
    site.reconcile()
    write_draft(site, "w", "d1", NEW)
    site.move("w", "d1.json", "approved")
    site.move("w", "d2.json", "rejected")
    site.reconcile()
    (site.data / "agents" / "w").rename(site.data / "agents" / "w2")
    site.reconcile()
    feedback, commits = site.feedback("w2"), site.commit_count()
    (site.agent("w2") / "decisions.jsonl").unlink()

    site.reconcile()

    assert site.feedback("w2") == feedback
    assert sorted(decided(site, "w2")) == ["d1"] and decided(site, "w2", "rejected") == ["d2"]
    log = site.git("log", "--format=%s", f"-{site.commit_count() - commits}").splitlines()
    assert log == ["sync(w2): restore 2 decisions from history (d1, d2)"]
    assert clean(site)


def test_a_clone_made_after_the_rename_diffs_against_the_draft_as_the_agent_wrote_it(
    site: Site, tmp_path: Path
) -> None:
    write_draft(site, "w", "d1", OLD)
    site.reconcile()
    (site.data / "agents" / "w").rename(site.data / "agents" / "w2")
    site.reconcile()
    clone = tmp_path / "clone"
    site.git("clone", "-q", str(site.root), str(clone))
    other = Site(clone)
    write_draft(other, "w2", "d1", NEW)
    other.reconcile()  # sees the edited draft first: git's version of it must win
    other.move("w2", "d1.json", "approved")
    other.reconcile()
    assert [(e["original"], e["corrected"]) for e in other.feedback("w2")] == [(OLD, NEW)]
    assert [s for s in subjects(other) if s.startswith(("draft(", "rename("))] == [
        "rename(w2): from w",
        "draft(w): 1 new draft (d1)",
    ]


@pytest.mark.parametrize("moved_at", ["writing", "committing"])
def test_an_agent_folder_moved_in_the_middle_of_a_decision_is_not_made_again(
    site: Site, monkeypatch: pytest.MonkeyPatch, moved_at: str
) -> None:
    """The folder moves away while a decision is written, or while its commit reads the files:
    nothing is written or committed where it was, and the new folder's pass decides it once."""
    write_draft(site, "w", "d1", OLD)
    site.reconcile()
    write_draft(site, "w", "d1", NEW)
    site.move("w", "d1.json", "approved")
    target = agentpass.atomic_write_text if moved_at == "writing" else recording.relative_paths

    def curator_renames_first(*args: Any, **kwargs: Any) -> Any:
        folder = site.data / "agents" / "w"
        if folder.is_dir():
            folder.rename(site.data / "agents" / "w2")
        return target(*args, **kwargs)

    module = agentpass if moved_at == "writing" else recording
    monkeypatch.setattr(module, target.__name__, curator_renames_first)
    reconcile_all(site.runtime(), ["w"])
    monkeypatch.setattr(module, target.__name__, target)
    assert not (site.data / "agents" / "w").exists()
    assert committed_paths(site, "_data/agents/w/queue") == ["_data/agents/w/queue/d1.json"]

    site.reconcile()
    # Moved while committing, the decision's ledger line went with the folder: it is committed
    # as a decision a killed pass left.
    approval = {
        "writing": "approve(w2): d1, 1 correction (title)",
        "committing": "approve(w2): d1 (completed after an interruption)",
    }[moved_at]
    assert subjects(site)[:2] == [approval, "rename(w2): from w"]
    assert [(e["original"], e["corrected"]) for e in site.feedback("w2")] == [(OLD, NEW)]
    assert approvals(site) == Counter({"d1": 1}) and decided(site, "w2") == ["d1"]
    assert committed_paths(site, "_data/agents/w") == [] and clean(site)


def test_the_history_and_old_prompts_of_a_renamed_agent_follow_the_rename(site: Site) -> None:
    write_draft(site, "w", "d1", OLD)
    site.reconcile()
    write_draft(site, "w", "d1", NEW)
    site.move("w", "d1.json", "approved")
    site.reconcile()
    before = site.git("rev-parse", "HEAD").strip()
    learned = site.prompt("w")
    (site.data / "agents" / "w").rename(site.data / "agents" / "w2")
    site.reconcile()
    # Another agent later takes the old name: its history is not w2's.
    write_draft(site, "w", "x1", OLD)
    site.reconcile()

    done = site.cli("log", "w2", "--json")
    assert done.returncode == 0, done.stderr
    shown = [(entry["event"], entry["agent"]) for entry in json.loads(done.stdout)]
    assert shown == [("rename", "w2"), ("approve", "w"), ("draft", "w")]
    at = site.cli("prompt", "w2", "--at", before)
    assert at.returncode == 0, at.stderr
    assert at.stdout == learned and NEW in learned
