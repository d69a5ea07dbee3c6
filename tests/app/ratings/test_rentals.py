"""Ratings of rented skills through the real command line and the inbox, each one commit."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from feedbackd.core.timeutil import iso_ms
from tests.workspace_kit import Site

PROVIDER, SKILL = "heavylift-chengwen", "claude-code-run"
SEED_EXAMPLE = {  # the requester example of the genesis seed, with a real transaction id
    "transaction_id": "6f1c2a9e-3b4d-4c5e-8f70-1a2b3c4d5e6f",
    "provider_agent": PROVIDER,
    "skill_id": SKILL,
    "rating": 5,
    "latency_ms": 28500,
    "result_quality": "excellent",
    "quality_details": "Code executed correctly, output matched expectations",
    "would_reuse": True,
    "cost_value_ratio": "great",
}


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "site")


def rating(**changes: Any) -> dict[str, Any]:
    return {**SEED_EXAMPLE, "transaction_id": str(uuid.uuid4()), **changes}


def submit(site: Site, doc: dict[str, Any] | str, *extra: str, buyer: str = "genesis-bot") -> Any:
    payload = doc if isinstance(doc, str) else json.dumps(doc)
    return site.cli("feedback", "submit", "--json", payload, "--as", buyer, *extra)


def overpriced_from_two_buyers(site: Site, count: int = 3) -> list[Any]:
    """A price moves only when at least two buyers (pricing.min_requesters) say overpriced."""
    buyers = [f"buyer-{number % 2}" for number in range(count)]
    return [
        submit(site, rating(cost_value_ratio="overpriced", requester_agent=b), buyer=b)
        for b in buyers
    ]


def test_the_seed_example_is_stored_committed_and_remembered(site: Site) -> None:
    done = submit(site, SEED_EXAMPLE)
    assert done.returncode == 0, done.stderr
    month = datetime.now(UTC).strftime("%Y-%m")
    stored = site.agent(PROVIDER) / "ratings" / SKILL / f"{month}.jsonl"
    [line] = stored.read_text().splitlines()
    assert json.loads(line)["requester_agent"] == "genesis-bot"
    assert site.git("log", "-1", "--format=%s").startswith(f"rating({PROVIDER}/{SKILL}): 5/5")
    trailers = site.trailers()
    assert trailers["Feedback-Event"] == ["rating"]
    assert trailers["Feedback-Skill"] == [SKILL]
    assert trailers["Feedback-Transaction"] == [SEED_EXAMPLE["transaction_id"]]
    committed = site.git("show", "--name-only", "--format=", "HEAD").split()
    assert f"_data/agents/{PROVIDER}/ratings/{SKILL}/{month}.jsonl" in committed
    assert "_data/agents/genesis-bot/memory/cases.jsonl" in committed
    memory = json.loads(site.cli("memory", "genesis-bot", "--json").stdout)
    assert [(m["category"], m["importance"]) for m in memory] == [("cases", 0.8), ("entities", 0.7)]


def test_a_failed_rental_is_remembered_with_more_weight(site: Site) -> None:
    submit(site, rating(rating=2, result_quality="poor"))
    cases = json.loads(site.cli("memory", "genesis-bot", "--category", "cases", "--json").stdout)
    assert [m["importance"] for m in cases] == [0.9]


def test_a_second_rating_of_one_transaction_is_refused(site: Site) -> None:
    doc = rating()
    assert submit(site, doc).returncode == 0
    commits = site.commit_count()
    again = submit(site, doc)
    assert again.returncode == 1
    assert again.stderr.startswith("error: feedback_already_submitted: ")
    assert site.commit_count() == commits


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"rating": 0}, "rating"),
        ({"rating": 6}, "rating"),
        ({"rating": 2.5}, "rating"),
        ({"result_quality": "superb"}, "result_quality"),
        ({"cost_value_ratio": "cheap"}, "cost_value_ratio"),
        ({"transaction_id": "uuid-from-request-response"}, "transaction_id"),
        ({"quality_details": "x" * 501}, "quality_details"),
        ({"mood": "happy"}, "mood"),
        ({"provider_agent": "../etc"}, "provider_agent"),
        ({"would_reuse": "yes"}, "would_reuse"),
    ],
)
def test_refused_input_names_the_field_and_writes_nothing(
    site: Site, changes: dict[str, Any], field: str
) -> None:
    commits = site.commit_count()
    done = submit(site, rating(**changes))
    assert done.returncode == 1
    assert done.stderr.startswith("error: invalid_feedback: ") and field in done.stderr
    assert site.commit_count() == commits
    assert not (site.agent(PROVIDER) / "ratings").exists()
    assert not site.agent("genesis-bot").exists()


def test_not_json_is_refused(site: Site) -> None:
    done = submit(site, '{"rating": 5,')
    assert done.returncode == 1 and "invalid_feedback" in done.stderr


def test_list_since_window_and_scores(site: Site) -> None:
    now = datetime.now(UTC)
    for days, stars, value in ((1, 5, "great"), (3, 1, "overpriced"), (20, 4, "fair")):
        moment = iso_ms(now - timedelta(days=days))
        doc = rating(rating=stars, cost_value_ratio=value, timestamp=moment)
        assert submit(site, doc).returncode == 0
    week = json.loads(
        site.cli("feedback", "list", "--skill", SKILL, "--since", "7d", "--json").stdout
    )
    assert week["count"] == 2 and week["average_rating"] == 3
    assert [f["rating"] for f in week["feedbacks"]] == [5, 1]  # newest first
    assert week["overpriced_ratio"] == 0.5
    assert 0 < week["reputation_score"] < 1
    everything = json.loads(site.cli("feedback", "list", "--skill", SKILL, "--json").stdout)
    assert everything["count"] == 3
    limited = site.cli("feedback", "list", "--skill", SKILL, "--limit", "1", "--json").stdout
    assert len(json.loads(limited)["feedbacks"]) == 1


def test_reputation_per_skill_and_cold_start(site: Site) -> None:
    submit(site, rating())
    submit(site, rating(skill_id="data-cleanup", rating=1, result_quality="failed",
                        would_reuse=False, cost_value_ratio="overpriced"))  # fmt: skip
    report = json.loads(site.cli("reputation", PROVIDER, "--json").stdout)
    assert report["skills"][SKILL]["reputation_score"] == pytest.approx(1.0, abs=1e-3)
    assert report["skills"]["data-cleanup"]["reputation_score"] == pytest.approx(0.02, abs=1e-3)
    assert report["feedback_count"] == 2
    unknown = json.loads(site.cli("reputation", "never-seen", "--json").stdout)
    assert unknown["reputation_score"] == 0.5 and unknown["feedback_count"] == 0


def test_inbox_files_are_ingested_and_removed_a_bad_one_stays(site: Site) -> None:
    site.configure("agent_id: genesis-bot\ndaemon:\n  settle_ms: 0\n")
    inbox = site.data / "inbox" / "ratings"
    (inbox / "one.json").write_text(json.dumps(rating()))
    (inbox / "two.json").write_text(json.dumps([rating(rating=4), rating(rating=3)]))
    (inbox / "bad.json").write_text(json.dumps(rating(rating=9)))
    done = site.cli("run", "--once")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in inbox.iterdir()) == ["bad.json", "bad.json.error"]
    assert "rating" in (inbox / "bad.json.error").read_text()
    listed = json.loads(site.cli("feedback", "list", "--skill", SKILL, "--json").stdout)
    assert listed["count"] == 3
    events = site.git("log", "--format=%(trailers:key=Feedback-Event,valueonly)").split()
    assert events.count("rating") == 3
    assert site.git("status", "--porcelain", "--", "_data/agents") == ""


def test_an_interrupted_rating_is_committed_by_the_next_pass_as_a_rating(site: Site) -> None:
    from feedbackd.app.workspace.agentfiles import write_rental_memories
    from feedbackd.core.ratings.records import parse_rating
    from feedbackd.edges.clock import utcnow
    from feedbackd.edges.ratingstore import RatingStore

    # What a `feedback submit` killed between its writes and its commit leaves behind: the
    # provider's rating line and the buyer's memory (buyer1 sorts before the provider).
    runtime = site.runtime()
    doc = rating(rating=4, result_quality="good", cost_value_ratio="fair")
    stored = parse_rating(doc, requester="buyer1", now=utcnow())
    RatingStore(runtime.workspace).append(stored)
    write_rental_memories(runtime.workspace, stored, utcnow(), [])
    site.reconcile()
    assert site.git("status", "--porcelain", "--", "_data") == ""
    subject = site.git("log", "-1", "--format=%s").strip()
    assert subject == f"rating({PROVIDER}/{SKILL}): 4/5 good from buyer1 (fair)"
    trailers = site.trailers()
    assert trailers["Feedback-Event"] == ["rating"]
    assert trailers["Feedback-Agent"] == [PROVIDER]
    assert trailers["Feedback-Skill"] == [SKILL]
    assert trailers["Feedback-Transaction"] == [doc["transaction_id"]]
    changed = site.git("show", "--name-only", "--format=", "HEAD").split()
    assert any("/buyer1/" in path for path in changed)  # the memory came with it


def test_the_rules_run_for_a_rating_completed_after_an_interruption(site: Site) -> None:
    from feedbackd.core.ratings.records import parse_rating
    from feedbackd.edges.clock import utcnow
    from feedbackd.edges.ratingstore import RatingStore

    soul = site.agent(PROVIDER) / "SOUL.md"
    soul.parent.mkdir(parents=True)
    soul.write_text(f"# HeavyLift\n\nRuns code.\n\n## {SKILL}\nRuns it.\npricing: 20\n")
    site.git("add", "-A")
    site.git("commit", "-qm", "soul")
    for _ in range(2):
        assert submit(site, rating(cost_value_ratio="overpriced")).returncode == 0
    # The second buyer's rating, from a `feedback submit` killed before its commit and rules.
    killed = rating(cost_value_ratio="overpriced", requester_agent="buyer1")
    RatingStore(site.runtime().workspace).append(
        parse_rating(killed, requester="buyer1", now=utcnow())
    )
    site.reconcile()
    assert "pricing: 19\n" in soul.read_text()
    subjects = site.git("log", "-2", "--format=%s").splitlines()
    assert subjects[0].startswith(f"pricing({PROVIDER}/{SKILL}): 20 → 19")
    assert subjects[1].startswith(f"rating({PROVIDER}/{SKILL}): 5/5 excellent from buyer1")


def test_buyers_calling_a_skill_overpriced_cut_its_price(site: Site) -> None:
    soul = site.agent(PROVIDER) / "SOUL.md"
    soul.parent.mkdir(parents=True)
    soul.write_text("# HeavyLift\n\nRuns code.\n\n## Claude Code Run\nRuns it.\npricing: 20\n")
    site.git("add", "-A")
    site.git("commit", "-qm", "soul")
    alone = [submit(site, rating(cost_value_ratio="overpriced")) for _ in range(3)]
    assert all(done.returncode == 0 for done in alone)
    assert "pricing: 20\n" in soul.read_text()  # one buyer alone never moves a price
    second_buyer = overpriced_from_two_buyers(site, count=1)  # buyer-0: now two buyers
    assert second_buyer[0].returncode == 0
    assert "pricing: 19\n" in soul.read_text()
    [change] = json.loads(second_buyer[0].stdout)["changes"]
    assert change["event"] == "pricing"
    trailers = site.trailers()
    assert trailers["Feedback-Event"] == ["pricing"]
    assert (trailers["Price-Old"], trailers["Price-New"]) == (["20"], ["19"])
    subject = site.git("log", "-1", "--format=%s").strip()
    assert subject.endswith(": 20 → 19 (4 of 4 ratings from 2 buyers said overpriced)")


def test_a_failing_sync_command_is_shown_by_status_and_is_not_fatal(site: Site) -> None:
    import sys

    failing = [sys.executable, "-c", "import sys; print('card rejected'); sys.exit(3)"]
    site.configure(f"pricing:\n  sync_command: {json.dumps(failing)}\n")
    soul = site.agent(PROVIDER) / "SOUL.md"
    soul.parent.mkdir(parents=True)
    soul.write_text("# HeavyLift\n\n## Claude Code Run\npricing: 10\n")
    outputs = overpriced_from_two_buyers(site)
    assert [done.returncode for done in outputs] == [0, 0, 0]
    assert "pricing: 9.5\n" in soul.read_text()
    status = json.loads(site.cli("status", "--json").stdout)
    assert any("exit status 3" in problem for problem in status["problems"]), status


@pytest.mark.slow
def test_the_human_listing_shows_the_newest_rows_and_sums_up_all(site: Site) -> None:
    for _ in range(22):
        assert submit(site, rating()).returncode == 0
    done = site.cli("feedback", "list", "--skill", SKILL)
    assert done.returncode == 0
    assert "22 ratings (the newest 20 shown; --limit N for more)" in done.stdout
    full = json.loads(site.cli("feedback", "list", "--skill", SKILL, "--json").stdout)
    assert len(full["feedbacks"]) == 22


def test_an_inbox_file_whose_ratings_are_already_stored_is_removed_once(site: Site) -> None:
    site.configure("agent_id: genesis-bot\n")
    doc = rating()
    assert submit(site, doc).returncode == 0
    inbox = site.data / "inbox" / "ratings"
    (inbox / "again.json").write_text(json.dumps(doc))  # a retry after a crash, say
    commits = site.commit_count()
    assert site.cli("run", "--once").returncode == 0
    assert not (inbox / "again.json").exists()
    assert site.commit_count() == commits  # the file was never committed: nothing to record
    listed = json.loads(site.cli("feedback", "list", "--skill", SKILL, "--json").stdout)
    assert listed["count"] == 1
