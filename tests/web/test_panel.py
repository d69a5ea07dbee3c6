"""The web panel's pages over real HTTP, without a browser: what a page says when there is nothing
to show (an unknown agent), its icon, the skill lessons, the learning history's rows, and the
refusal a curator reads when a draft was decided meanwhile. The layout is the browser's to check
(tests/system/test_web_panel.py)."""

from __future__ import annotations

import html
import json
import re
import uuid
from pathlib import Path

import pytest

from tests.web_kit import Client, serving
from tests.workspace_kit import Site, draft

SOUL = (
    "# Ledger Lark\n\nWrites release notes.\n\n## Release Notes\n\nTurns changelogs into notes.\n"
)
BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
NOTE = "Say what changed for users, not for us."


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "ws")
    site.write("lark", "qi-1.json", draft({"title": "Release 2.1", "summary": "Bug fixes."}))
    site.write("lark", "qi-2.json", draft({"title": "Release 2.2", "summary": "More fixes."}))
    (site.agent("lark") / "SOUL.md").write_text(SOUL)
    site.reconcile()
    return site


def rate(site: Site, buyer: str, stars: int, details: str) -> None:
    rating = {
        "transaction_id": str(uuid.uuid4()), "provider_agent": "lark",
        "skill_id": "release-notes", "rating": stars, "result_quality": "poor",
        "quality_details": details, "would_reuse": False, "cost_value_ratio": "fair",
    }  # fmt: skip
    done = site.cli("feedback", "submit", "--as", buyer, "--json", json.dumps(rating))
    assert done.returncode == 0, done.stderr


def history_rows(page: str) -> list[list[str]]:
    """The learning history's rows, each as the text of its cells."""
    table = page.split('<table class="history">', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr id=.*?</tr>", table, flags=re.S)
    return [
        [html.unescape(re.sub(r"<[^>]+>", "", cell)).strip() for cell in cells]
        for cells in (re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S) for row in rows)
    ]


# --- pages that are not there ---------------------------------------------------------------------
def test_an_unknown_agent_is_a_page_that_says_so(served: Client) -> None:
    answer = served.get("/agents/lak", headers=BROWSER)
    assert answer.status == 404
    assert answer.headers["content-type"].startswith("text/html")
    assert "<h1>Not found</h1>" in answer.text
    assert "no agent lak in _data/agents/" in answer.text
    assert "did you mean lark?" in answer.text
    assert '<a href="/">' in answer.text
    for headers in ({}, {"Accept": "application/json"}):  # a script: JSON, as every error is
        script = served.get("/agents/lak", headers=headers)
        assert (script.status, script.json()["error"]) == (404, "not_found")
    api = served.get("/api/agents/lak", headers=BROWSER)  # the API stays JSON
    assert (api.status, api.json()["error"]) == (404, "not_found")


def test_a_path_no_route_takes_is_a_page_for_a_browser_and_json_for_a_script(
    served: Client,
) -> None:
    page = served.get("/agnets/lark", headers=BROWSER)
    assert page.status == 404 and page.headers["content-type"].startswith("text/html")
    assert "GET /agnets/lark" in page.text and '<a href="/">' in page.text
    script = served.get("/agnets/lark", headers={"Accept": "*/*"})
    assert (script.status, script.json()["error"]) == (404, "not_found")
    for path in ("/api/nothing", "/static/nope"):  # what scripts call stays JSON
        answer = served.get(path, headers=BROWSER)
        assert (answer.status, answer.json()["error"]) == (404, "not_found"), path


# --- the icon -----------------------------------------------------------------------------------
def test_every_page_links_the_icon_the_server_answers(served: Client) -> None:
    for path in ("/", "/agents/lark", "/login", "/agents/nobody"):
        page = served.get(path, headers=BROWSER).text
        assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in page, path
    for path in ("/static/favicon.svg", "/favicon.ico"):  # where a browser looks by itself
        icon = served.get(path)
        assert icon.status == 200, path
        assert icon.headers["content-type"].startswith("image/svg+xml")
        assert icon.text.startswith("<svg ") and icon.text.rstrip().endswith("</svg>")


def test_the_icon_needs_no_token(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sign-in form shows it before the curator has signed in."""
    monkeypatch.setenv("FEEDBACKD_HTTP_TOKEN", "5e1f" * 16)
    with serving(site.root) as guarded:
        assert guarded.get("/agents/lark").status == 303  # sent to sign in
        for path in ("/static/favicon.svg", "/favicon.ico"):
            assert guarded.get(path).status == 200, path


# --- what the agent page shows ------------------------------------------------------------------
def test_the_agent_page_shows_each_skills_lessons(site: Site, served: Client) -> None:
    page = served.get("/agents/lark").text
    assert "No skill lessons yet" in page
    rate(site, "buyer-1", 1, "missed the <b>second</b> half")
    lessons = (site.agent("lark") / "prompt" / "skills" / "release-notes.md").read_text()
    assert "missed the <b>second</b> half" in lessons
    page = served.get("/agents/lark").text
    card = page.split('<section class="card lessons">', 1)[1].split("</section>", 1)[0]
    assert "<h3>Release Notes</h3>" in card
    assert "prompt/skills/release-notes.md" in card
    assert f"<pre>{html.escape(lessons)}</pre>" in card


def test_history_rows_name_the_buyer_and_say_what_happened(site: Site, served: Client) -> None:
    rate(site, "buyer-7", 2, "too long")
    done = site.cli("reject", "lark", "qi-2", "--notes", NOTE, "--curator", "Bo <bo@example.org>")
    assert done.returncode == 0, done.stderr
    site.configure("prompt:\n  include_rejections: true\n")  # the snippet is rewritten: a sync
    site.reconcile()
    rows = history_rows(served.get("/agents/lark").text)
    events = {row[1]: row for row in rows}
    assert events["sync"][3:] == ["", "regenerate prompt snippet"]
    assert events["reject"][2:] == ["qi-2", "Bo", NOTE]
    assert events["rating"][2:] == ["release-notes", "buyer-7", "2/5 poor from buyer-7 (fair)"]
    assert events["draft"][3:] == ["", "2 new drafts (qi-1, qi-2)"]


# --- a decision refused ---------------------------------------------------------------------------
def test_a_draft_decided_meanwhile_is_refused_in_one_plain_sentence(
    site: Site, served: Client
) -> None:
    site.move("lark", "qi-1.json", "approved")
    site.reconcile()
    answer = served.post("/api/agents/lark/queue/qi-1/approve", {})
    assert (answer.status, answer.json()["error"]) == (409, "already_decided")
    message = answer.json()["message"]
    assert re.fullmatch(
        r"qi-1 was already approved on \d{4}-\d\d-\d\d at \d\d:\d\d UTC; to decide it again,"
        r" move _data/agents/lark/approved/qi-1\.json back to _data/agents/lark/queue/",
        message,
    ), message
    assert str(site.root) not in message
