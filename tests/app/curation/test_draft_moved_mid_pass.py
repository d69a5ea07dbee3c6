"""A draft moved on by its curator in the middle of the pass that commits it as new.

The soak benchmark found it: between a pass's draft commit and its snapshot of the draft as
first seen, a curator moved the file to approved/, and the whole agent pass failed with
`queue/....json: No such file or directory` (retried a second later). Moving a draft on is
what curators do; it is no failure, and the approval still diffs against the draft's commit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from feedbackd.app.curation import agentpass
from feedbackd.app.curation.draftmemory import remember_drafts
from feedbackd.app.reconcile import reconcile_all
from feedbackd.core.curation import agentplan
from tests.daemon_kit import decided
from tests.workspace_kit import Site, draft


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "ws")


def test_a_draft_gone_before_its_snapshot_is_not_remembered(site: Site) -> None:
    path = site.write("w", "qi-1.json", draft({"title": "First"}))
    runtime = site.runtime()
    agent = runtime.workspace.agent("w")
    item_file = agentplan.ItemFile("queue", "qi-1", path)
    path.unlink()
    remember_drafts(runtime, agent, [agentplan.Snapshot(item_file, None)])  # no error
    assert not runtime.workspace.snapshot("w", "qi-1.json").exists()


def test_a_draft_approved_right_after_its_draft_commit_is_decided_once(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.write("w", "qi-1.json", draft({"title": "First", "excerpt": "Same."}))
    real_remember = agentpass.remember_drafts

    def curator_moves_first(*args: object) -> None:
        # The curator's edit and move land between the draft commit and the snapshot.
        site.write("w", "qi-1.json", draft({"title": "Better", "excerpt": "Same."}))
        site.move("w", "qi-1.json", "approved")
        real_remember(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(agentpass, "remember_drafts", curator_moves_first)
    report = reconcile_all(site.runtime(), ["w"])  # raised FileNotFoundError before the fix
    assert report.problems == []
    assert site.git("log", "--format=%s").startswith("draft(w): 1 new draft (qi-1)")

    monkeypatch.setattr(agentpass, "remember_drafts", real_remember)
    reconcile_all(site.runtime(), ["w"])
    assert decided(site, "w") == ["qi-1"]
    [entry] = site.feedback("w")
    assert (entry["original"], entry["corrected"]) == ("First", "Better")
