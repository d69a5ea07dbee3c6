"""Counts read as a person says them ("1 rating", never "1 ratings"), and what the footers tell is
true of the workspace (the corrections that reach the prompt are the ones there are)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from feedbackd.app.daemon.statusfile import PassProgress
from feedbackd.core.config import OptimizerSettings
from feedbackd.core.ratings.records import parse_rating
from feedbackd.core.ratings.skillrules import QualityFinding, decide_quality
from feedbackd.core.wording import counted, noun
from feedbackd.web import charts, learningcard
from tests.web_kit import serving
from tests.workspace_kit import Site, draft

NOW = datetime(2026, 4, 8, 10, 0, tzinfo=UTC)
RATING = {
    "provider_agent": "prov",
    "skill_id": "code-run",
    "rating": 4,
    "result_quality": "good",
    "would_reuse": True,
    "cost_value_ratio": "fair",
}


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "site")


def rate(site: Site, **changes: Any) -> None:
    rating = {**RATING, "transaction_id": str(uuid.uuid4()), **changes}
    done = site.cli("feedback", "submit", "--as", "buyer", "--json", json.dumps(rating))
    assert done.returncode == 0, done.stderr


def test_counted_says_one_thing_and_many_things() -> None:
    assert counted(1, "rating") == "1 rating"
    assert counted(0, "rating") == "0 ratings"
    assert counted(2, "entry", "entries") == "2 entries"
    assert noun(1, "entry", "entries") == "entry" and noun(3, "row") == "rows"


def test_one_rating_is_one_rating_in_list_and_reputation(site: Site) -> None:
    rate(site)
    listed = site.cli("feedback", "list", "--skill", "code-run").stdout
    assert "1 rating, average 4" in listed and "1 ratings" not in listed
    reputation = site.cli("reputation", "prov").stdout
    assert " from 1 rating (confidence" in reputation
    assert "  code-run: " in reputation and "(1 rating)" in reputation
    assert "1 ratings" not in reputation


def test_recent_tells_how_many_corrections_reach_the_prompt(site: Site) -> None:
    site.write("w", "qi-1.json", draft({"t": "new", "u": "two"}, {"t": "old", "u": "one"}))
    site.move("w", "qi-1.json", "approved")
    site.reconcile()
    shown = site.cli("recent", "w").stdout
    assert "2 entries in all; 2 corrections reach the prompt." in shown
    site.configure("prompt:\n  max_examples: 1\n")
    shown = site.cli("recent", "w").stdout
    assert "2 entries in all; the last 1 of 2 corrections reaches the prompt." in shown


def test_recent_with_only_a_rejection_says_nothing_reaches_the_prompt(site: Site) -> None:
    site.write("w", "qi-1.json", draft({"t": "meh"}))
    site.reconcile()
    assert site.cli("reject", "w", "qi-1", "--notes", "too dry").returncode == 0
    assert "1 entry in all; no correction reaches the prompt." in site.cli("recent", "w").stdout
    site.configure("prompt:\n  include_rejections: true\n")
    shown = site.cli("recent", "w").stdout
    assert "1 entry in all; 1 rejection note reaches the prompt." in shown


def test_the_panel_skill_card_counts_one_rating(site: Site) -> None:
    (site.agent("prov")).mkdir(parents=True)
    (site.agent("prov") / "SOUL.md").write_text("# Prov\n\nDoes.\n\n## Code Run\n\nRuns.\n")
    rate(site)
    with serving(site.root) as client:
        page = client.get("/agents/prov").text
    assert "1 rating · reputation" in page


def test_the_quality_rule_counts_one_rating() -> None:
    one = parse_rating(
        {**RATING, "transaction_id": str(uuid.uuid4()), "rating": 1, "result_quality": "failed",
         "timestamp": (NOW - timedelta(hours=1)).isoformat()},
        requester="buyer", now=NOW,
    )  # fmt: skip
    finding = decide_quality([one], OptimizerSettings(), "7d")
    assert isinstance(finding, QualityFinding)
    assert "over 1 rating in the last 7d" in finding.why
    assert "1 of 1 result in the last 7d was poor or failed" in finding.why


def test_doctor_and_export_count_in_words(site: Site) -> None:
    (site.agent("w") / "queue").mkdir(parents=True)
    (site.agent("w") / "queue" / "bad.json").write_text("{")
    doctor = site.cli("doctor").stdout
    assert "1 problem in " in doctor and "problem(s)" not in doctor
    assert " 1 files" not in doctor
    (site.agent("w") / "queue" / "bad.json").unlink()
    site.write("w", "qi-1.json", draft({"t": "new"}, {"t": "old"}), "approved")
    site.reconcile()
    out = site.root / "sft.jsonl"
    done = site.cli("export", "w", "--format", "openai-sft", "--out", str(out))
    assert "exported 1 row of w" in done.stderr


def test_the_panels_charts_and_the_status_line_count_in_words() -> None:
    assert 'aria-label="Ratings: 1 point, latest' in charts.bars(
        "Ratings", [{"time": "2026-04-08T10:00:00.000Z", "rating": 4}], "rating", 1, 5
    )
    week = {"start": "2026-04-06", "unedited_rate": 1.0, "decided": 1, "rejected": 0}
    assert "per period, 1 period from 2026-04-06" in learningcard.rates_chart([week])
    assert PassProgress("w", 0, 1).line() == "working: w, 0 of 1 decision"
