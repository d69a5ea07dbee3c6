"""Self-optimisation in real workspaces: SOUL.md edits, lessons, commits, sync, optimizer."""

from __future__ import annotations

import json
import logging
import sys
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from feedbackd.app.commits.openrepo import open_repo
from feedbackd.app.ratings.publishing import publish_problems
from feedbackd.app.ratings.selfoptimize import rules_hook, run_rules
from feedbackd.app.ratings.skillpass import SkillChange, SkillPass
from feedbackd.core.ratings.records import parse_rating
from feedbackd.core.timeutil import iso_ms
from feedbackd.edges.clock import utcnow
from feedbackd.edges.ratingstore import RatingStore
from tests.workspace_kit import Site

AGENT = "heavylift-chengwen"
SKILL = "claude-code-run"
SOUL = """\
# HeavyLift Chengwen

A provider agent that takes on the heavy lifting.

## Claude Code Run

Runs a coding task in an isolated workspace.

- Languages: Python, Go

pricing: 20

## Data Cleanup

Normalises CSV and JSON exports.

pricing: 12.5

## Report Writer

Turns a folder of results into a two-page report.
"""


class Shop:
    """A provider with a SOUL.md in a real workspace, rated by buyers, its rules run at will."""

    def __init__(self, tmp_path: Path, config: str = "") -> None:
        self.site = Site(tmp_path / "site")
        if config:
            self.site.configure(config)
        self.soul_path = self.site.agent(AGENT) / "SOUL.md"
        self.soul_path.parent.mkdir(parents=True, exist_ok=True)
        self.soul_path.write_text(SOUL)
        self.commit_all("provider persona")
        self.start = utcnow().replace(microsecond=0) - timedelta(hours=1)

    def commit_all(self, message: str) -> None:
        if (self.site.root / ".git").exists():
            self.site.git("add", "-A")
            self.site.git("commit", "-q", "--allow-empty", "-m", message)

    def rate(self, count: int, at: datetime, skill: str = SKILL, **fields: Any) -> None:
        store = RatingStore(self.site.runtime().workspace)
        for i in range(count):
            doc = {
                "transaction_id": str(uuid.uuid4()),
                "provider_agent": AGENT,
                "skill_id": skill,
                "rating": 3,
                "result_quality": "acceptable",
                "would_reuse": True,
                "cost_value_ratio": "overpriced",
                "timestamp": iso_ms(at + timedelta(seconds=i)),
                **fields,
            }
            store.append(parse_rating(doc, requester=f"buyer-bot-{i % 2}", now=at))
        self.commit_all(f"{count} ratings")

    def run(self, now: datetime, skill: str = SKILL, dry_run: bool = False) -> list[SkillChange]:
        runtime = self.site.runtime()
        with open_repo(runtime) as repo:
            return run_rules(runtime, repo, AGENT, skill, now, dry_run=dry_run)

    def soul(self) -> str:
        return self.soul_path.read_text()

    def price_commits(self) -> list[str]:
        return self.site.git("log", "--format=%s", "--grep=^Feedback-Event: pricing").splitlines()


def script(code: str) -> str:
    """A YAML flow list that runs `code` with this Python: a real command, no shell."""
    return json.dumps([sys.executable, "-c", code])


# --- price cuts -------------------------------------------------------------------------------


