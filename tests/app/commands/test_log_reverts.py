"""A decision undone with `git revert` reads as undone in `log` and in the panel's history: the
decision is marked reverted, and the revert is a row of its own naming what it undid."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from feedbackd.core.commitmsg import LogEntry
from feedbackd.core.curation.reverts import RevertCommit, with_reverts
from tests.web_kit import Client
from tests.workspace_kit import Site, draft

AGENT = "w"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "ws")
    for name in ("d1", "d2"):
        site.write(AGENT, f"{name}.json", draft({"title": f"Draft {name}"}))
    site.reconcile()
    site.write(AGENT, "d1.json", draft({"title": "Better d1"}))
    site.move(AGENT, "d1.json", "approved")
    site.write(AGENT, "d2.json", draft({"title": "Draft d2"}, rejectionFeedback="Too vague"))
    site.move(AGENT, "d2.json", "rejected")
    site.reconcile()
    return site


def decision_of(site: Site, item: str) -> str:
    return site.git("log", "-1", "--format=%H", f"--grep=^Feedback-Item: {item}$").strip()


def git_revert(site: Site, commit: str) -> str:
    """The user's own `git revert`; the sha of the revert commit."""
    done = subprocess.run(
        ["git", "revert", "--no-edit", commit], cwd=site.root, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return site.git("rev-parse", "HEAD").strip()


def log_rows(site: Site, *args: str) -> list[dict[str, Any]]:
    done = site.cli("log", *args, "--json")
    assert done.returncode == 0, done.stderr
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    return rows


def by_commit(rows: list[dict[str, Any]], commit: str) -> list[dict[str, Any]]:
    return [row for row in rows if row["commit"] == commit]


def test_log_json_marks_the_reverted_decision_and_lists_its_revert(site: Site) -> None:
    rejection = decision_of(site, "d2")
    revert = git_revert(site, rejection)
    site.reconcile()  # the snippet follows the revert
    rows = log_rows(site)
    assert all(isinstance(row["reverted"], bool) for row in rows)
    assert [row["reverted"] for row in by_commit(rows, rejection)] == [True]
    assert [row["reverted"] for row in by_commit(rows, decision_of(site, "d1"))] == [False]
    [shown] = by_commit(rows, revert)
    assert shown["event"] == "revert" and shown["reverts"] == rejection
    assert (shown["agent"], shown["item"], shown["reverted"]) == (AGENT, "d2", False)
    assert shown["curator"] == site.git("log", "-1", "--format=%an <%ae>", revert).strip()
    assert [row["commit"] for row in rows].index(revert) < rows.index(by_commit(rows, rejection)[0])
    assert [row["commit"] for row in log_rows(site, AGENT)].count(revert) == 1


def test_a_revert_of_the_revert_puts_the_decision_back(site: Site) -> None:
    rejection = decision_of(site, "d2")
    revert = git_revert(site, rejection)
    again = git_revert(site, revert)
    rows = log_rows(site, AGENT)
    assert [row["reverted"] for row in by_commit(rows, rejection)] == [False]
    assert [row["reverted"] for row in by_commit(rows, revert)] == [True]
    assert [(row["event"], row["reverts"]) for row in by_commit(rows, again)] == [
        ("revert", revert)
    ]


def test_the_human_log_shows_the_mark_and_the_revert(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one line a row
    rejection = decision_of(site, "d2")
    git_revert(site, rejection)
    done = site.cli("log", AGENT)
    assert done.returncode == 0, done.stderr
    rows = {line.split("│")[1].strip(): line for line in done.stdout.splitlines() if "│" in line}
    assert "(reverted) d2" in rows["reject"]
    assert f"undoes reject({AGENT}): d2 ({rejection[:7]})" in rows["revert"]
    assert "Ada Curator" in rows["revert"]  # who reverted it
    assert "(reverted)" not in rows["approve"]


def test_the_panel_history_marks_the_reverted_decision(site: Site, served: Client) -> None:
    rejection = decision_of(site, "d2")
    revert = git_revert(site, rejection)
    page = served.get(f"/agents/{AGENT}").text
    row = page.split(f'<tr id="commit-{rejection}"', 1)[1].split("</tr>", 1)[0]
    assert 'class="reverted"' in row
    approval = page.split(f'<tr id="commit-{decision_of(site, "d1")}"', 1)[1].split("</tr>")[0]
    assert "reverted" not in approval
    assert f'<tr id="commit-{revert}"' in page


# --- the rows, from the history's commits (pure) --------------------------------------------------
def entry(commit: str, event: str, item: str) -> LogEntry:
    fields = dict.fromkeys(("skill", "fields", "price_old", "price_new"))
    return LogEntry(commit, "2026-12-01T10:00:00.000Z", event, AGENT, item, **fields,
                    curator="Ada <a@x.org>", subject=f"{event}({AGENT}): {item}")  # fmt: skip


def revert(commit: str, *targets: str) -> RevertCommit:
    return RevertCommit(commit, "2026-12-02T10:00:00.000Z", "Bo <b@x.org>", "Revert", targets)


def test_an_abbreviated_target_is_found_and_a_revert_of_another_commit_is_left_out() -> None:
    decision, other = "a" * 40, "b" * 40
    rows = with_reverts([revert("2" * 40, "f" * 40), revert("1" * 40, decision[:10]),
                         entry(decision, "reject", "d2")])  # fmt: skip
    assert [(row.event, row.reverts, row.reverted) for row in rows] == [
        ("revert", decision, False),
        ("reject", None, True),
    ]
    assert rows[0].subject == f"revert({AGENT}): undoes reject({AGENT}): d2 (aaaaaaa)"
    assert with_reverts([entry(other, "approve", "d1")])[0].reverted is False
