"""Reviews by several curators through the real pass and real git (SPEC section 15): a move is
a review, the draft waits in review/ as first drafted, agreeing reviews make one decision that
names every reviewer, differing ones a dispute a curator settles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from feedbackd.app.reconcile import reconcile_all
from feedbackd.app.report import Report
from tests.reviews_kit import two_reviews_required
from tests.workspace_kit import Site, draft

ADA = "Ada <ada@example.org>"
BO = "Bo <bo@example.org>"
CY = "Cy <cy@example.org>"
FIRST = {"title": "Old title", "excerpt": "Short."}


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = two_reviews_required(tmp_path / "site")
    site.write("w", "qi-1.json", draft(FIRST))
    by(site, ADA)
    return site


def by(site: Site, curator: str) -> Report:
    """A pass, as the daemon of a curator's machine runs it (the curator is its git user)."""
    return reconcile_all(site.runtime(curator))


def review(site: Site, curator: str, to: str, content: dict | None = None, **extra: str) -> None:
    """`curator` edits the draft where it waits, moves it to `to`, and the pass runs."""
    waiting = "queue" if (site.agent("w") / "queue" / "qi-1.json").exists() else "review"
    path = site.agent("w") / waiting / "qi-1.json"
    doc = json.loads(path.read_text())
    doc["contentData"] = content or doc["contentData"]
    doc.update(extra)
    site.write("w", "qi-1.json", doc, folder=waiting)
    site.move("w", "qi-1.json", to, source=waiting)
    by(site, curator)


def subject(site: Site) -> str:
    return site.git("log", "-1", "--format=%s").strip()