def test_a_cut_edits_one_skill_and_commits_it_with_trailers(tmp_path: Path) -> None:
    shop = Shop(tmp_path)
    shop.rate(3, shop.start)
    before = shop.site.commit_count()

    changes = shop.run(utcnow())

    assert [(c.kind, c.summary) for c in changes] == [
        ("pricing", "20 → 19 (3 of 3 ratings from 2 buyers said overpriced)")
    ]
    assert shop.soul() == SOUL.replace("pricing: 20", "pricing: 19")
    assert shop.site.commit_count() == before + 1
    assert shop.site.git("log", "-1", "--format=%s").strip() == (
        "pricing(heavylift-chengwen/claude-code-run): 20 → 19"
        " (3 of 3 ratings from 2 buyers said overpriced)"
    )
    trailers = shop.site.trailers()
    assert trailers["Feedback-Event"] == ["pricing"]
    assert trailers["Feedback-Skill"] == [SKILL]
    assert (trailers["Price-Old"], trailers["Price-New"]) == (["20"], ["19"])
    assert changes[0].commit == shop.site.git("rev-parse", "HEAD").strip()
    assert shop.site.git("status", "--porcelain").strip() == ""
    memory = [json.loads(line) for line in _lines(shop.site.agent(AGENT) / "memory/patterns.jsonl")]
    assert [(m["category"], m["importance"]) for m in memory] == [("patterns", 0.6)]
    assert (
        "from 20 to 19 because 3 of 3 ratings from 2 buyers said overpriced" in memory[0]["content"]
    )


def test_a_second_pass_commits_nothing(tmp_path: Path) -> None:
    shop = Shop(tmp_path)
    shop.rate(3, shop.start, result_quality="poor", quality_details="Diff was incomplete")
    now = utcnow()
    assert {c.kind for c in shop.run(now)} == {"pricing", "optimize"}
    count, soul = shop.site.commit_count(), shop.soul()
    assert shop.run(now) == []
    assert shop.run(now + timedelta(minutes=5)) == []
    assert (shop.site.commit_count(), shop.soul()) == (count, soul)


def test_too_few_samples_change_nothing(tmp_path: Path) -> None:
    shop = Shop(tmp_path)
    shop.rate(2, shop.start)
    count = shop.site.commit_count()
    assert shop.run(utcnow()) == []
    assert shop.soul() == SOUL and shop.site.commit_count() == count


def test_cooldown_allows_one_change_per_period(tmp_path: Path) -> None:
    shop = Shop(tmp_path, "ratings:\n  window: 30d\n")
    shop.rate(3, shop.start)
    first = utcnow()
    assert len(shop.run(first)) == 1
    shop.rate(3, first + timedelta(hours=1))
    assert shop.run(first + timedelta(days=1)) == []  # within the 7d cooldown
    later = shop.run(first + timedelta(days=8))
    assert [c.summary for c in later] == [
        "19 → 18.05 (3 of 3 ratings from 2 buyers said overpriced)"
    ]
    assert "pricing: 18.05\n" in shop.soul()


def test_repeated_cuts_stop_at_the_floor_of_the_first_base_price(tmp_path: Path) -> None:
    config = (
        "pricing:\n  step_pct: 10\n  floor_ratio: 0.9\n  cooldown: 1h\nratings:\n  window: 30d\n"
    )
    shop = Shop(tmp_path, config)
    now = utcnow()
    prices = []
    for round_ in range(3):
        shop.rate(3, now + timedelta(minutes=1))
        changes = shop.run(now + timedelta(hours=2))
        prices.extend(c.details["price_new"] for c in changes)
        now += timedelta(hours=2)
        if round_ == 0:
            # The base comes from history, even when the ledger is gone: git remembers it.
            (shop.site.agent(AGENT) / "pricing.jsonl").unlink()
            shop.commit_all("drop the price ledger")
    assert prices == ["18"]  # 20 → 18 = 0.9 × 20, then held at the floor
    assert "pricing: 18\n" in shop.soul() and len(shop.price_commits()) == 1


def test_a_skill_without_a_price_starts_at_ten_and_gets_a_pricing_line(tmp_path: Path) -> None:
    shop = Shop(tmp_path)
    shop.rate(3, shop.start, skill="report-writer")
    changes = shop.run(utcnow(), skill="report-writer")
    assert [c.details["price_old"] for c in changes] == ["10"]
    expected = SOUL.replace("two-page report.\n", "two-page report.\npricing: 9.5\n")
    assert shop.soul() == expected


