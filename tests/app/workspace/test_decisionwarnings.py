"""What a decision warns of (an approval whose draft changed only outside its content) stays in
`status` until the agent's next decision, whoever decided: a file moved into approved/ and
picked up by a pass, `feedbackd approve`, or the panel."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.daemon_kit import status_json
from tests.web_kit import serving
from tests.workspace_kit import Site, draft

WARNING = "_data/agents/w/approved/qi-1.json: approved with no corrections; title changed"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    """Two drafts seen by a pass; qi-1 then edited outside its content (a top-level title)."""
    site = Site(tmp_path / "ws")
    site.write("w", "qi-1.json", draft({"title": "Old"}))
    site.write("w", "qi-2.json", draft({"title": "Old two"}))
    site.reconcile()
    site.write("w", "qi-1.json", draft({"title": "Old"}, title="New"))
    return site


def warned(site: Site) -> list[str]:
    return [line for line in status_json(site)["problems"] if line.startswith(WARNING)]


def test_the_warning_of_a_command_approval_stays_in_status(site: Site) -> None:
    done = site.cli("approve", "w", "qi-1")
    assert done.returncode == 0 and WARNING in done.stderr, done.stderr
    assert len(warned(site)) == 1
    assert f"problem: {WARNING}" in site.cli("status").stdout


def test_the_warning_of_a_moved_file_stays_in_status_as_well(site: Site) -> None:
    site.move("w", "qi-1.json", "approved")
    site.reconcile()  # the pass the daemon (or `run --once`) makes
    assert len(warned(site)) == 1


def test_the_agents_next_decision_clears_it(site: Site) -> None:
    site.cli("approve", "w", "qi-1")
    site.write("w", "qi-2.json", draft({"title": "New two"}))
    done = site.cli("approve", "w", "qi-2")
    assert done.returncode == 0, done.stderr
    assert warned(site) == [] and status_json(site)["problems"] == []


def test_a_pass_that_decides_nothing_keeps_it(site: Site) -> None:
    site.cli("approve", "w", "qi-1")
    site.write("w", "qi-3.json", draft({"title": "A new draft"}))
    site.reconcile()
    assert len(warned(site)) == 1


def test_a_decision_of_another_agent_keeps_it(site: Site) -> None:
    site.cli("approve", "w", "qi-1")
    site.write("v", "qi-9.json", draft({"title": "Old"}))
    site.reconcile()
    assert site.cli("approve", "v", "qi-9").returncode == 0
    assert len(warned(site)) == 1


def test_an_agent_folder_removed_takes_its_warning_along(site: Site) -> None:
    site.cli("approve", "w", "qi-1")
    shutil.rmtree(site.agent("w"))
    assert warned(site) == []


def test_the_panels_approval_warns_in_status_too(site: Site) -> None:
    with serving(site.root) as client:
        answer = client.post("/api/agents/w/queue/qi-1/approve", {})
        assert answer.status == 200, answer.text
        assert any(line.startswith(WARNING) for line in answer.json()["warnings"])
        shown = client.get("/api/status").json()["problems"]
    assert [line for line in shown if line.startswith(WARNING)] == warned(site) != []


# --- content that is not text (SPEC 3: only strings on both sides yield corrections) -----------
def test_an_approval_that_edited_a_list_or_a_number_says_they_were_not_recorded(
    tmp_path: Path,
) -> None:
    """`tags` (a list) and `readingMinutes` (a number) edited with the title: the title is a
    correction; the others yield no entry, as the contract says, but never silently."""
    site = Site(tmp_path / "ws")
    content = {"title": "Old", "tags": ["go"], "readingMinutes": 4, "seo": {"noindex": False}}
    site.write("w", "qi-5.json", draft(content))
    site.reconcile()
    edited = {"title": "New", "tags": ["go", "rust"], "readingMinutes": 6, "seo": {"noindex": True}}
    site.write("w", "qi-5.json", draft(edited))
    done = site.cli("approve", "w", "qi-5")
    assert done.returncode == 0, done.stderr
    assert [(e["field"], e["corrected"]) for e in site.feedback("w")] == [("title", "New")]
    said = "_data/agents/w/approved/qi-5.json: readingMinutes, seo.noindex, tags changed"
    assert said in done.stderr and "not recorded" in done.stderr, done.stderr
    assert any(line.startswith(said) for line in status_json(site)["problems"])


def test_values_that_did_not_change_or_are_text_warn_of_nothing(tmp_path: Path) -> None:
    site = Site(tmp_path / "ws")
    site.write("w", "qi-6.yaml", "contentData:\n  title: Old\n  tags: [go]\n  n: 4\n")
    site.reconcile()
    site.write("w", "qi-6.yaml", "contentData:\n  title: New\n  tags:\n    - go\n  n: 4\n")
    done = site.cli("approve", "w", "qi-6")
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
    assert status_json(site)["problems"] == []


def test_a_decided_file_edited_afterwards_says_so_too(tmp_path: Path) -> None:
    site = Site(tmp_path / "ws")
    site.write("w", "qi-7.json", draft({"title": "Old", "tags": ["go"]}))
    site.reconcile()
    assert site.cli("approve", "w", "qi-7").returncode == 0
    site.write("w", "qi-7.json", draft({"title": "Old", "tags": []}), folder="approved")
    report = site.reconcile()  # the pass of the daemon or `run --once`, which logs what it says
    said = "_data/agents/w/approved/qi-7.json: tags changed, but only text fields are recorded"
    assert any(line.startswith(said) for line in report.warnings), report.warnings
    assert site.feedback("w") == []
