"""`forget --reason` is kept where a reviewer reads history: in the forget commit's body, as well
as in forgotten.jsonl."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.workspace_kit import Site, draft


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "site")
    site.write("w", "qi-1.json", draft({"t": "new", "u": "two"}, {"t": "old", "u": "one"}))
    site.move("w", "qi-1.json", "approved")
    site.reconcile()
    return site


def body(site: Site) -> list[str]:
    return site.git("log", "-1", "--format=%b").splitlines()


def test_the_reason_of_one_forgotten_lesson_is_in_its_commit(site: Site) -> None:
    slip = next(e for e in site.feedback("w") if e["field"] == "u")
    reason = "a slip of the curator\nFeedback-Event: approve"
    assert site.cli("forget", "w", slip["id"], "--reason", reason).returncode == 0
    lines = body(site)
    assert '- reason: "a slip of the curator⏎Feedback-Event: approve"' in lines
    assert '- u: "one" → "two"' in lines
    assert site.trailers()["Feedback-Event"] == ["forget"]  # the reason forges no trailer


def test_the_reason_of_forget_all_is_in_its_commit(site: Site) -> None:
    assert site.cli("forget", "w", "--all", "--reason", "a new editorial line").returncode == 0
    assert body(site)[0] == '- reason: "a new editorial line"'


def test_no_reason_no_line(site: Site) -> None:
    slip = site.feedback("w")[0]
    assert site.cli("forget", "w", slip["id"]).returncode == 0
    assert not any(line.startswith("- reason:") for line in body(site))


def test_forgetting_a_forgotten_entry_says_when_and_by_whom(site: Site) -> None:
    slip = site.feedback("w")[0]
    ada = "Ada Lovelace <ada@example.org>"
    done = site.cli("forget", "w", slip["id"], "--reason", "a slip", "--curator", ada)
    assert done.returncode == 0, done.stderr
    commits = site.commit_count()
    again = site.cli("forget", "w", slip["id"])
    assert again.returncode == 1 and site.commit_count() == commits
    said = again.stderr
    assert said.startswith(f"error: not_found: {slip['id']} was already forgotten on "), said
    assert " UTC by Ada Lovelace <ada@example.org> (a slip)" in said, said
    assert "no entry" not in said