def test_increases_when_allowed_stop_at_the_cap(tmp_path: Path) -> None:
    config = (
        "pricing:\n  allow_increase: true\n  cap_ratio: 1.05\n  cooldown: 1h\n"
        "ratings:\n  window: 30d\n"
    )
    shop = Shop(tmp_path, config)
    now = utcnow()
    happy = {"rating": 5, "would_reuse": True, "cost_value_ratio": "great"}
    summaries = []
    for _ in range(2):
        shop.rate(5, now + timedelta(minutes=1), **happy)
        summaries += [c.summary for c in shop.run(now + timedelta(hours=2))]
        now += timedelta(hours=2)
    assert summaries == [
        "20 → 21 (5 of 5 buyers rated 5 and would reuse, none said overpriced; cap 21)"
    ]
    assert "pricing: 21\n" in shop.soul()


def test_prices_follow_the_rules_without_git(tmp_path: Path) -> None:
    shop = Shop(tmp_path, "git:\n  enabled: false\nratings:\n  window: 30d\n")
    shop.rate(3, shop.start)
    first = utcnow()
    [change] = shop.run(first)
    assert change.commit is None and "pricing: 19\n" in shop.soul()
    shop.rate(3, first + timedelta(hours=1))
    assert shop.run(first + timedelta(days=1)) == []  # the ledger remembers the last change


def test_an_interrupted_price_change_is_finished_not_repeated(tmp_path: Path) -> None:
    shop = Shop(tmp_path)
    shop.rate(3, shop.start)
    now = utcnow()
    ledger = shop.site.agent(AGENT) / "pricing.jsonl"
    # A pass killed right after writing its ledger line: no SOUL.md edit, no commit.
    line = {
        "id": "price-1-abc",
        "skill": SKILL,
        "priceOld": "20",
        "priceNew": "19",
        "reason": "3 of 3 ratings from 2 buyers said overpriced",
        "createdAt": iso_ms(now),
    }
    ledger.write_text(json.dumps(line) + "\n")
    assert shop.run(now) == []
    assert "pricing: 19\n" in shop.soul()
    _assert_one_price_commit(shop)


def test_an_interrupted_price_change_is_finished_by_the_next_pass_without_a_rating(
    tmp_path: Path,
) -> None:
    """A kill between the price change's files and its commit: the daemon's next full pass
    commits it, even when no buyer rates that skill again."""
    shop = Shop(tmp_path)
    shop.rate(3, shop.start)
    now = utcnow()
    ledger = shop.site.agent(AGENT) / "pricing.jsonl"
    line = {
        "id": "price-1-abc",
        "skill": SKILL,
        "priceOld": "20",
        "priceNew": "19",
        "reason": "3 of 3 ratings from 2 buyers said overpriced",
        "createdAt": iso_ms(now),
    }
    ledger.write_text(json.dumps(line) + "\n")
    shop.site.reconcile()
    assert "pricing: 19\n" in shop.soul()
    _assert_one_price_commit(shop)


def _assert_one_price_commit(shop: Shop) -> None:
    assert shop.price_commits() == [
        "pricing(heavylift-chengwen/claude-code-run): 20 → 19"
        " (3 of 3 ratings from 2 buyers said overpriced)"
    ]
    assert shop.site.git("status", "--porcelain").strip() == ""


# --- sync command -----------------------------------------------------------------------------


def test_sync_command_runs_after_the_commit(tmp_path: Path) -> None:
    code = (
        "import os, pathlib; pathlib.Path('synced.txt').write_text("
        "os.environ['FEEDBACKD_SKILL'] + ' ' + os.environ['FEEDBACKD_PRICE_NEW'])"
    )
    shop = Shop(tmp_path, f"pricing:\n  sync_command: {script(code)}\n")
    shop.rate(3, shop.start)
    shop.run(utcnow())
    assert (shop.site.root / "synced.txt").read_text() == f"{SKILL} 19"
    assert publish_problems(shop.site.root / ".feedbackd") == []


