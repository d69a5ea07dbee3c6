"""The drafts that wait for one curator (SPEC section 15): queue/ and review/ less what they
reviewed in the draft's current round, then every disputed draft with each curator's version;
and the counts of review/ and disputed/ that `status`, the agents and the panel show."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from feedbackd.app.commands import queries
from feedbackd.core.errors import InvalidFeedback
from tests.reviews_kit import (
    ADA,
    BO,
    add_reviews,
    review_line,
    three_drafts,
)
from tests.workspace_kit import Site, draft

CY = "Cy Third <cy@example.org>"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    """qi-1 queued; qi-2 reviewed by Ada, in review/; qi-3 disputed: Ada approved an edit,
    Bo rejected it."""
    return three_drafts(Site(tmp_path / "ws"))


def waiting(site: Site, curator: str | None) -> list[tuple[str, str]]:
    runtime = site.runtime()
    return [(d["id"], d["waits"]) for d in queries.queue(runtime, "lark", curator)]


def test_a_curator_does_not_see_the_drafts_they_reviewed(site: Site) -> None:
    everyone = [("qi-1", "queue"), ("qi-2", "review"), ("qi-3", "disputed")]
    assert waiting(site, None) == everyone
    assert waiting(site, BO) == everyone
    # Ada reviewed qi-2: it waits for the others; her address in any case is her.
    assert waiting(site, ADA) == [("qi-1", "queue"), ("qi-3", "disputed")]
    assert waiting(site, "A. C. <ADA@example.org>") == [("qi-1", "queue"), ("qi-3", "disputed")]


def test_a_draft_in_review_says_how_many_reviewed_it_and_how_many_must(site: Site) -> None:
    site.configure("review:\n  required: 3\n")
    drafts = queries.queue(site.runtime(), "lark", BO)
    [held] = [d for d in drafts if d["id"] == "qi-2"]
    assert held["review"] == {"done": 1, "of": 3}  # not who: the next review is blind
    # As first drafted: the next curator decides without the first one's edits.
    assert [(f["field"], f["current"], f["changed"]) for f in held["fields"]] == [
        ("title", "Release 2.2", False),
        ("body", "Fixes.", False),
    ]


def test_a_dispute_shows_each_curators_version(site: Site) -> None:
    [disputed] = [d for d in queries.queue(site.runtime(), "lark", CY) if d["waits"] == "disputed"]
    assert [f["current"] for f in disputed["fields"]] == ["Release 2.3", "Fixes."]
    versions = [{k: v for k, v in version.items() if k != "at"} for version in disputed["versions"]]
    assert versions == [
        {"curator": ADA, "verdict": "approve", "edits": {"title": "Release 2.3: faster"}},
        {"curator": BO, "verdict": "reject", "notes": "Say what changed for users."},
    ]
    # Its reviewers see it too: anyone may settle a dispute.
    assert ("qi-3", "disputed") in waiting(site, ADA)


def test_a_review_of_an_earlier_round_does_not_count(site: Site) -> None:
    """qi-1 was reviewed by Bo, decided, then moved back to queue/: a new round."""
    earlier = review_line("qi-1", BO, "approve", title="Release 2.1")
    earlier["at"] = "2020-01-01T00:00:00.000Z"
    add_reviews(site, "lark", [earlier])
    assert ("qi-1", "queue") not in waiting(site, BO)
    with (site.agent("lark") / "decisions.jsonl").open("a") as ledger:
        for n, state in enumerate(("approved", "queued"), start=2):
            line = {"id": f"d-{n}", "item": "qi-1", "state": state, "at": f"202{n}-01-01T00:00:00Z"}
            ledger.write(json.dumps(line) + "\n")
    assert ("qi-1", "queue") in waiting(site, BO)
    add_reviews(site, "lark", [review_line("qi-1", BO, "approve", title="Release 2.1")])
    assert ("qi-1", "queue") not in waiting(site, BO)


def test_a_damaged_reviews_file_is_an_error_naming_its_line(site: Site) -> None:
    with (site.agent("lark") / "reviews.jsonl").open("a") as log:
        log.write(json.dumps({"id": "rv-x", "item": "qi-1"}) + "\n")
    with pytest.raises(InvalidFeedback, match=r"_data/agents/lark/reviews\.jsonl line 4: "):
        queries.queue(site.runtime(), "lark", BO)


def test_the_counts_of_review_and_disputed(site: Site) -> None:
    summary = queries.agent_summary(site.runtime(), "lark")
    assert {k: summary[k] for k in ("queued", "review", "disputed")} == {
        "queued": 1,
        "review": 1,
        "disputed": 1,
    }
    site.write("wren", "qi-9.json", draft({"title": "T"}))
    state = queries.workspace_status(site.runtime(), [])
    assert state["agents"] == {
        "lark": {"review": 1, "disputed": 1},
        "wren": {"review": 0, "disputed": 0},  # no such folders: zero
    }


def test_status_says_what_waits_for_more_reviews(site: Site) -> None:
    shown = site.cli("status")
    assert shown.returncode == 0, shown.stderr
    assert "waiting: lark 1 in review/, 1 disputed" in shown.stdout
    state = json.loads(site.cli("status", "--json").stdout)
    assert state["agents"] == {"lark": {"review": 1, "disputed": 1}}
