"""The agent page's eval card (SPEC section 14): the last eval of the agent saved with `--note`
(refs/notes/feedbackd-eval), next to the learning curve; a hint when none was saved. A note is a
file a user may edit: whatever it holds is escaped, and one that does not read breaks nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.eval_kit import AGENT, lessons_then_later
from tests.web_kit import serving
from tests.workspace_kit import Site

BUILTIN = "builtin:apply-lessons"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "ws")


def eval_card(site: Site) -> str:
    with serving(site.root) as client:
        answer = client.get(f"/agents/{AGENT}", headers={"Accept": "text/html"})
    assert answer.status == 200, answer.text
    page = answer.text
    start = page.index('<section class="card eval">')
    return page[start : page.index("</section>", start)]


def note(site: Site, commit: str, text: str) -> None:
    site.git("notes", "--ref=feedbackd-eval", "add", "-f", "-m", text, commit)


def test_no_saved_eval_shows_how_to_make_one(site: Site) -> None:
    lessons_then_later(site)
    card = eval_card(site)
    assert f"feedbackd eval {AGENT} --note" in card


def test_the_last_saved_eval_of_the_agent_is_shown(site: Site) -> None:
    between = lessons_then_later(site)
    done = site.cli("eval", AGENT, "--command", BUILTIN, "--at", between, "--note", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    card = eval_card(site)
    assert f"{report['score']:.2f}" in card and f"{report['against']['score']:.2f}" in card
    assert "without lessons" in card
    assert f"{report['delta']:+.2f}" in card
    low, high = report["ci95"]
    assert f"95 % {low:.2f} to {high:.2f}" in card
    assert "4 later approvals" in card
    assert between[:7] in card
    assert "the lessons changed 4 times since" in card  # the four later approvals taught


def test_a_note_edited_into_anything_is_escaped_and_breaks_nothing(site: Site) -> None:
    between = lessons_then_later(site)
    later = site.git("rev-parse", "HEAD~1").strip()
    hostile = {
        "agent": AGENT, "at": "<script>alert(1)</script>", "items": "<b>many</b>",
        "score": "<img src=x onerror=alert(1)>", "against": ["not", "an object"],
        "delta": None, "ci95": {"lo": 1}, "failed": 1e308,
    }  # fmt: skip
    note(site, between, json.dumps(hostile))
    note(site, later, "{not json at all <script>")  # newer, unreadable: passed over
    card = eval_card(site)
    assert "<script>" not in card and "<img" not in card and "<b>many" not in card
    assert "&lt;script&gt;" in card or between[:7] in card
    # a note of another agent on a newer revision is not this agent's eval
    note(site, later, json.dumps({"agent": "someone-else", "score": 0.5}))
    assert "&lt;script&gt;" in eval_card(site) or between[:7] in eval_card(site)


def test_a_note_that_is_not_an_eval_leaves_the_hint(site: Site) -> None:
    between = lessons_then_later(site)
    note(site, between, "[1, 2, 3]")
    assert f"feedbackd eval {AGENT} --note" in eval_card(site)