def test_sync_failure_is_shown_then_cleared_by_a_success(tmp_path: Path) -> None:
    failing = script("import sys; print('registry said no', file=sys.stderr); sys.exit(3)")
    shop = Shop(tmp_path, f"pricing:\n  sync_command: {failing}\n")
    shop.rate(3, shop.start)
    [change] = shop.run(utcnow())
    assert change.commit is not None  # the price change stands
    state = shop.site.root / ".feedbackd"
    [problem] = publish_problems(state)
    assert "exit status 3" in problem and "registry said no" in problem
    saved = json.loads((state / "problems-sync.json").read_text())
    assert saved["reason"] == "exit status 3" and saved["skill"] == SKILL

    shop.site.configure(f"pricing:\n  sync_command: {script('pass')}\n")
    shop.rate(3, shop.start + timedelta(minutes=30), skill="data-cleanup")
    assert len(shop.run(utcnow(), skill="data-cleanup")) == 1
    assert publish_problems(state) == []


def test_sync_time_out_stops_the_command(tmp_path: Path) -> None:
    slow = script("import time; time.sleep(30)")
    shop = Shop(tmp_path, f"pricing:\n  sync_command: {slow}\n  sync_timeout_s: 0.3\n")
    shop.rate(3, shop.start)
    started = time.monotonic()
    assert len(shop.run(utcnow())) == 1
    assert time.monotonic() - started < 10
    assert "timed out after 0.3s" in publish_problems(shop.site.root / ".feedbackd")[0]
    assert "pricing: 19\n" in shop.soul()


def test_a_missing_sync_program_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    shop = Shop(tmp_path, 'pricing:\n  sync_command: ["no-such-program-here"]\n')
    shop.rate(3, shop.start)
    assert len(shop.run(utcnow())) == 1
    assert "cannot start" in publish_problems(shop.site.root / ".feedbackd")[0]


# --- lessons and the optimizer command --------------------------------------------------------


def test_lessons_are_deduplicated_and_committed_with_a_memory(tmp_path: Path) -> None:
    shop = Shop(tmp_path)
    bad = {"rating": 1, "result_quality": "failed", "cost_value_ratio": "fair"}
    shop.rate(2, shop.start, quality_details="Output was truncated", **bad)
    shop.rate(1, shop.start + timedelta(minutes=5), quality_details="output was truncated.", **bad)
    shop.rate(1, shop.start + timedelta(minutes=9), quality_details="Tests were skipped", **bad)

    [change] = shop.run(utcnow())

    lessons = shop.site.agent(AGENT) / "prompt/skills/claude-code-run.md"
    assert lessons.read_text() == (
        "## Lessons from recent ratings\n- Tests were skipped (1×)\n- output was truncated. (3×)\n"
    )
    assert change.kind == "optimize" and change.commit is not None
    assert shop.site.trailers()["Feedback-Event"] == ["optimize"]
    [memory] = [json.loads(x) for x in _lines(shop.site.agent(AGENT) / "memory/patterns.jsonl")]
    assert memory["importance"] == 0.85
    assert memory["content"].startswith(f"Skill {SKILL} adjusted: 2 lessons in ")
    assert memory["content"].endswith(
        "because average rating 1.0 ≤ 2 over 4 ratings in the last 7d; "
        "4 of 4 results in the last 7d were poor or failed"
    )
    assert shop.soul() == SOUL  # no overpriced ratings: the price stays
    # The commit says why, as the memory does: `git log` is the audit trail.
    body = shop.site.git("log", "-1", "--format=%b").splitlines()
    assert body[:4] == [
        "- why: average rating 1.0 ≤ 2 over 4 ratings in the last 7d; "
        "4 of 4 results in the last 7d were poor or failed",
        "- lessons: _data/agents/heavylift-chengwen/prompt/skills/claude-code-run.md",
        '- "Tests were skipped" (1×)',
        '- "output was truncated." (3×)',
    ]
    assert (
        shop.site.git("log", "-1", "--format=%s").strip().endswith("2 lessons from 4 low ratings")
    )


