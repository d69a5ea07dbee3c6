"""`git revert <decision commit>` is the undo of a decision: its entries and ledger line go, the
snippet follows, and the item is a draft again in queue/, whatever came after it. Real
repositories, the real `git revert` (with the merge driver `init` registered), and the real
daemon where what follows a revert is the daemon's doing."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from feedbackd.core.curation.reverts import Undone, reverted_by
from tests.daemon_kit import DaemonProcess, NotifyListener, idle, ledger, subjects, wait_for
from tests.workspace_kit import Site, draft

AGENT = "w"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "ws")


def titled(name: str, title: str, **extra: str) -> dict[str, object]:
    return draft({"title": title, "excerpt": f"About {name}."}, **extra)


def queue_drafts(site: Site, *names: str) -> None:
    """Drafts in queue/, committed by a pass (as the daemon does when they appear)."""
    for name in names:
        site.write(AGENT, f"{name}.json", titled(name, f"Draft {name}"))
    site.reconcile()


def approve_edited(site: Site, name: str) -> None:
    """A curator retitles the draft and approves it; one pass records the decision."""
    site.write(AGENT, f"{name}.json", titled(name, f"Better {name}"))
    site.move(AGENT, f"{name}.json", "approved")
    site.reconcile()


def reject(site: Site, name: str, notes: str) -> None:
    site.write(AGENT, f"{name}.json", titled(name, f"Draft {name}", rejectionFeedback=notes))
    site.move(AGENT, f"{name}.json", "rejected")
    site.reconcile()


def decision_commit(site: Site, name: str) -> str:
    found = site.git("log", "--format=%H", f"--grep=^Feedback-Item: {name}$").split()
    assert len(found) == 1, f"{name}: {len(found)} decision commits"
    return found[0]


def git_revert(site: Site, commit: str) -> subprocess.CompletedProcess[str]:
    """The user's own `git revert`: it must complete, with no conflict to resolve."""
    done = subprocess.run(
        ["git", "revert", "--no-edit", commit], cwd=site.root, capture_output=True, text=True
    )
    assert done.returncode == 0, f"git revert stopped: {done.stdout}{done.stderr}"
    return done


def lessons(site: Site) -> dict[str | None, list[str]]:
    """Each item's lessons in feedback.json: corrected titles, or rejection notes."""
    found: dict[str | None, list[str]] = {}
    for entry in site.feedback(AGENT):
        found.setdefault(entry.get("queueItemId"), []).append(
            entry.get("corrected") or entry.get("notes") or ""
        )
    return found


def states(site: Site) -> dict[str, str]:
    return {record["item"]: record["state"] for record in ledger(site, AGENT)}


def where(site: Site, name: str) -> list[str]:
    """The folders holding the item, on disk."""
    folders = ("queue", "approved", "rejected")
    return [f for f in folders if (site.agent(AGENT) / f / f"{name}.json").exists()]


def committed_where(site: Site, name: str) -> list[str]:
    """The folders holding the item in HEAD."""
    listed = site.git("ls-files", "--", f"_data/agents/{AGENT}").split()
    folders = ("queue", "approved", "rejected")
    return [f for f in folders if f"_data/agents/{AGENT}/{f}/{name}.json" in listed]


def assert_undone(site: Site, name: str) -> None:
    """What a user checks after the revert and the next pass: the item is a draft again and
    nothing of its decision is left, in the files or in HEAD."""
    assert where(site, name) == ["queue"] and committed_where(site, name) == ["queue"]
    assert name not in states(site)
    assert name not in lessons(site)
    assert f"Better {name}" not in site.prompt(AGENT)
    assert site.git("status", "--porcelain") == ""


# --- which commits stand undone (pure) ---------------------------------------------------------
C, R1, R2, R3 = ("c" * 40, "1" * 40, "2" * 40, "3" * 40)


def test_a_revert_commit_names_what_it_reverts() -> None:
    message = f'Revert "approve(w): d1, 1 correction (title)"\n\nThis reverts commit {C}.\n'
    assert reverted_by(message) == [C]
    assert reverted_by("approve(w): d1\n\nThis reverts nothing.\n") == []