def reviews(site: Site) -> list[dict]:
    lines = (site.agent("w") / "reviews.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_a_first_review_waits_in_review_as_first_drafted(site: Site) -> None:
    drafted = (site.agent("w") / "queue" / "qi-1.json").read_bytes()
    review(site, ADA, "approved", {"title": "Ada's title", "excerpt": "Short."})
    assert subject(site) == "review(w): qi-1 by Ada (1 of 2)"
    trailers = site.trailers()
    assert trailers["Feedback-Event"] == ["review"]
    assert trailers["Feedback-Verdict"] == ["approve"]
    assert trailers["Feedback-Agent"] == ["w"]
    assert trailers["Feedback-Item"] == ["qi-1"]
    assert site.git("log", "-1", "--format=%an <%ae>").strip() == ADA
    assert (site.agent("w") / "review" / "qi-1.json").read_bytes() == drafted
    assert not (site.agent("w") / "queue" / "qi-1.json").exists()
    assert not (site.agent("w") / "approved" / "qi-1.json").exists()
    [line] = reviews(site)
    assert (line["curator"], line["verdict"]) == (ADA, "approve")
    assert line["content"]["title"] == "Ada's title"
    assert site.feedback("w") == []
    assert site.git("status", "--porcelain") == ""


def test_agreeing_reviews_decide_once_naming_every_reviewer(site: Site) -> None:
    edited = {"title": "Better title", "excerpt": "Short."}
    review(site, ADA, "approved", edited)
    review(site, BO, "approved", edited)
    assert subject(site) == "approve(w): qi-1, 1 correction (title)"
    assert site.git("log", "-1", "--format=%an <%ae>").strip() == ADA
    trailers = site.trailers()
    assert trailers["Co-authored-by"] == [BO]
    assert trailers["Feedback-Reviewers"] == [f"{ADA}, {BO}"]
    [entry] = site.feedback("w")
    assert (entry["original"], entry["corrected"]) == ("Old title", "Better title")
    assert len(reviews(site)) == 2
    assert json.loads((site.agent("w") / "approved" / "qi-1.json").read_text())["contentData"] == (
        edited
    )
    assert not (site.agent("w") / "review" / "qi-1.json").exists()
    ledger = (site.agent("w") / "decisions.jsonl").read_text().splitlines()
    assert [json.loads(line)["state"] for line in ledger] == ["approved"]
    assert site.git("status", "--porcelain") == ""


def test_agreeing_rejections_join_their_notes(site: Site) -> None:
    review(site, ADA, "rejected", rejectionFeedback="Too long.")
    review(site, BO, "rejected", rejectionFeedback="Off topic.")
    assert subject(site) == "reject(w): qi-1"
    [entry] = site.feedback("w")
    assert entry["type"] == "rejection"
    assert entry["notes"] == "Too long.\n\nOff topic."


def test_differing_reviews_wait_in_disputed_for_a_curator_to_settle(site: Site) -> None:
    review(site, ADA, "approved", {"title": "Ada's title", "excerpt": "Short."})
    review(site, BO, "rejected", rejectionFeedback="Off topic.")
    assert subject(site) == "dispute(w): qi-1 (approve 1, reject 1)"
    disputed = site.agent("w") / "disputed" / "qi-1.json"
    doc = json.loads(disputed.read_text())
    assert doc["contentData"] == FIRST
    assert [(r["curator"], r["verdict"]) for r in doc["reviews"]] == [
        (ADA, "approve"),
        (BO, "reject"),
    ]
    assert site.feedback("w") == []
    assert site.git("status", "--porcelain") == ""
    # Cy settles it: Ada's version, the reviews key dropped.
    del doc["reviews"]
    doc["contentData"]["title"] = "Ada's title"
    site.write("w", "qi-1.json", doc, folder="disputed")
    site.move("w", "qi-1.json", "approved", source="disputed")
    by(site, CY)
    assert subject(site) == "approve(w): qi-1, 1 correction (title)"
    assert site.git("log", "-1", "--format=%an <%ae>").strip() == CY
    trailers = site.trailers()
    assert trailers["Feedback-Adjudicator"] == [CY]
    assert trailers["Feedback-Reviewers"] == [f"{ADA}, {BO}"]
    assert not disputed.exists()
    assert site.git("status", "--porcelain") == ""


def test_a_reviews_key_left_in_a_settled_dispute_waits_with_an_error(site: Site) -> None:
    review(site, ADA, "approved", {"title": "Ada's title", "excerpt": "Short."})
    review(site, BO, "rejected", rejectionFeedback="Off topic.")
    before = site.commit_count()
    disputed = site.agent("w") / "disputed" / "qi-1.json"
    site.write("w", "qi-1.json", disputed.read_text(), folder="disputed")  # saved a while ago
    moved = site.move("w", "qi-1.json", "approved", source="disputed")
    by(site, CY)
    assert site.commit_count() == before
    error = moved.with_name("qi-1.json.error").read_text()
    assert "reviews" in error and "delete" in error
    doc = json.loads(moved.read_text())
    del doc["reviews"]
    site.write("w", "qi-1.json", doc, folder="approved")
    by(site, CY)
    assert subject(site) == "approve(w): qi-1, no corrections"
    assert not moved.with_name("qi-1.json.error").exists()


def test_a_curator_never_reviews_an_item_twice(site: Site) -> None:
    review(site, ADA, "approved", {"title": "Ada's title", "excerpt": "Short."})
    before, drafted = site.commit_count(), (site.agent("w") / "review" / "qi-1.json").read_bytes()
    review(site, ADA, "rejected", rejectionFeedback="Changed my mind.")
    assert site.commit_count() == before
    waiting = site.agent("w") / "review" / "qi-1.json"
    assert waiting.read_bytes() == drafted
    assert not (site.agent("w") / "rejected" / "qi-1.json").exists()
    error = waiting.with_name("qi-1.json.error").read_text()
    assert f"reviewed already by {ADA}" in error and "another curator" in error
    assert len(reviews(site)) == 1
    assert site.git("status", "--porcelain") == ""
    review(site, BO, "approved", {"title": "Ada's title", "excerpt": "Short."})
    assert subject(site) == "approve(w): qi-1, 1 correction (title)"
    assert not waiting.with_name("qi-1.json.error").exists()


def test_a_draft_queued_again_is_reviewed_afresh(site: Site) -> None:
    edited = {"title": "Better title", "excerpt": "Short."}
    review(site, ADA, "approved", edited)
    review(site, BO, "approved", edited)
    site.move("w", "qi-1.json", "queue", source="approved")
    by(site, ADA)
    review(site, ADA, "rejected", rejectionFeedback="Stale now.")
    assert subject(site) == "review(w): qi-1 by Ada (1 of 2)"


def test_doctor_finds_nothing_wrong_with_a_dispute(site: Site) -> None:
    review(site, ADA, "approved", {"title": "Ada's title", "excerpt": "Short."})
    review(site, BO, "rejected", rejectionFeedback="Off topic.")
    done = site.cli("doctor")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_damaged_reviews_file_keeps_reviews_waiting_and_doctor_names_its_line(
    site: Site,
) -> None:
    review(site, ADA, "approved", {"title": "Ada's title", "excerpt": "Short."})
    log = site.agent("w") / "reviews.jsonl"
    kept = log.read_text()
    log.write_text(kept + '{"id": "rv-broken"\n')
    before = site.commit_count()
    site.write("w", "qi-1.json", (site.agent("w") / "review" / "qi-1.json").read_text(), "review")
    site.move("w", "qi-1.json", "approved", source="review")
    report = by(site, BO)
    assert site.commit_count() == before
    assert (site.agent("w") / "approved" / "qi-1.json").is_file()  # waits where the curator put it
    assert any("reviews.jsonl line 2" in problem.message for problem in report.problems)
    assert "line 2" in (site.agent("w") / "reviews.jsonl.error").read_text()
    doctor = site.cli("doctor")
    assert doctor.returncode == 1 and "reviews.jsonl" in doctor.stdout + doctor.stderr
    log.write_text(kept)
    by(site, BO)  # Bo approved the draft as first drafted, Ada her edit of it
    assert subject(site) == "dispute(w): qi-1 (approve 2, reject 0)"


def test_a_copy_left_in_review_beside_the_decision_goes_with_it(site: Site) -> None:
    """A curator who copies the draft out of review/ rather than moving it (or a merge that
    brings a review/ copy beside another clone's decision): the decision stands, the copy
    goes."""
    review(site, ADA, "rejected", rejectionFeedback="Too long.")
    waiting = site.agent("w") / "review" / "qi-1.json"
    doc = json.loads(waiting.read_text())
    doc["rejectionFeedback"] = "Far too long."
    site.write("w", "qi-1.json", doc, folder="rejected")  # a copy: review/ keeps its own
    by(site, BO)
    assert subject(site) == "reject(w): qi-1"
    assert not waiting.exists()
    assert site.git("status", "--porcelain") == ""


def test_a_draft_edited_where_it_waits_for_review_is_explained_and_kept(site: Site) -> None:
    """review/ holds the draft as first drafted, for the next curator to judge unseen: an edit
    left there would show one curator's changes to the next. It is explained beside the file,
    kept as it is (it becomes its curator's review once moved), and nothing is committed."""
    review(site, ADA, "approved", {"title": "Ada's title", "excerpt": "Short."})
    waiting = site.agent("w") / "review" / "qi-1.json"
    doc = json.loads(waiting.read_text())
    doc["contentData"]["title"] = "Bo's title"
    site.write("w", "qi-1.json", doc, folder="review")
    edited, before = waiting.read_bytes(), site.commit_count()
    report = by(site, BO)
    assert site.commit_count() == before
    assert waiting.read_bytes() == edited
    error = waiting.with_name("qi-1.json.error").read_text()
    assert "edited where it waits" in error and "move it to approved/ or rejected/" in error
    assert any(problem.path == waiting for problem in report.problems)
    site.git("checkout", "--", str(waiting))  # taken back: nothing left to explain
    by(site, BO)
    assert not waiting.with_name("qi-1.json.error").exists()
    site.write("w", "qi-1.json", doc, folder="review")
    site.move("w", "qi-1.json", "approved", source="review")
    by(site, BO)  # moved, the edit is Bo's review
    assert subject(site) == "dispute(w): qi-1 (approve 2, reject 0)"
    assert not waiting.with_name("qi-1.json.error").exists()


def test_a_draft_first_seen_moved_waits_without_the_first_curators_edits(tmp_path: Path) -> None:
    """A draft reviewed before any pass saw it in queue/ (the daemon was stopped): the next
    curator gets it without the first one's edits, name and note; and a refused second review by
    the same curator puts back exactly what waits in review/."""
    site = two_reviews_required(tmp_path / "site")
    site.write("w", "qi-2.json", draft(FIRST, FIRST))
    doc = draft({"title": "Ada's title", "excerpt": "Short."}, FIRST, curator=ADA)
    site.write("w", "qi-2.json", {**doc, "rejectionFeedback": "Too long."}, folder="rejected")
    site.agent("w").joinpath("queue", "qi-2.json").unlink()
    by(site, ADA)
    assert subject(site) == "review(w): qi-2 by Ada (1 of 2)"
    waiting = site.agent("w") / "review" / "qi-2.json"
    assert json.loads(waiting.read_text()) == draft(FIRST, FIRST)
    committed = waiting.read_bytes()
    site.move("w", "qi-2.json", "approved", source="review")
    site.write("w", "qi-2.json", {**doc, "contentData": FIRST}, folder="approved")
    by(site, ADA)
    assert waiting.read_bytes() == committed
    assert site.git("status", "--porcelain") == ""
