"""What the learning outputs make of a history of reviews by several curators (SPEC sections 13,
14 and 15), made by real passes: `log` shows reviews and disputes as such; `stats` counts each
decision once, when made, and no review or dispute as one; `export` leaves out a dispute until a
curator settles it; `why` names the decision's curator (the first reviewer of an agreed one, the
adjudicator of a settled one); `eval` scores held-out decisions alone; `agreement`'s figures are
those worked out by hand below.

The history: qi-1 approved by Ada and Bo alike; qi-2 rejected by both, with different notes;
qi-3 disputed (Ada approves, Bo rejects) and not settled; qi-4 approved by both in different
versions, so disputed, then settled by Cy; qi-5 reviewed by Bo alone, waiting.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from feedbackd.app.reconcile import reconcile_all
from tests.reviews_kit import two_reviews_required
from tests.workspace_kit import Site, draft

ADA = "Ada <ada@example.org>"
BO = "Bo <bo@example.org>"
CY = "Cy <cy@example.org>"


def by(site: Site, curator: str) -> None:
    reconcile_all(site.runtime(curator))


def review(site: Site, item: str, curator: str, to: str, title: str = "", notes: str = "") -> None:
    """`curator` edits the item where it waits (dropping a dispute's key) and moves it."""
    agent = site.agent("w")
    source = next(
        f for f in ("queue", "review", "disputed") if (agent / f / f"{item}.json").exists()
    )
    doc = json.loads((agent / source / f"{item}.json").read_text())
    doc.pop("reviews", None)
    if title:
        doc["contentData"]["title"] = title
    if notes:
        doc["rejectionFeedback"] = notes
    site.write("w", f"{item}.json", doc, folder=source)
    site.move("w", f"{item}.json", to, source=source)
    by(site, curator)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    site = two_reviews_required(tmp_path_factory.mktemp("reviews-in-outputs") / "site")
    for n in range(1, 6):
        site.write("w", f"qi-{n}.json", draft({"title": f"Old title {n}", "excerpt": "Short."}))
    by(site, ADA)
    review(site, "qi-1", ADA, "approved", title="Better 1")
    review(site, "qi-1", BO, "approved", title="Better 1")
    review(site, "qi-2", ADA, "rejected", notes="Too long.")
    review(site, "qi-2", BO, "rejected", notes="Off topic.")
    review(site, "qi-3", ADA, "approved", title="Ada 3")
    review(site, "qi-3", BO, "rejected", notes="No.")
    review(site, "qi-4", ADA, "approved", title="Ada 4")
    review(site, "qi-4", BO, "approved", title="Bo 4")
    review(site, "qi-4", CY, "approved", title="Cy 4")
    review(site, "qi-5", BO, "approved", title="Bo 5")
    return site


def cli_json(site: Site, *args: str) -> Any:
    done = site.cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_log_shows_reviews_and_disputes_as_such(site: Site) -> None:
    shown = [(r["event"], r["item"], r["curator"]) for r in cli_json(site, "log", "w")]
    assert shown[:-1] == [
        ("review", "qi-5", BO),
        ("approve", "qi-4", CY),
        ("dispute", "qi-4", BO),
        ("review", "qi-4", ADA),
        ("dispute", "qi-3", BO),
        ("review", "qi-3", ADA),
        ("reject", "qi-2", ADA),
        ("review", "qi-2", ADA),
        ("approve", "qi-1", ADA),
        ("review", "qi-1", ADA),
    ]
    text = site.cli("log", "w").stdout
    assert "review" in text and "dispute" in text


def test_stats_counts_each_decision_once_and_no_review(site: Site) -> None:
    total = cli_json(site, "stats", "w")["total"]
    assert (total["decided"], total["approved"], total["rejected"]) == (3, 2, 1)
    assert total["corrections"] == 2


def test_export_leaves_a_dispute_out_until_it_is_settled(site: Site, tmp_path: Path) -> None:
    done = site.cli("export", "w", "--format", "hf", "--out", str(tmp_path / "hf"))
    assert done.returncode == 0, done.stderr
    [data] = (tmp_path / "hf" / "data").glob("*.jsonl")
    rows = {row["id"]: row for row in map(json.loads, data.read_text().splitlines())}
    assert sorted(rows) == ["qi-1", "qi-2", "qi-4"]
    assert (rows["qi-1"]["curator"], rows["qi-4"]["curator"]) == (ADA, CY)
    assert rows["qi-4"]["corrections"] == [
        {"field": "title", "original": "Old title 4", "corrected": "Cy 4"}
    ]
    # The rejection's note is the decision's: both reviewers' notes, as feedback.json has it.
    assert rows["qi-2"]["notes"] == "Too long.\n\nOff topic."


def test_why_names_the_curator_of_each_decision(site: Site) -> None:
    lines = cli_json(site, "why", "w")["lines"]
    assert [(line["item"], line["curator"]) for line in lines] == [("qi-1", ADA), ("qi-4", CY)]


def test_eval_scores_held_out_decisions_alone(site: Site) -> None:
    first = site.git("rev-list", "--reverse", "HEAD").split()[2]  # the drafts' commit
    report = cli_json(site, "eval", "w", "--at", first, "--command", "builtin:apply-lessons")
    assert [result["item"] for result in report["results"]] == ["qi-1", "qi-4"]


def test_agreement_figures_are_those_worked_out_by_hand(site: Site) -> None:
    figures = cli_json(site, "agreement", "w")
    # qi-1..qi-4 have two reviews each (qi-5 one): qi-1 and qi-2 agree; qi-3 and qi-4 differ,
    # and Cy settled qi-4.
    assert (figures["items"], figures["agreed"], figures["disputed"], figures["resolved"]) == (
        4,
        2,
        2,
        1,
    )
    assert figures["verdict_agreement"] == 0.75  # all but qi-3 have one verdict
    assert figures["kappa"] == []  # no pair of curators shares ten items
    # Krippendorff's alpha, nominal: the pairable values are 5 approvals and 3 rejections, and
    # qi-3 alone disagrees: D_o = 2/8, D_e = 2*5*3/(8*7) = 30/56, alpha = 1 - D_o/D_e = 8/15.
    assert figures["alpha"] == pytest.approx(8 / 15, abs=1e-4)
    # The fields of the items all approved (qi-1, qi-4): excerpt always the same, title once.
    assert {f["field"]: (f["items"], f["agreement"]) for f in figures["fields"]} == {
        "excerpt": (2, 1.0),
        "title": (2, 0.5),
    }
    curators = {
        c["curator"]: (c["reviews"], c["decided"], c["agreement"]) for c in figures["curators"]
    }
    # Each reviewed qi-1..qi-4; three of them are decided, each time as both reviewers said.
    assert curators == {ADA: (4, 3, 1.0), BO: (4, 3, 1.0)}
