"""An idle `run --once` leaves out the agents a quiet pass left as they are
(app/curation/quietagents.py): whatever changed since (a decided file edited, a draft added or
approved, the agent's folder at HEAD, the settings, the memory itself lost) has its agent read
again, and the pass does what a pass over every agent does."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from feedbackd.app import reconcile
from feedbackd.app.curation import quietagents
from feedbackd.app.curation.agentpass import AgentPass
from feedbackd.app.report import Report
from tests.workspace_kit import Site, draft


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Site:
    """Two agents, each with queued drafts and an approval, all recorded; then a quiet pass.
    Times need not be old to be trusted here: each change below comes a pass (git processes,
    many milliseconds) after the state it changes was taken."""
    monkeypatch.setattr(quietagents, "RACY_S", 0.0)
    site = Site(tmp_path / "site")
    for agent in ("a", "b"):
        for number in range(3):
            site.write(agent, f"qi-{number}.json", draft({"title": f"Draft {number}"}))
    site.reconcile()
    for agent in ("a", "b"):
        site.move(agent, "qi-0.json", "approved")
    assert _events(once(site))  # the approvals
    assert not _events(once(site))  # quiet: its state is kept
    return site


def once(site: Site, read: list[str] | None = None) -> Report:
    """A pass as `run --once` makes it; `read` hears the agents it read."""

    class Heard(AgentPass):
        def run(self) -> Report:
            if read is not None:
                read.append(self.agent.agent_id)
            return super().run()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reconcile, "AgentPass", Heard)
        return reconcile.reconcile_all(site.runtime(), skip_quiet=True)


def _events(report: Report) -> list[tuple[str, str]]:
    return [(event.event, event.agent) for event in report.events]


def test_a_quiet_agent_is_left_out_until_something_of_it_changes(site: Site) -> None:
    read: list[str] = []
    assert once(site, read) == Report()
    assert read == []


def _edit_decided(site: Site) -> None:
    """A decided file edited in place (its folder does not change)."""
    path = site.agent("a") / "approved" / "qi-0.json"
    inode = os.stat(path).st_ino
    site.write("a", "qi-0.json", draft({"title": "Draft 0, revised"}), folder="approved")
    assert os.stat(path).st_ino == inode


def _add_draft(site: Site) -> None:
    site.write("a", "qi-7.json", draft({"title": "A new draft"}))


def _approve(site: Site) -> None:
    site.move("a", "qi-1.json", "approved")


def _delete_feedback(site: Site) -> None:
    (site.agent("a") / "feedback.json").unlink()


@pytest.mark.parametrize(
    ("change", "event"),
    [(_edit_decided, "revise"), (_add_draft, "draft"), (_approve, "approve")],
)
def test_a_change_in_the_agent_folder_has_it_read_again(
    site: Site, change: Callable[[Site], None], event: str
) -> None:
    change(site)
    read: list[str] = []
    report = once(site, read)
    assert read == ["a"]
    assert [name for name, agent in _events(report) if agent == "a"] == [event]
    # Its commit changed the agent's folder at HEAD, not the other's: "b" stays left out.
    read.clear()
    assert not _events(once(site, read))
    assert read == ["a"]
    read.clear()
    once(site, read)
    assert read == []


def test_a_deleted_feedback_file_is_put_back(site: Site) -> None:
    """A feedback.json deleted but not committed is put back as HEAD holds it: the agent is
    read again."""
    _delete_feedback(site)
    read: list[str] = []
    once(site, read)
    assert read == ["a"]
    assert (site.agent("a") / "feedback.json").exists()


def test_an_agent_whose_folder_at_head_changed_is_read_again(site: Site) -> None:
    """A user's commit (or reset, or pull) of an agent's files has that agent read again; one
    of other files leaves every agent out."""
    site.write("a", "qi-1.json", draft({"title": "Edited, committed by hand"}))
    site.git("commit", "-qam", "an edit by hand")
    read: list[str] = []
    once(site, read)
    assert read == ["a"]
    (site.root / "notes.txt").write_text("not an agent's\n")
    site.git("add", "notes.txt")
    site.git("commit", "-qm", "a file of the site")
    read.clear()
    once(site, read)
    assert read == []
    site.git("reset", "-q", "--hard", "HEAD~2")
    read.clear()
    once(site, read)
    assert read == ["a"]


def test_other_settings_have_every_agent_read_again(site: Site) -> None:
    site.configure("daemon:\n  settle_ms: 1500\n")
    read: list[str] = []
    once(site, read)
    assert sorted(read) == ["a", "b"]


@pytest.mark.parametrize("damage", ["gone", "garbled"])
def test_the_memory_lost_or_damaged_has_every_agent_read(site: Site, damage: str) -> None:
    kept = site.root / ".feedbackd" / quietagents.QUIET_FILE
    if damage == "gone":
        kept.unlink()
    else:
        kept.write_bytes(b"\xff\xfe not a digest\nwriter\n")
    _approve(site)
    read: list[str] = []
    assert ("approve", "a") in _events(once(site, read))
    assert sorted(read) == ["a", "b"]


def test_a_new_agent_has_every_agent_read(site: Site) -> None:
    site.write("c", "qi-1.json", draft({"title": "A new agent's draft"}))
    read: list[str] = []
    assert ("draft", "c") in _events(once(site, read))
    assert sorted(read) == ["a", "b", "c"]


def test_a_state_too_recent_to_vouch_for_is_not_kept(tmp_path: Path) -> None:
    """A change right after a look may leave every time as it was: a folder changed less than
    RACY_S ago gets no digest, and its agent is read each time until it is older."""
    site = Site(tmp_path / "site")
    site.write("a", "qi-1.json", draft({"title": "A draft"}))
    site.reconcile()
    runtime = site.runtime()
    agent = runtime.workspace.agent("a")
    assert quietagents.agent_digest(runtime, agent, time.time(), "tree") is None
    later = time.time() + quietagents.RACY_S + 1
    assert quietagents.agent_digest(runtime, agent, later, "tree") is not None
