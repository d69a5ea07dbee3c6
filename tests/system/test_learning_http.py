"""`GET /api/agents/{id}/stats` and the `/metrics` gauge, from a real `feedbackd serve` over a
history made through the real pipeline (SPEC section 13)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.learning_kit import AGENT, Clock, Curator
from tests.web_kit import Server
from tests.workspace_kit import Site

pytestmark = pytest.mark.slow


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Site:
    """writer: two approvals this month, one corrected, and one rejection; editor: one
    approval six weeks ago, none since."""
    site, clock = Site(tmp_path / "ws"), Clock(monkeypatch)
    curator = Curator(site, clock)
    days_ago = datetime.now(UTC).replace(microsecond=0) - timedelta(days=3)
    curator.drafts(days_ago, "q1", "q2", "q3")
    curator.approve(days_ago + timedelta(hours=1), "q1", title="Sharper")
    curator.approve(days_ago + timedelta(hours=2), "q2")
    curator.reject(days_ago + timedelta(hours=3), "q3")
    weeks_ago = days_ago - timedelta(weeks=6)
    site.write("editor", "e1.json", {"contentData": {"title": "Old"}})
    clock.at(weeks_ago)
    site.reconcile()
    clock.at(weeks_ago + timedelta(hours=1))
    site.move("editor", "e1.json", "approved")
    site.reconcile()
    monkeypatch.delenv("GIT_AUTHOR_DATE")  # the server's own commits, if any, are made now
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    return site


def test_stats_over_http_is_what_the_command_prints(site: Site, server: Server) -> None:
    answer = server.get(f"/api/agents/{AGENT}/stats?by=day&since=30d")
    assert answer.status == 200
    done = site.cli("stats", AGENT, "--by", "day", "--since", "30d", "--json")
    assert answer.json() == json.loads(done.stdout)
    report = answer.json()
    assert report["total"]["decided"] == 3 and report["total"]["unedited_rate"] == 0.5
    assert report["fields"] == {"title": 1}
    weekly = server.get(f"/api/agents/{AGENT}/stats").json()
    assert weekly["by"] == "week" and weekly["total"] == report["total"]


def test_stats_over_http_refuses_what_the_command_refuses(server: Server) -> None:
    unknown = server.get("/api/agents/nobody/stats")
    assert unknown.status == 404 and unknown.json()["error"] == "not_found"
    period = server.get(f"/api/agents/{AGENT}/stats?by=year")
    assert period.status == 400
    assert period.json()["error"] == "usage" and "day, week or month" in period.json()["message"]
    since = server.get(f"/api/agents/{AGENT}/stats?since=soon")
    assert since.status == 400 and "7d" in since.json()["message"]


def test_an_early_since_answers_from_the_first_decision(site: Site, server: Server) -> None:
    """A since long before any decision lists periods from the first decision on, not from the
    year 1: the answer stays small."""
    answer = server.get(f"/api/agents/{AGENT}/stats?by=day&since=0001-01-01")
    assert answer.status == 200
    report = answer.json()
    assert report["total"]["decided"] == 3
    assert 1 <= len(report["periods"]) <= 5  # three days back, today included
    assert report["periods"][0]["decided"] == 3
    assert len(answer.body) < 10_000


def test_more_periods_than_the_cap_are_refused(
    site: Site, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eleven years of days is past the cap (ten years of days): a 400 that says what to do,
    while weeks over the same span are answered."""
    clock = Clock(monkeypatch)
    long_ago = datetime.now(UTC).replace(microsecond=0) - timedelta(days=11 * 366)
    site.write("archive", "a1.json", {"contentData": {"title": "Old"}})
    clock.at(long_ago)
    site.reconcile()
    clock.at(long_ago + timedelta(hours=1))
    site.move("archive", "a1.json", "approved")
    site.reconcile()
    daily = server.get("/api/agents/archive/stats?by=day")
    assert daily.status == 400 and daily.json()["error"] == "usage"
    assert "at most 3,660" in daily.json()["message"]
    weekly = server.get("/api/agents/archive/stats?by=week&since=0001-01-01")
    assert weekly.status == 200 and weekly.json()["total"]["decided"] == 1
    assert len(weekly.json()["periods"]) < 600


def test_metrics_gauge_the_unedited_approvals_of_the_last_30_days(server: Server) -> None:
    text = server.get("/metrics").text
    assert "# TYPE feedbackd_unedited_approval_ratio gauge" in text
    assert 'feedbackd_unedited_approval_ratio{agent="writer"} 0.5' in text.splitlines()
    rates = [line for line in text.splitlines() if line.startswith("feedbackd_unedited_")]
    assert not [line for line in rates if 'agent="editor"' in line]  # six weeks old: no rate
