"""A rating with several problems is refused naming all of them at once, wherever it comes from:
the command line, a file dropped in the rating inbox, or the HTTP API."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from feedbackd.core.errors import InvalidFeedback
from feedbackd.core.ratings.records import parse_rating, parse_rating_file
from tests.web_kit import serving
from tests.workspace_kit import Site

NOW = datetime(2026, 4, 8, 10, 0, tzinfo=UTC)
BAD = '{"transaction_id": "x", "rating": 9}'
# Every problem of BAD, each as its message names it.
PROBLEMS = (
    'transaction_id: "x" is not allowed',
    "rating: 9 is not allowed (an integer from 1 to 5)",
    "missing fields: provider_agent, skill_id, result_quality, would_reuse, cost_value_ratio",
    "requester_agent is missing: who rented the skill?",
)


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "site")


def test_every_problem_is_named_with_the_requester_missing_too() -> None:
    with pytest.raises(InvalidFeedback) as caught:
        parse_rating(BAD, requester=None, now=NOW)
    for problem in PROBLEMS:
        assert problem in caught.value.message
    assert "--as" in caught.value.hint and "submit --help" in caught.value.hint


def test_a_file_is_never_told_to_use_a_command_option() -> None:
    with pytest.raises(InvalidFeedback) as caught:
        parse_rating_file(BAD, requester=None, now=NOW)
    for problem in PROBLEMS:
        assert problem in caught.value.message
    assert "--as" not in caught.value.hint
    assert "requester_agent" in caught.value.hint and "agent_id" in caught.value.hint


def test_the_command_names_every_problem(site: Site) -> None:
    done = site.cli("feedback", "submit", "--json", BAD)
    assert done.returncode == 1
    assert done.stderr.startswith("error: invalid_feedback: ")
    for problem in PROBLEMS:
        assert problem in done.stderr
    assert "pass --as AGENT" in done.stderr


def test_the_inbox_error_file_names_every_problem_and_no_option(site: Site) -> None:
    site.configure("daemon:\n  settle_ms: 0\n")
    inbox = site.data / "inbox" / "ratings"
    (inbox / "bad.json").write_text(BAD)
    assert site.cli("run", "--once").returncode == 0
    explained = (inbox / "bad.json.error").read_text()
    for problem in PROBLEMS:
        assert problem in explained
    assert "--as" not in explained


def test_the_http_issues_list_every_problem(site: Site) -> None:
    with serving(site.root) as client:
        answer = client.post("/api/feedback", json.loads(BAD))
    assert answer.status == 400
    body = answer.json()
    assert body["error"] == "Validation failed"
    assert len(body["issues"]) == len(PROBLEMS)
    for issue, problem in zip(body["issues"], PROBLEMS, strict=True):
        assert issue.startswith(problem), (issue, problem)
