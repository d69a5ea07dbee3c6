"""An item in queue/ and in approved/ or rejected/ (a `git reset` put its draft back after the
curator moved it): the decision stands, the draft goes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.app.curation.test_kept_lessons import approve, problems_of, subject
from tests.daemon_kit import DaemonProcess, NotifyListener, committed, idle, wait_for
from tests.workspace_kit import Site, draft


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "site")


def test_a_draft_a_reset_put_back_beside_its_approval_goes(site: Site) -> None:
    for item in ("d1", "d2", "d3"):
        site.write("w", f"{item}.json", draft({"title": "old"}))
    site.reconcile()
    for item in ("d1", "d2"):
        site.move("w", f"{item}.json", "approved")
        site.reconcile()
    site.write("w", "d3.json", draft({"title": "new"}))
    site.move("w", "d3.json", "approved")
    site.git("reset", "-q", "--hard", "HEAD~1")  # undoes d2's approval, puts queue/d3 back
    queue = site.agent("w") / "queue"
    assert (queue / "d3.json").exists()
    found = [p for p in problems_of(site) if "d3" in p["path"]]
    assert found and "queue/ and approved/" in found[0]["message"]
    site.reconcile()
    assert not (queue / "d3.json").exists() and (queue / "d2.json").exists()
    assert subject(site).startswith("approve(w): d3, 1 correction")
    assert "_data/agents/w/queue/d3.json" not in site.git("ls-files", "_data/agents/w/queue")
    assert site.git("status", "--porcelain") == ""
    assert not [p for p in problems_of(site) if "d3" in p["path"]]
    site.move("w", "d3.json", "rejected", source="approved")  # the curator changes their mind
    site.reconcile()
    assert subject(site).startswith("reject(w): d3")


def test_a_committed_draft_beside_its_recorded_decision_goes_in_a_commit_of_its_own(
    site: Site,
) -> None:
    approve(site, "d1")
    site.git("checkout", "HEAD~1", "--", "_data/agents/w/queue/d1.json")
    site.git("commit", "-qm", "an old draft back")
    site.reconcile()
    assert not (site.agent("w") / "queue" / "d1.json").exists()
    assert subject(site) == "sync(w): remove queue/d1.json, decided in approved/"
    assert site.git("status", "--porcelain") == ""


def test_a_command_takes_a_draft_beside_its_decision_for_decided(site: Site) -> None:
    for item in ("d1", "d2"):
        site.write("w", f"{item}.json", draft({"title": "old"}))
    site.reconcile()
    site.move("w", "d2.json", "approved")
    site.git("reset", "-q", "--hard")  # puts the committed draft back beside the approval
    head = site.git("rev-parse", "HEAD")
    done = site.cli("reject", "w", "d2", "--notes", "off topic")
    assert done.returncode == 1 and "d2 was already approved" in done.stderr, done.stderr
    assert not (site.agent("w") / "rejected" / "d2.json").exists()
    assert site.git("rev-parse", "HEAD") == head
    site.reconcile()
    assert subject(site).startswith("approve(w): d2")
    assert not (site.agent("w") / "queue" / "d2.json").exists()


@pytest.mark.slow
def test_a_reset_while_an_approval_settles_leaves_the_item_in_one_folder(
    site: Site, listener: NotifyListener, start: type[DaemonProcess]
) -> None:
    site.configure("daemon:\n  settle_ms: 1000\n")
    for item in ("d1", "d2", "d3"):
        site.write("w", f"{item}.json", draft({"title": "old"}))
    (site.agent("w") / "approved").mkdir()
    daemon = start(site, listener)
    daemon.wait_ready()
    for item in ("d1", "d2"):
        wait_for(lambda: committed(site, "draft(w)"), what="the drafts' commit")
        site.move("w", f"{item}.json", "approved")
        wait_for(lambda i=item: committed(site, f"approve(w): {i}"), what=f"{item}'s approval")
    idle(daemon)
    # saved just now, so that its approval waits the second it takes to settle: meanwhile,
    # the reset (a file saved a while ago would be decided at once, maybe before it)
    site.write("w", "d3.json", draft({"title": "new"}), fresh=True)
    site.move("w", "d3.json", "approved")
    wait_for(lambda: reset(site, "HEAD~1"), what="`git reset --hard HEAD~1` to get the index")
    wait_for(lambda: committed(site, "approve(w): d3"), what="d3's approval")
    queue = site.agent("w") / "queue"
    wait_for(lambda: not (queue / "d3.json").exists(), what="the draft put back to go")
    idle(daemon)
    assert site.git("ls-files", "_data/agents/w/queue").split() == ["_data/agents/w/queue/d2.json"]
    assert site.git("status", "--porcelain") == ""


def reset(site: Site, to: str) -> bool:
    """`git reset --hard`, as a user runs it: it fails (and changes nothing) while the daemon
    holds the index lock, and the user runs it again."""
    done = subprocess.run(
        ["git", "reset", "-q", "--hard", to], cwd=site.root, capture_output=True, text=True
    )
    return done.returncode == 0