def test_a_revert_of_the_revert_puts_the_commit_back_and_a_third_undoes_it_again() -> None:
    assert C in Undone({R1: [C]}) and R1 not in Undone({R1: [C]})
    assert C not in Undone({R1: [C], R2: [R1]})
    assert C in Undone({R1: [C], R2: [R1], R3: [R2]})
    assert C in Undone({R1: [C], R2: [R1], R3: [C]})
    assert C not in Undone({})


def test_abbreviated_ids_in_revert_messages_are_understood() -> None:
    assert C in Undone({R1: [C[:12]]})
    assert C not in Undone({R1: [C[:12]], R2: [R1[:7]]})


# --- the revert itself, then a pass (the daemon's start-up pass, `run --once`) -------------------
def test_reverting_the_newest_decision_undoes_it(site: Site) -> None:
    queue_drafts(site, "d1", "d2")
    approve_edited(site, "d1")
    approve_edited(site, "d2")
    git_revert(site, decision_commit(site, "d2"))
    site.reconcile()
    assert_undone(site, "d2")
    assert lessons(site) == {"d1": ["Better d1"]} and states(site) == {"d1": "approved"}
    assert "Better d1" in site.prompt(AGENT)


def test_reverting_an_older_decision_removes_exactly_its_entries(site: Site) -> None:
    queue_drafts(site, "d1", "d2", "d3", "d4")
    for name in ("d1", "d2", "d3"):
        approve_edited(site, name)
    reject(site, "d4", "Too dry.")
    before = site.commit_count()
    git_revert(site, decision_commit(site, "d2"))
    assert "Better d2" not in (site.agent(AGENT) / "feedback.json").read_text()
    site.reconcile()
    assert_undone(site, "d2")
    assert lessons(site) == {"d1": ["Better d1"], "d3": ["Better d3"], "d4": ["Too dry."]}
    assert states(site) == {"d1": "approved", "d3": "approved", "d4": "rejected"}
    assert "Better d1" in site.prompt(AGENT) and "Better d3" in site.prompt(AGENT)
    # The revert and at most the snippet regenerated: no decision re-recorded, no re-queueing.
    after = subjects(site)[: site.commit_count() - before]
    assert after[-1].startswith('Revert "approve(w): d2')
    assert all(s == "sync(w): regenerate prompt snippet" for s in after[:-1]), after


def test_reverting_the_agents_first_decision_has_no_conflict(site: Site) -> None:
    queue_drafts(site, "d1", "d2", "d3")
    approve_edited(site, "d1")
    approve_edited(site, "d2")
    reject(site, "d3", "Off topic.")
    git_revert(site, decision_commit(site, "d1"))
    site.reconcile()
    assert_undone(site, "d1")
    assert lessons(site) == {"d2": ["Better d2"], "d3": ["Off topic."]}
    assert states(site) == {"d2": "approved", "d3": "rejected"}


def test_an_item_approved_without_a_draft_commit_can_be_reverted_too(site: Site) -> None:
    """No draft commit came first (the file was put straight into approved/): the decision
    still does not create the agent's feedback files, so its revert deletes none of them."""
    site.write(AGENT, "d1.json", titled("d1", "Better d1", curator="Ada <ada@example.org>"))
    site.move(AGENT, "d1.json", "approved")
    site.reconcile()
    queue_drafts(site, "d2")
    approve_edited(site, "d2")
    git_revert(site, decision_commit(site, "d1"))
    site.reconcile()
    assert not where(site, "d1") and "d1" not in states(site)
    assert states(site) == {"d2": "approved"} and lessons(site) == {"d2": ["Better d2"]}


def test_reverting_a_rejection_undoes_its_note(site: Site) -> None:
    site.configure("prompt:\n  include_rejections: true\n")
    site.git("commit", "-qm", "show rejections", "feedbackd.yaml")
    queue_drafts(site, "d1", "d2")
    reject(site, "d1", "Tone is too dry.")
    approve_edited(site, "d2")
    assert "Tone is too dry." in site.prompt(AGENT)
    git_revert(site, decision_commit(site, "d1"))
    site.reconcile()
    assert_undone(site, "d1")
    assert "Tone is too dry." not in site.prompt(AGENT)
    assert lessons(site) == {"d2": ["Better d2"]}


