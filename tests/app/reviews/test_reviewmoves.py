"""`approve`, `reject` and HTTP where several curators review each draft (SPEC section 15):
each records a review, a curator's second review is refused before anything moves, and a
dispute is settled by the curator who decides it, its `reviews` key dropped for them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.reviews_kit import two_reviews_required
from tests.web_kit import serving
from tests.workspace_kit import Site, draft

ADA = "Ada <ada@example.org>"
BO = "Bo <bo@example.org>"
CY = "Cy <cy@example.org>"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = two_reviews_required(tmp_path / "site")
    site.write("w", "qi-1.json", draft({"title": "Old title", "excerpt": "Short."}))
    site.reconcile()
    return site


def subject(site: Site) -> str:
    return site.git("log", "-1", "--format=%s").strip()


def disputed(site: Site) -> Path:
    done = site.cli("approve", "w", "qi-1", "--curator", ADA)
    assert done.returncode == 0, done.stderr
    done = site.cli("reject", "w", "qi-1", "--notes", "Off topic.", "--curator", BO)
    assert done.returncode == 0, done.stderr
    assert subject(site) == "dispute(w): qi-1 (approve 1, reject 1)"
    return site.agent("w") / "disputed" / "qi-1.json"


def test_approve_records_a_review_then_the_next_curator_decides(site: Site) -> None:
    first = site.cli("approve", "w", "qi-1", "--curator", ADA)
    assert first.returncode == 0, first.stderr
    assert "review(w): qi-1 by Ada (1 of 2)" in first.stdout
    assert (site.agent("w") / "review" / "qi-1.json").is_file()
    second = site.cli("approve", "w", "qi-1", "--curator", BO)
    assert second.returncode == 0, second.stderr
    assert "approve(w): qi-1, no corrections" in second.stdout
    assert site.trailers()["Feedback-Reviewers"] == [f"{ADA}, {BO}"]
    assert site.git("status", "--porcelain") == ""


def test_a_second_review_by_the_same_curator_is_refused_and_nothing_moves(site: Site) -> None:
    site.cli("approve", "w", "qi-1", "--curator", ADA)
    waiting = site.agent("w") / "review" / "qi-1.json"
    before, text = site.commit_count(), waiting.read_bytes()
    again = site.cli("reject", "w", "qi-1", "--notes", "Changed my mind.", "--curator", ADA)
    assert again.returncode == 1
    assert "already_decided" in again.stderr
    assert f"reviewed already by {ADA}" in again.stderr and "another curator" in again.stderr
    assert waiting.read_bytes() == text
    assert site.commit_count() == before
    assert not (site.agent("w") / "rejected" / "qi-1.json").exists()


def test_a_command_settles_a_dispute_for_its_curator(site: Site) -> None:
    file = disputed(site)
    done = site.cli("approve", "w", "qi-1", "--curator", CY)
    assert done.returncode == 0, done.stderr
    assert subject(site) == "approve(w): qi-1, no corrections"
    assert site.trailers()["Feedback-Adjudicator"] == [CY]
    approved = json.loads((site.agent("w") / "approved" / "qi-1.json").read_text())
    assert "reviews" not in approved
    assert not file.exists()
    assert site.git("status", "--porcelain") == ""


def test_a_dispute_settled_by_rejecting_it(site: Site) -> None:
    disputed(site)
    done = site.cli("reject", "w", "qi-1", "--notes", "Bo is right.", "--curator", ADA)
    assert done.returncode == 0, done.stderr
    assert subject(site) == "reject(w): qi-1"
    assert site.trailers()["Feedback-Adjudicator"] == [ADA]
    [entry] = site.feedback("w")
    assert entry["notes"] == "Bo is right."


def test_over_http_a_curator_approves_a_disputed_version(site: Site) -> None:
    disputed(site)
    with serving(site.root) as served:
        answer = served.post(
            "/api/agents/w/queue/qi-1/approve",
            {"curator": CY, "edits": {"title": "Ada's title"}},
        )
    assert answer.status == 200, answer.text()
    assert subject(site) == "approve(w): qi-1, 1 correction (title)"
    assert site.git("log", "-1", "--format=%an <%ae>").strip() == CY
    [entry] = site.feedback("w")
    assert (entry["original"], entry["corrected"]) == ("Old title", "Ada's title")


def test_over_http_a_second_review_is_a_conflict(site: Site) -> None:
    site.cli("approve", "w", "qi-1", "--curator", ADA)
    with serving(site.root) as served:
        answer = served.post("/api/agents/w/queue/qi-1/reject", {"curator": ADA, "notes": "No."})
    assert answer.status == 409
    assert answer.json()["error"] == "already_decided"
    assert "another curator must review it" in answer.json()["message"]
    assert (site.agent("w") / "review" / "qi-1.json").is_file()


def test_without_the_setting_a_missing_draft_names_queue_alone(tmp_path: Path) -> None:
    site = Site(tmp_path / "plain")
    site.write("w", "qi-1.json", draft({"title": "T"}))
    done = site.cli("approve", "w", "qi-9")
    assert done.returncode == 1
    assert "no draft qi-9 in _data/agents/w/queue/" in done.stderr
    assert "review/" not in done.stderr