def test_one_low_rating_is_named_in_the_singular(tmp_path: Path) -> None:
    shop = Shop(tmp_path)
    bad = {"rating": 1, "result_quality": "failed", "cost_value_ratio": "fair"}
    shop.rate(1, shop.start, quality_details="Output was truncated", **bad)
    shop.run(utcnow())
    subject = shop.site.git("log", "-1", "--format=%s").strip()
    assert subject.endswith("): 1 lesson from 1 low rating")


def optimizer_shop(tmp_path: Path, code: str, timeout: float = 10) -> Shop:
    config = f"optimizer:\n  command: {script(code)}\n  timeout_s: {timeout}\n"
    shop = Shop(tmp_path, config)
    shop.rate(
        3,
        shop.start,
        rating=2,
        result_quality="poor",
        cost_value_ratio="fair",
        quality_details="Forgot the tests",
    )
    return shop


def test_a_good_optimizer_answer_replaces_the_description(tmp_path: Path) -> None:
    code = (
        "import json, sys; ctx = json.load(sys.stdin); "
        "assert ctx['skill'] == 'claude-code-run' and ctx['lessons'][0]['count'] == 3; "
        "print(json.dumps({'description': 'Runs a coding task and its tests, then returns the "
        "diff.', 'reason': 'buyers said the tests were forgotten'}))"
    )
    shop = optimizer_shop(tmp_path, code)
    changes = shop.run(utcnow())
    assert [c.details["what"] for c in changes] == ["lessons", "description"]
    assert shop.soul() == SOUL.replace(
        "Runs a coding task in an isolated workspace.",
        "Runs a coding task and its tests, then returns the diff.",
    )
    assert shop.site.git("log", "-1", "--format=%s").strip() == (
        "optimize(heavylift-chengwen/claude-code-run): new description "
        "(buyers said the tests were forgotten)"
    )
    assert shop.site.git("log", "-1", "--format=%b").splitlines()[:2] == [
        "- why: buyers said the tests were forgotten",
        '- description: "Runs a coding task in an isolated workspace." → "Runs a coding task and'
        ' its tests, then returns the diff."',
    ]
    assert shop.site.git("status", "--porcelain").strip() == ""


@pytest.mark.parametrize(
    ("code", "timeout"),
    [
        ("print('certainly! here is a better description')", 10),
        ("import json; print(json.dumps({'reason': 'no description'}))", 10),
        ("import json; print(json.dumps({'description': '## Heading', 'reason': 'x'}))", 10),
        ("import sys; sys.exit(4)", 10),
        ("import time; time.sleep(30)", 0.3),
    ],
    ids=["not-json", "no-description", "unusable-description", "non-zero-exit", "slow"],
)
def test_a_bad_or_slow_optimizer_answer_changes_nothing(
    tmp_path: Path, code: str, timeout: float
) -> None:
    shop = optimizer_shop(tmp_path, code, timeout)
    changes = shop.run(utcnow())
    assert [c.details["what"] for c in changes] == ["lessons"]
    assert shop.soul() == SOUL


# --- dry run and the command line -------------------------------------------------------------


def test_dry_run_writes_and_commits_nothing(tmp_path: Path) -> None:
    marker = script("open('ran', 'w')")
    shop = Shop(tmp_path, f"pricing:\n  sync_command: {marker}\n")
    shop.rate(3, shop.start, result_quality="failed", quality_details="Crashed")
    count = shop.site.commit_count()

    result = shop.site.cli("optimize", AGENT, "--dry-run", "--json")

    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["dry_run"] is True
    assert [(c["kind"], c["commit"]) for c in answer["changes"]] == [
        ("pricing", None),
        ("optimize", None),
    ]
    assert shop.site.commit_count() == count and shop.soul() == SOUL
    assert not (shop.site.agent(AGENT) / "prompt").exists()
    assert not (shop.site.agent(AGENT) / "memory").exists()
    assert not (shop.site.root / "ran").exists()
    assert shop.site.git("status", "--porcelain").strip() == ""

    human = shop.site.cli("optimize", "--dry-run")
    assert "would pricing(heavylift-chengwen/claude-code-run): 20 → 19" in human.stdout

    done = shop.site.cli("optimize", "--json")
    assert done.returncode == 0, done.stderr
    assert all(c["commit"] for c in json.loads(done.stdout)["changes"])
    assert shop.site.commit_count() == count + 2
    again = shop.site.cli("optimize")
    assert again.stdout.strip() == "nothing to change"


