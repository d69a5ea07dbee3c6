"""Reviews by several curators with the daemon running for real (SPEC section 15): the watcher
sees a move out of review/ as it sees one out of queue/, and each review is its own commit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.daemon_kit import DaemonProcess, NotifyListener, committed, wait_for
from tests.workspace_kit import Site, draft, settling_in

ADA = "Ada <ada@example.org>"
BO = "Bo <bo@example.org>"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = settling_in(tmp_path / "ws", 100)
    site.configure("daemon:\n  settle_ms: 100\nreview:\n  required: 2\n")
    site.git("commit", "-qam", "two curators review each draft")
    return site


def moved_by(site: Site, curator: str, to: str, source: str, title: str) -> None:
    """A curator edits the draft where it waits, names themselves in it, and moves it."""
    doc = json.loads((site.agent("w") / source / "qi-1.json").read_text())
    doc["contentData"]["title"] = title
    doc["curator"] = curator
    site.write("w", "qi-1.json", doc, folder=source)
    site.move("w", "qi-1.json", to, source=source)


@pytest.mark.slow
def test_two_curators_review_a_draft_while_the_daemon_runs(
    site: Site, listener: NotifyListener, start: type[DaemonProcess]
) -> None:
    site.write("w", "qi-1.json", draft({"title": "Old title", "excerpt": "Short."}))
    daemon = start(site, listener)
    daemon.wait_ready()
    wait_for(lambda: committed(site, "draft(w)"), what="the draft committed")
    moved_by(site, ADA, "approved", "queue", "Better title")
    wait_for(lambda: committed(site, "review(w): qi-1 by Ada (1 of 2)"), what="Ada's review")
    waiting = json.loads((site.agent("w") / "review" / "qi-1.json").read_text())
    assert waiting["contentData"]["title"] == "Old title"  # Bo does not see Ada's edit
    moved_by(site, BO, "approved", "review", "Better title")
    wait_for(lambda: committed(site, "approve(w): qi-1, 1 correction (title)"), what="the decision")
    assert site.trailers()["Feedback-Reviewers"] == [f"{ADA}, {BO}"]
    assert [e["corrected"] for e in site.feedback("w")] == ["Better title"]
    assert daemon.stop() == 0
    assert site.git("status", "--porcelain", "--", "_data") == ""
