"""The tables for people fit an 80-column terminal without cutting a name or a number: words wrap
between each other, and the columns a reader misses least are left out first."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest

from feedbackd.cli.output import FLEX, NAME, TEXT, Column, fitted_table
from tests.workspace_kit import Site, draft

FIELD = "seo.metaDescription"
LONG = "Generics catch broken call sites at compile time. Three patterns you can use today."


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Site:
    monkeypatch.setenv("COLUMNS", "80")
    site = Site(tmp_path / "ws")
    old = {"title": "Why TypeScript Generics Matter", "seo": {"metaDescription": "Learn more."}}
    new = {"title": "How TypeScript Generics Save You", "seo": {"metaDescription": LONG}}
    site.write("content-writer", "qi-101.json", draft(old))
    site.write("content-writer", "qi-102.json", draft({"title": "Ten tips"}))
    site.reconcile()
    site.write("content-writer", "qi-101.json", draft(new))
    assert site.cli("approve", "content-writer", "qi-101").returncode == 0
    note = "Too generic: name one real migration, what it cost and what it saved"
    assert site.cli("reject", "content-writer", "qi-102", "--notes", note).returncode == 0
    return site


def rate(site: Site, buyer: str, details: str) -> None:
    rating = {
        "transaction_id": str(uuid.uuid4()), "provider_agent": "heavylift-chengwen",
        "skill_id": "claude-code-run", "rating": 4, "result_quality": "acceptable",
        "would_reuse": True, "cost_value_ratio": "overpriced", "quality_details": details,
    }  # fmt: skip
    done = site.cli("feedback", "submit", "--as", buyer, "--json", json.dumps(rating))
    assert done.returncode == 0, done.stderr


def table_lines(shown: str) -> list[str]:
    return [line for line in shown.splitlines() if re.search("[│┃]", line)]


def whole_on_a_line(shown: str, *names: str) -> list[str]:
    """The names that no line of `shown` holds whole."""
    return [name for name in names if not any(name in line for line in shown.splitlines())]


def test_recent_shows_every_field_name_whole(site: Site) -> None:
    shown = site.cli("recent", "content-writer").stdout
    assert all(len(line) <= 80 for line in shown.splitlines()), shown
    assert "…" not in shown
    assert whole_on_a_line(shown, FIELD, "qi-101", "qi-102", "correction", "rejection") == []
    assert "Generics catch broken call" in shown.replace("│", "").replace("  ", " ")


def test_recent_has_room_for_the_time_in_a_wider_terminal(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    header = table_lines(site.cli("recent", "content-writer").stdout)[0]
    assert [cell.strip() for cell in header.strip("┃ ").split("┃")] == [
        "when", "type", "item", "field", "change",
    ]  # fmt: skip


def test_feedback_list_cuts_no_cell(site: Site) -> None:
    rate(site, "genesis-bot", "Code executed correctly, output matched expectations")
    rate(site, "quill-reviewer-eu", "Hit the 10 minute limit and returned a partial diff")
    shown = site.cli("feedback", "list", "--skill", "claude-code-run").stdout
    assert "…" not in shown
    assert all(len(line) <= 80 for line in table_lines(shown)), shown
    assert whole_on_a_line(shown, "genesis-bot", "quill-reviewer-eu", "★★★★") == []
    header = [cell.strip() for cell in table_lines(shown)[0].split("┃")]
    assert header[1:3] == ["from", "rating"] and header[-1] == "details"
    assert "Ratings of heavylift-chengwen/claude-code-run" in shown  # one provider: the title


def test_log_breaks_no_word(site: Site) -> None:
    rate(site, "genesis-bot", "fine")
    shown = site.cli("log").stdout
    assert "…" not in shown.replace('…"', "")  # a rejection's note is cut on purpose
    assert all(len(line) <= 80 for line in shown.splitlines()), shown
    words = {word for line in shown.splitlines() for word in re.split(r"[\s│┃]+", line)}
    for name in ("content-writer", "heavylift-chengwen", "claude-code-run", f"{FIELD})"):
        assert name in words, (name, shown)


def test_why_shows_each_item_field_and_commit_whole(site: Site) -> None:
    shown = site.cli("why", "content-writer").stdout
    assert all(len(line) <= 80 for line in shown.splitlines()), shown
    commit = site.git("log", "-1", "--format=%H", "--grep=^Feedback-Event: approve").strip()
    assert whole_on_a_line(shown, "qi-101", FIELD, commit[:12]) == []


def test_a_table_too_narrow_for_all_leaves_out_the_columns_missed_least() -> None:
    columns = [
        Column("a", NAME), Column("b", TEXT, drop=2), Column("c", TEXT, drop=1),
        Column("d", FLEX),
    ]  # fmt: skip
    rows = [["an-id-of-twenty-char", "some words here", "other words", "a long summary " * 4]]

    def headers(width: int) -> list[str]:
        return [str(column.header) for column in fitted_table(columns, rows, width).columns]

    assert headers(200) == headers(67) == ["a", "b", "c", "d"]  # b and c wrapped at 67
    assert headers(66) == headers(59) == ["a", "b", "d"]
    assert headers(58) == ["a", "d"]
    assert headers(10) == ["a", "d"]  # nothing left to leave out: squeezed, never cut


def test_a_fitted_column_wraps_text_between_words() -> None:
    columns = [Column("when", TEXT), Column("what", FLEX)]
    rows = [["2026-12-05 07:30", "one two three four five six seven eight nine ten"]]
    table = fitted_table(columns, rows, 41)
    assert [column.width for column in table.columns] == [10, 24]