def test_optimize_refuses_an_unknown_agent(tmp_path: Path) -> None:
    shop = Shop(tmp_path)
    missing = shop.site.cli("optimize", "nobody")
    assert missing.returncode == 1 and "error: not_found:" in missing.stderr
    bad = shop.site.cli("optimize", "../etc", "--json")
    assert bad.returncode == 1 and json.loads(bad.stderr)["error"] == "invalid_id"


def test_a_broken_soul_leaves_prices_alone_but_lessons_still_come(tmp_path: Path) -> None:
    shop = Shop(tmp_path)
    shop.soul_path.write_text(SOUL + "\n## Claude Code Run\n\npricing: 3\n")  # duplicate skill
    shop.rate(3, shop.start, result_quality="failed", quality_details="Crashed")
    changes = shop.run(utcnow())
    assert [c.kind for c in changes] == ["optimize"]


def test_price_history_reads_git_and_the_ledger(tmp_path: Path) -> None:
    shop = Shop(tmp_path)
    shop.rate(3, shop.start)
    shop.run(utcnow())
    runtime = shop.site.runtime()
    with open_repo(runtime) as repo:
        history = SkillPass(runtime, repo, AGENT, SKILL, utcnow(), False).price_history()
    assert history.base == 20 and history.last_change is not None


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.strip()]


def test_rules_hook_gives_events_for_the_ratings_flow(tmp_path: Path) -> None:
    shop = Shop(tmp_path)
    shop.rate(3, shop.start)
    runtime = shop.site.runtime()
    with open_repo(runtime) as repo:
        [event] = rules_hook(runtime, repo, AGENT, SKILL, utcnow())
    assert (event.event, event.skill, event.agent) == ("pricing", SKILL, AGENT)
    assert event.commit == shop.site.git("rev-parse", "HEAD").strip()
    with open_repo(runtime) as repo:
        assert rules_hook(runtime, repo, AGENT, "no..skill", utcnow()) == []


def test_damaged_ledger_lines_are_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    shop = Shop(tmp_path, "git:\n  enabled: false\n")
    ledger = shop.site.agent(AGENT) / "pricing.jsonl"
    good = {
        "id": "price-1-abc",
        "skill": SKILL,
        "priceOld": "40",
        "priceNew": "20",
        "reason": "by hand",
        "createdAt": "2020-01-01T00:00:00.000Z",
    }
    ledger.write_text('{"half": \n[1, 2]\n{"id": "x", "createdAt": "soon"}\n' + json.dumps(good))
    runtime = shop.site.runtime()
    logger = logging.getLogger("feedbackd")  # the CLI may have stopped it propagating
    logger.addHandler(caplog.handler)
    try:
        history = SkillPass(runtime, None, AGENT, SKILL, utcnow(), False).price_history()
    finally:
        logger.removeHandler(caplog.handler)
    assert history.base == 40
    skipped = {r.getMessage() for r in caplog.records if "not a price change record" in r.message}
    assert len(skipped) == 3  # one warning per bad line, naming it


def test_a_huge_optimizer_answer_changes_nothing(tmp_path: Path) -> None:
    code = "import json; print(json.dumps({'description': 'x' * 100000, 'reason': 'long'}))"
    shop = optimizer_shop(tmp_path, code)
    assert [c.details["what"] for c in shop.run(utcnow())] == ["lessons"]
    assert shop.soul() == SOUL


def test_an_unreadable_sync_problem_file_is_itself_a_problem(tmp_path: Path) -> None:
    (tmp_path / "problems-sync.json").write_text("{not json")
    assert "unreadable" in publish_problems(tmp_path)[0]
    assert publish_problems(tmp_path / "missing") == []