def test_a_reverted_decision_is_decided_again_only_by_a_curator(site: Site) -> None:
    queue_drafts(site, "d1", "d2")
    approve_edited(site, "d1")
    approve_edited(site, "d2")
    git_revert(site, decision_commit(site, "d1"))
    site.reconcile()
    site.reconcile()
    assert_undone(site, "d1")
    approve_edited(site, "d1")  # the curator approves it again, with the same edit
    assert states(site) == {"d1": "approved", "d2": "approved"}
    assert lessons(site) == {"d2": ["Better d2"], "d1": ["Better d1"]}
    assert subjects(site)[0] == "approve(w): d1, 1 correction (title)"


def test_a_reverted_decision_committed_again_by_hand_is_a_new_decision(site: Site) -> None:
    """The curator approves the draft again with `git mv` + `git commit`: HEAD then holds it in
    approved/, yet the reverted decision commit is not what restores it: it is decided now."""
    queue_drafts(site, "d1", "d2")
    approve_edited(site, "d1")
    approve_edited(site, "d2")
    git_revert(site, decision_commit(site, "d1"))
    site.reconcile()
    site.write(AGENT, "d1.json", titled("d1", "Best d1"))
    site.git("mv", f"_data/agents/{AGENT}/queue/d1.json", f"_data/agents/{AGENT}/approved/")
    site.git("commit", "-q", "-am", "approve d1 again")
    site.reconcile()
    assert states(site)["d1"] == "approved"
    assert lessons(site)["d1"] == ["Best d1"]
    assert subjects(site)[0] == "approve(w): d1, 1 correction (title)"
    assert not any("restore" in subject for subject in subjects(site))


def test_reverting_the_revert_brings_the_decision_back(site: Site) -> None:
    queue_drafts(site, "d1", "d2")
    approve_edited(site, "d1")
    approve_edited(site, "d2")
    git_revert(site, decision_commit(site, "d1"))
    site.reconcile()
    revert = site.git("log", "-1", "--format=%H", "--grep=^This reverts commit").strip()
    git_revert(site, revert)
    site.reconcile()
    assert where(site, "d1") == ["approved"] and committed_where(site, "d1") == ["approved"]
    assert states(site) == {"d1": "approved", "d2": "approved"}
    assert lessons(site) == {"d1": ["Better d1"], "d2": ["Better d2"]}
    assert "Better d1" in site.prompt(AGENT)
    # Its ledger line lost now, it is restored from the decision commit that stands again.
    (site.agent(AGENT) / "decisions.jsonl").unlink()
    site.reconcile()
    assert states(site) == {"d1": "approved", "d2": "approved"}
    assert len(site.git("log", "--format=%H", "--grep=^Feedback-Item: d1$").split()) == 1


def test_a_new_agents_feedback_files_come_with_its_first_drafts(site: Site) -> None:
    """So that no decision creates them (and no revert of one deletes them)."""
    queue_drafts(site, "d1")
    committed = site.git("show", "--name-only", "--format=", "HEAD").split()
    base = f"_data/agents/{AGENT}"
    for name in ("feedback.json", "decisions.jsonl", "prompt/feedback.md"):
        assert f"{base}/{name}" in committed
    assert site.feedback(AGENT) == [] and site.prompt(AGENT) == "" and states(site) == {}
    approve_edited(site, "d1")
    created = site.git("show", "--no-renames", "--diff-filter=A", "--name-only", "--format=")
    assert created.split() == [f"{base}/approved/d1.json"]


def test_feedback_files_a_killed_pass_left_uncommitted_are_committed_before_a_decision(
    site: Site,
) -> None:
    """A pass killed after writing the new agent's files but before its commit: the next one
    commits them as they are (with the drafts), so the first decision still creates none."""
    agent = site.agent(AGENT)
    (agent / "prompt").mkdir(parents=True)
    (agent / "feedback.json").write_text("[]\n")
    (agent / "decisions.jsonl").write_text("")
    site.write(AGENT, "d1.json", titled("d1", "Draft d1"))
    site.write(AGENT, "d2.json", titled("d2", "Draft d2"))
    site.reconcile()
    committed = site.git("show", "--name-only", "--format=", "HEAD").split()
    assert {f"_data/agents/{AGENT}/{name}" for name in ("feedback.json", "decisions.jsonl")} <= set(
        committed
    )
    approve_edited(site, "d1")
    approve_edited(site, "d2")
    git_revert(site, decision_commit(site, "d1"))
    site.reconcile()
    assert_undone(site, "d1")


