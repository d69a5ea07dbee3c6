"""`--at` names a commit the same way for every command that takes it (`prompt`, `export`, the
export route): a revision, an ISO time, or a date, which means the end of that day (UTC)."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import pytest

from tests.web_kit import serving
from tests.workspace_kit import Site, draft


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "ws")
    site.write("w", "qi-1.json", draft({"t": "first"}, {"t": "drafted"}), folder="approved")
    site.reconcile()
    return site


def day_of_last_commit(site: Site) -> date:
    """The UTC day of HEAD's commit: every commit of the test was made on it or just before."""
    seconds = int(site.git("log", "-1", "--format=%ct").strip())
    return date(1970, 1, 1) + timedelta(days=seconds // 86400)


def test_prompt_at_the_day_of_the_commits_is_the_snippet_of_that_day(site: Site) -> None:
    today = day_of_last_commit(site).isoformat()
    done = site.cli("prompt", "w", "--at", today)
    assert done.returncode == 0, done.stderr
    assert done.stdout == site.cli("prompt", "w").stdout and "first" in done.stdout


def test_the_day_before_the_first_commit_is_before_any_commit(site: Site) -> None:
    first = site.git("log", "--reverse", "--format=%ct").split()[0]
    day_before = date(1970, 1, 1) + timedelta(days=int(first) // 86400 - 1)
    for at in (day_before.isoformat(), "1970-01-01", "1900-01-01"):
        done = site.cli("prompt", "w", "--at", at)
        assert done.returncode == 1 and done.stderr.startswith("error: not_found: no commit"), at


def test_a_time_of_day_is_taken_to_the_second(site: Site) -> None:
    """Only a date alone stands for its whole day; a time is that moment."""
    first = int(site.git("log", "--reverse", "--format=%ct").split()[0])
    start_of_day = date(1970, 1, 1) + timedelta(days=first // 86400)
    done = site.cli("prompt", "w", "--at", f"{start_of_day.isoformat()}T00:00:00Z")
    if first % 86400:  # not made at midnight itself
        assert done.returncode == 1 and "no commit was made by" in done.stderr


def test_export_at_the_day_of_the_commits_exports_that_day(site: Site) -> None:
    today = day_of_last_commit(site).isoformat()
    now = site.cli("export", "w", "--format", "openai-sft")
    then = site.cli("export", "w", "--format", "openai-sft", "--at", today)
    assert then.returncode == 0, then.stderr
    assert then.stdout == now.stdout and "first" in now.stdout


def test_the_export_route_reads_a_date_as_the_command_does(site: Site) -> None:
    today = day_of_last_commit(site).isoformat()
    with serving(site.root) as client:
        now = client.get("/api/agents/w/export?format=openai-sft")
        then = client.get(f"/api/agents/w/export?format=openai-sft&at={today}")
    assert then.status == 200, then.text
    assert then.body == now.body and b"first" in now.body
