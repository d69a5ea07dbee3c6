"""`feedbackd stats`: is the agent learning? Decisions made through the real pipeline over
several weeks (the clock moved: the pass's own time and git's commit dates), a reverted decision
and a forgotten lesson left out, the periods and their sums, the kept tables and draft times
that keep a large history fast, and the counting itself (core/curation/learningcurve.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from feedbackd.core.curation import learningcurve
from feedbackd.core.curation.decisions import DecisionRecord, State
from feedbackd.core.curation.forgetting import forgotten_identities
from feedbackd.core.errors import UsageError
from feedbackd.core.timeutil import iso_ms, unix_ms
from tests.learning_kit import AGENT, Clock, Curator, doc, monday_weeks_ago
from tests.workspace_kit import Site

HOUR = 3600
HOUR_D = timedelta(hours=1)


def stats_json(site: Site, *args: str) -> dict[str, Any]:
    done = site.cli("stats", *args, "--json")
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def row(**values: Any) -> dict[str, Any]:
    """A period's (or the total's) sums: those not given are 0."""
    return {key: values.get(key, 0) for key in learningcurve.STAT_KEYS}


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return Clock(monkeypatch)


@pytest.fixture
def weeks(tmp_path: Path, clock: Clock) -> tuple[Site, datetime]:
    """Ten weeks ago a curator decided three drafts; nothing the week after; two weeks later
    three approvals, one of them reverted and decided again, and one lesson forgotten."""
    site = Site(tmp_path / "ws")
    curator, start = Curator(site, clock), monday_weeks_ago(10)
    monday = start + timedelta(hours=9)
    curator.drafts(monday, "q1", "q2", "q3", "q4")
    curator.approve(monday + timedelta(hours=25), "q1", title="Sharp q1", excerpt="Why q1.")
    curator.approve(monday + timedelta(hours=26), "q2")
    curator.reject(monday + timedelta(hours=48), "q3")
    later = monday + timedelta(weeks=2)
    curator.drafts(later, "q5", "q6")
    curator.approve(later + timedelta(hours=1), "q4")
    curator.approve(later + timedelta(hours=2), "q5", title="Sharp q5")
    curator.approve(later + timedelta(hours=3), "q6")
    clock.at(later + timedelta(hours=4))  # the curator undoes q6's approval
    [approval] = site.git("log", "--format=%H", "--grep=^Feedback-Item: q6$").split()
    site.git("revert", "--no-edit", approval)
    site.reconcile()
    curator.approve(later + timedelta(hours=5), "q6", excerpt="What q6 does.")
    [slip] = [e for e in site.feedback(AGENT) if e.get("corrected") == "Sharp q5"]
    assert site.cli("forget", AGENT, slip["id"], "--reason", "a slip").returncode == 0
    return site, start


def test_weeks_of_decisions_counted_once_without_the_reverted_and_the_forgotten(
    weeks: tuple[Site, datetime],
) -> None:
    site, start = weeks
    report = stats_json(site, AGENT)
    assert (report["agent"], report["by"]) == (AGENT, "week")
    # Every week from the first decision's to this one, the empty ones too.
    starts = [period["start"] for period in report["periods"]]
    assert starts == [(start + timedelta(weeks=n)).date().isoformat() for n in range(11)]
    first, empty, third = report["periods"][:3]
    assert first == {"start": starts[0]} | row(
        decided=3, approved=2, approved_unedited=1, rejected=1, corrections=2,
        unedited_rate=0.5, corrections_per_approval=1.0, median_decision_s=26 * HOUR,
    )  # fmt: skip
    assert empty == {"start": starts[1]} | row(
        unedited_rate=None, corrections_per_approval=None, median_decision_s=None
    )
    # q4 waited two weeks and an hour; q5's one correction was forgotten: unedited now; q6's
    # reverted approval is gone, and its second one waited from its draft's first commit.
    assert third == {"start": starts[2]} | row(
        decided=3, approved=3, approved_unedited=2, corrections=1,
        unedited_rate=0.6667, corrections_per_approval=0.3333, median_decision_s=5 * HOUR,
    )  # fmt: skip
    assert all(period["decided"] == 0 for period in report["periods"][3:])
    assert report["total"] == row(
        decided=6, approved=5, approved_unedited=3, rejected=1, corrections=3,
        unedited_rate=0.6, corrections_per_approval=0.6, median_decision_s=int(25.5 * HOUR),
    )  # fmt: skip
    assert report["fields"] == {"excerpt": 2, "title": 1}
    assert list(report["fields"]) == ["excerpt", "title"]  # most corrected first


def test_by_day_and_month_and_since(weeks: tuple[Site, datetime]) -> None:
    site, start = weeks
    by_day = stats_json(site, AGENT, "--by", "day", "--since", start.date().isoformat())
    days = {p["start"]: p["decided"] for p in by_day["periods"] if p["decided"]}
    monday = start.date()
    assert days == {
        (monday + timedelta(days=1)).isoformat(): 2,
        (monday + timedelta(days=2)).isoformat(): 1,
        (monday + timedelta(days=14)).isoformat(): 3,
    }
    by_month = stats_json(site, "--by", "month")
    assert by_month["agent"] is None
    assert all(p["start"].endswith("-01") for p in by_month["periods"])
    assert sum(p["decided"] for p in by_month["periods"]) == 6
    since = stats_json(site, AGENT, "--since", (start + timedelta(days=7)).isoformat())
    assert since["periods"][0]["start"] == (monday + timedelta(days=7)).isoformat()
    assert since["total"]["decided"] == 3
    assert since["fields"] == {"excerpt": 1}
    recent = stats_json(site, AGENT, "--since", "2d")
    assert len(recent["periods"]) in (1, 2)  # two days back may lie in last week
    assert recent["total"]["decided"] == 0 and recent["total"]["unedited_rate"] is None


def test_the_table_for_people(weeks: tuple[Site, datetime]) -> None:
    site, start = weeks
    done = site.cli("stats", AGENT)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].strip() == f"Is {AGENT} learning? (by week)"
    week_one = next(line for line in lines if line.lstrip().startswith(start.date().isoformat()))
    assert week_one.split()[1:] == ["3", "2", "1", "2", "50%", "1.00", "1d", "2h"]
    total = next(line for line in lines if line.lstrip().startswith("total"))
    assert total.split()[1:] == ["6", "5", "1", "3", "60%", "0.60", "1d", "1h"]
    assert "most corrected fields: excerpt 2, title 1" in done.stdout


def test_a_reset_drops_decisions_whatever_was_kept(weeks: tuple[Site, datetime]) -> None:
    site, _ = weeks
    assert stats_json(site, AGENT)["total"]["decided"] == 6  # counted, and kept
    kept = site.root / ".feedbackd" / "learning"
    assert (kept / "tables" / f"{AGENT}.json").is_file() and (kept / "drafts.json").is_file()
    assert stats_json(site, AGENT)["total"]["decided"] == 6  # read back
    before_later = site.git("log", "--format=%H", "--grep=^Feedback-Item: q4$").split()[0]
    site.git("reset", "-q", "--hard", f"{before_later}~1")
    report = stats_json(site, AGENT)
    assert report["total"]["decided"] == 3
    assert report["total"]["median_decision_s"] == 26 * HOUR


def test_kept_draft_times_follow_a_reset_and_a_new_agent(tmp_path: Path, clock: Clock) -> None:
    """The draft times kept with an older HEAD lose the commits a reset dropped, and gain the
    history of an agent folder that appeared since."""
    site = Site(tmp_path / "ws")
    curator = Curator(site, clock)
    monday = monday_weeks_ago(3) + timedelta(hours=9)
    curator.drafts(monday, "q1")
    assert stats_json(site, AGENT)["total"]["decided"] == 0
    kept = json.loads((site.root / ".feedbackd" / "learning" / "drafts.json").read_text())
    assert kept["head"] == site.git("rev-parse", "HEAD").strip()  # the draft times, kept
    site.git("reset", "-q", "--hard", "HEAD~1")  # that draft commit is dropped
    clock.at(monday + timedelta(days=1))  # the draft again, committed by hand
    site.write(AGENT, "q1.json", doc("q1"))
    site.git("add", "_data/agents/writer/queue/q1.json")
    site.git("commit", "-q", "-m", "q1 once more")
    curator.approve(monday + timedelta(days=1, hours=2), "q1")
    clock.at(monday + timedelta(days=2))
    site.write("editor", "e1.json", doc("e1"))
    site.reconcile()
    clock.at(monday + timedelta(days=2, hours=5))
    site.move("editor", "e1.json", "approved")
    site.reconcile()
    assert stats_json(site, AGENT)["total"]["median_decision_s"] == 2 * HOUR  # not 26 h
    assert stats_json(site, "editor")["total"]["median_decision_s"] == 5 * HOUR


def test_an_agent_without_decisions_and_a_workspace_without_agents(tmp_path: Path) -> None:
    site = Site(tmp_path / "ws")
    assert stats_json(site) == {
        "agent": None, "by": "week", "periods": [], "fields": {},
        "total": row(unedited_rate=None, corrections_per_approval=None, median_decision_s=None),
    }  # fmt: skip
    site.write(AGENT, "q1.json", doc("q1"))
    site.reconcile()
    report = stats_json(site, AGENT, "--since", "1w")
    assert report["periods"] == []  # periods start at the first decision, and there is none
    assert "No decisions of writer yet." in site.cli("stats", AGENT, "--since", "1w").stdout


def test_an_early_since_counts_from_the_first_decision(weeks: tuple[Site, datetime]) -> None:
    site, start = weeks
    by_day = stats_json(site, AGENT, "--by", "day", "--since", "0001-01-01")
    assert by_day["periods"][0]["start"] == (start.date() + timedelta(days=1)).isoformat()
    assert by_day["total"]["decided"] == 6
    assert len(by_day["periods"]) <= 11 * 7  # ten weeks back, this week included


def test_more_periods_than_the_cap_are_a_usage_error(tmp_path: Path, clock: Clock) -> None:
    site = Site(tmp_path / "ws")
    curator = Curator(site, clock)
    long_ago = datetime.now(UTC).replace(microsecond=0) - timedelta(days=11 * 366)
    curator.drafts(long_ago, "q1")
    curator.approve(long_ago + HOUR_D, "q1")
    daily = site.cli("stats", AGENT, "--by", "day")
    assert daily.returncode == 2
    assert "at most 3,660 are counted" in daily.stderr and "week or month" in daily.stderr
    assert stats_json(site, AGENT, "--by", "month")["total"]["decided"] == 1


def test_bad_input_says_what_and_how(tmp_path: Path) -> None:
    site = Site(tmp_path / "ws")
    site.write(AGENT, "q1.json", doc("q1"))
    site.reconcile()
    unknown = site.cli("stats", "writter")
    assert unknown.returncode == 1
    assert unknown.stderr.startswith("error: not_found: no agent writter")
    assert "did you mean writer?" in unknown.stderr
    period = site.cli("stats", AGENT, "--by", "year", "--json")
    assert period.returncode == 2
    refusal = json.loads(period.stderr)
    assert refusal["error"] == "usage" and "day, week or month" in refusal["message"]
    since = site.cli("stats", "--since", "last tuesday")
    assert since.returncode == 2
    assert "30s, 15m, 12h, 7d, 4w" in since.stderr and "2026-11-30" in since.stderr
    assert site.cli("stats", "../etc").returncode == 1


# --- the counting, pure --------------------------------------------------------------------------
def record(item: str, state: State, at: datetime, **extra: Any) -> DecisionRecord:
    ids = f"dc-{unix_ms(at)}-{item}{state[0]}"
    return DecisionRecord(id=ids, item=item, state=state, at=iso_ms(at), **extra)


T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)  # a Monday


def seconds(moment: datetime) -> int:
    return unix_ms(moment) // 1000


def test_periods_start_on_monday_and_on_the_first_of_the_month() -> None:
    sunday_night = datetime(2026, 3, 8, 23, 59, tzinfo=UTC)
    assert learningcurve.period_start(sunday_night, "week") == datetime(2026, 3, 2, tzinfo=UTC)
    assert learningcurve.period_start(sunday_night, "day") == datetime(2026, 3, 8, tzinfo=UTC)
    december = learningcurve.period_start(datetime(2026, 12, 31, 23, tzinfo=UTC), "month")
    assert learningcurve.next_start(december, "month") == datetime(2027, 1, 1, tzinfo=UTC)
    with pytest.raises(UsageError, match="day, week or month"):
        learningcurve.check_period("fortnight")


def test_a_requeued_draft_waits_from_its_new_commit_and_a_line_counts_once() -> None:
    first = record("a", "approved", T0 + timedelta(hours=2))
    records = [
        first,
        first,  # the same line twice (a merge): one decision
        record("a", "queued", T0 + timedelta(hours=3)),
        record("a", "rejected", T0 + timedelta(hours=7)),
        record("b", "approved", T0 + timedelta(hours=1)),  # no draft commit before it
    ]
    drafted = {
        "a": [seconds(T0), seconds(T0 + timedelta(hours=4))],
        "b": [seconds(T0 + 2 * HOUR_D)],
    }
    table = learningcurve.decision_table(records, drafted=drafted)
    assert table.at == sorted(table.at) and len(table.at) == 3
    assert table.waited == [None, 2 * HOUR, 3 * HOUR]  # b, then a twice
    assert learningcurve.DecisionTable.from_json(json.loads(json.dumps(table.to_json()))) == table
    assert learningcurve.DecisionTable.from_json({**table.to_json(), "version": 0}) is None


def test_forgotten_corrections_by_entry_and_by_a_repeated_lesson() -> None:
    forgotten = learningcurve.parse_forgotten(
        "\n".join(
            [
                json.dumps({"id": "fb-1", "type": "correction", "queueItemId": "a",
                            "field": "title", "corrected": "T"}),
                json.dumps({"id": "fb-9", "type": "correction", "queueItemId": "b",
                            "field": "excerpt", "corrected": "E"}),
                json.dumps({"id": "fb-7", "type": "rejection", "queueItemId": "c", "notes": "n"}),
                "not json",
            ]
        )
    )  # fmt: skip
    records = [
        record("a", "approved", T0, fields=["title", "body"], entries=["fb-1", "fb-2"]),
        # b's excerpt repeated a lesson forgotten since: no entry of its own to go by
        record("b", "approved", T0 + HOUR_D, fields=["excerpt", "title"], entries=["fb-3"]),
        record("c", "rejected", T0 + 2 * HOUR_D),  # its note forgotten: still a rejection
    ]
    table = learningcurve.decision_table(records, forgotten)
    assert table.corrections == [1, 1, 0]
    assert table.fields == ["body", "title"]
    stats = learningcurve.learning_stats([table], "week", T0 + 3 * HOUR_D)
    assert stats["total"] == row(
        decided=3, approved=2, rejected=1, corrections=2,
        unedited_rate=0.0, corrections_per_approval=1.0, median_decision_s=None,
    )  # fmt: skip


def test_many_agents_sum_up_period_by_period() -> None:
    one = learningcurve.decision_table([record("a", "approved", T0, fields=["title"])])
    two = learningcurve.decision_table(
        [record("b", "approved", T0 + timedelta(days=8)), record("c", "rejected", T0)]
    )
    stats = learningcurve.learning_stats([one, two], "week", T0 + timedelta(days=9))
    assert [(p["start"], p["decided"], p["approved_unedited"]) for p in stats["periods"]] == [
        ("2026-03-02", 2, 0),
        ("2026-03-09", 1, 1),
    ]
    since = learningcurve.learning_stats([one, two], "day", T0, since=T0 + timedelta(days=8))
    assert since["periods"][0]["start"] == "2026-03-10" and since["total"]["decided"] == 1


def test_periods_start_at_the_first_decision_and_are_capped() -> None:
    table = learningcurve.decision_table([record("a", "approved", T0)])
    early = learningcurve.learning_stats([table], "day", T0, since=datetime(1, 1, 1, tzinfo=UTC))
    assert [p["start"] for p in early["periods"]] == ["2026-03-02"]
    assert (
        learningcurve.learning_stats([learningcurve.DecisionTable()], "day", T0, since=T0)[
            "periods"
        ]
        == []
    )
    days = learningcurve.MAX_PERIODS
    assert (
        len(learningcurve.learning_stats([table], "day", T0 + timedelta(days=days - 1))["periods"])
        == days
    )
    with pytest.raises(UsageError, match="3,661 periods"):
        learningcurve.learning_stats([table], "day", T0 + timedelta(days=days))
    months = learningcurve.learning_stats([table], "month", T0 + timedelta(days=days))
    assert len(months["periods"]) == 121


def test_a_forgotten_text_holding_a_line_separator_is_still_forgotten() -> None:
    """forgotten.jsonl writes text as it is (ensure_ascii off): a U+2028 inside a corrected
    value is no end of line, for the stats as for the pipeline's own check."""
    entry = {"id": "fb-1", "type": "correction", "queueItemId": "a", "field": "title",
             "original": "Old", "corrected": "New\u2028line"}  # fmt: skip
    text = json.dumps(entry, ensure_ascii=False) + "\n"
    assert learningcurve.parse_forgotten(text).fields_by_entry == {"fb-1": "title"}
    assert len(forgotten_identities(text)) == 1


def test_one_decision_at_a_time_and_a_table_of_them_tally_alike() -> None:
    """An export counts its rows one by one, `stats` a table's columns at once: the same
    decisions make the same tally (a rejection's fields are not counted either way)."""
    decisions = [(True, ["title"], 5.0), (False, ["title"], None), (True, [], 2.0)]
    decisions += [(True, ["title", "body"], None), (False, [], 9.0)]
    one_by_one, table = learningcurve.Tally(), learningcurve.DecisionTable()
    for at, (approved, fields, waited) in enumerate(decisions):
        one_by_one.add(approved, fields, waited)
        table.append(at, approved, fields if approved else [], waited)
    at_once = learningcurve.Tally()
    at_once.add_rows(table, 0, len(decisions))
    assert one_by_one == at_once
    assert (at_once.decided, at_once.approved, at_once.rejected) == (5, 3, 2)
    assert (at_once.unedited, at_once.corrected, at_once.corrections) == (1, 2, 3)
    assert at_once.fields == {"title": 2, "body": 1} and at_once.waits == [5.0, 2.0, 9.0]