# --- with the daemon running ----------------------------------------------------------------------
@pytest.fixture
def listener(tmp_path: Path) -> Iterator[NotifyListener]:
    notify = NotifyListener(tmp_path)
    yield notify
    notify.close()


@pytest.fixture
def daemon(site: Site, listener: NotifyListener) -> Iterator[DaemonProcess]:
    running = DaemonProcess(site, listener)
    running.wait_ready()
    yield running
    running.close()


def curator_approves(site: Site, name: str, title: str) -> None:
    site.write(AGENT, f"{name}.json", titled(name, title))
    site.move(AGENT, f"{name}.json", "approved")


def approve_commit(site: Site, name: str) -> bool:
    return any(s.startswith(f"approve(w): {name},") for s in subjects(site))


@pytest.mark.slow
def test_a_revert_under_the_running_daemon_is_an_undo(site: Site, daemon: DaemonProcess) -> None:
    for name in ("d1", "d2", "d3"):
        site.write(AGENT, f"{name}.json", titled(name, f"Draft {name}"))
    wait_for(lambda: committed_where(site, "d3") == ["queue"], what="the draft commit")
    for name in ("d1", "d2", "d3"):
        curator_approves(site, name, f"Better {name}")
        wait_for(lambda name=name: approve_commit(site, name), what=f"{name}'s approval")
    # The approval's commit is on the branch a moment before the daemon lets go of git's index
    # lock; a user who runs git then is told to run it again. This one lets the daemon finish.
    idle(daemon)
    git_revert(site, decision_commit(site, "d2"))
    wait_for(lambda: "Better d2" not in site.prompt(AGENT), what="the snippet regenerated")
    idle(daemon)
    assert_undone(site, "d2")
    assert states(site) == {"d1": "approved", "d3": "approved"}
    assert lessons(site) == {"d1": ["Better d1"], "d3": ["Better d3"]}
    assert "Better d1" in site.prompt(AGENT) and "Better d3" in site.prompt(AGENT)
    assert sum(s.startswith("approve(w): d2,") for s in subjects(site)) == 1

    # Restarted, it still neither re-records nor restores the undone decision.
    daemon.stop()
    again = DaemonProcess(site, daemon.listener)
    try:
        again.wait_ready(count=2)
        idle(again)
        assert_undone(site, "d2")
        # Approved again by the curator, it is recorded again: a new decision.
        curator_approves(site, "d2", "Better d2")
        wait_for(lambda: states(site).get("d2") == "approved", what="d2 approved again")
        idle(again)
    finally:
        again.close()
    assert sum(s.startswith("approve(w): d2,") for s in subjects(site)) == 2
    assert lessons(site) == {"d1": ["Better d1"], "d3": ["Better d3"], "d2": ["Better d2"]}
    assert "Better d2" in site.prompt(AGENT)
    assert site.git("status", "--porcelain") == ""


# --- the order of lessons -------------------------------------------------------------------------
def test_a_revert_keeps_the_order_of_decisions_made_in_one_pass(site: Site) -> None:
    """Three approvals handled by one pass share their `createdAt`: a revert of an older
    decision keeps them in the order they were decided (each item's lessons together), never
    re-sorted by their random ids, and the snippet keeps the same newest lessons."""
    queue_drafts(site, "d0", "a", "b", "c")
    approve_edited(site, "d0")
    for name in ("a", "b", "c"):
        site.write(
            AGENT, f"{name}.json", draft({"title": f"Better {name}", "excerpt": f"On {name}."})
        )
        site.move(AGENT, f"{name}.json", "approved")
    site.reconcile()
    before = [e for e in site.feedback(AGENT) if e["queueItemId"] != "d0"]
    assert len({e["createdAt"] for e in before}) == 1  # the case: one pass, one time
    snippet = site.prompt(AGENT)
    git_revert(site, decision_commit(site, "d0"))
    site.reconcile()
    assert_undone(site, "d0")
    assert [e["id"] for e in site.feedback(AGENT)] == [e["id"] for e in before]
    assert site.prompt(AGENT) == snippet
