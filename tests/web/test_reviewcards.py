"""Reviews by several curators on the panel and the API, over real HTTP (SPEC section 15): each
curator's queue (the token's curator, with http.users_file), a draft's round of reviews, a
dispute's versions side by side with a button each, the counts of review/ and disputed/, and the
agreement card. The clicks are the browser's (tests/system/test_review_panel.py)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from urllib.parse import quote

import pytest

from feedbackd.app.reconcile import reconcile_all
from tests.reviews_kit import (
    ADA,
    ADA_TOKEN,
    BO,
    BO_TOKEN,
    bearer,
    three_drafts,
    write_users,
)
from tests.web_kit import serving
from tests.workspace_kit import Site, draft

CY = "Cy Third <cy@example.org>"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    """qi-1 queued; qi-2 reviewed by Ada, in review/; qi-3 disputed between Ada and Bo."""
    site = three_drafts(Site(tmp_path / "ws"), "Say what changed <b>for users</b>.")
    write_users(site)
    return site


def queued(answer: dict[str, object]) -> list[tuple[str, str]]:
    drafts = answer["drafts"]
    assert isinstance(drafts, list)
    return [(d["id"], d["waits"]) for d in drafts]


def articles(page: str) -> dict[str, str]:
    """Each draft's card on a page, by its item."""
    found = re.findall(
        r'<article class="draft[^"]*"[^>]*data-item="([^"]+)".*?</article>', page, re.S
    )
    cards = re.findall(
        r'(<article class="draft[^"]*"[^>]*data-item="[^"]+".*?</article>)', page, re.S
    )
    return dict(zip(found, cards, strict=True))


def test_each_curators_queue_is_what_waits_for_their_review(site: Site) -> None:
    site.configure("http:\n  users_file: users\nreview:\n  required: 2\n")
    with serving(site.root) as server:
        ada = server.get("/api/agents/lark/queue", headers=bearer(ADA_TOKEN)).json()
        bo = server.get("/api/agents/lark/queue", headers=bearer(BO_TOKEN)).json()
        mixed = server.get(f"/api/agents/lark/queue?curator={quote(BO)}", headers=bearer(ADA_TOKEN))
    assert queued(ada) == [("qi-1", "queue"), ("qi-3", "disputed")]
    assert queued(bo) == [("qi-1", "queue"), ("qi-2", "review"), ("qi-3", "disputed")]
    assert bo["agent_id"] == "lark" and bo["drafts"][1]["review"] == {"done": 1, "of": 2}
    assert mixed.status == 403 and mixed.json()["error"] == "forbidden"


def test_without_a_users_file_the_queue_is_everyones_or_the_named_curators(site: Site) -> None:
    with serving(site.root) as server:
        everyone = server.get("/api/agents/lark/queue").json()
        ada = server.get(f"/api/agents/lark/queue?curator={quote(ADA)}").json()
        bad = server.get("/api/agents/lark/queue?curator=nobody")
    assert queued(everyone) == [("qi-1", "queue"), ("qi-2", "review"), ("qi-3", "disputed")]
    assert queued(ada) == [("qi-1", "queue"), ("qi-3", "disputed")]
    assert bad.status == 400 and bad.json()["error"] == "invalid_item"


def test_the_counts_of_review_and_disputed_over_http(site: Site) -> None:
    with serving(site.root) as server:
        [agent] = server.get("/api/agents").json()["agents"]
        status = server.get("/api/status").json()
        overview = server.get("/").text
        metrics = server.get("/metrics").text
    assert (agent["queued"], agent["review"], agent["disputed"]) == (1, 1, 1)
    assert status["agents"] == {"lark": {"review": 1, "disputed": 1}}
    assert '<td class="n waiting" data-label="in review">1</td>' in overview
    assert '<td class="n waiting" data-label="disputed">1</td>' in overview
    assert 'feedbackd_drafts_held{agent="lark",folder="disputed"} 1' in metrics
    assert 'feedbackd_drafts_held{agent="lark",folder="review"} 1' in metrics


def test_the_panel_shows_a_curator_their_drafts_and_each_version_of_a_dispute(
    site: Site,
) -> None:
    site.configure("http:\n  users_file: users\nreview:\n  required: 2\n")
    with serving(site.root) as server:
        for_ada = server.get("/agents/lark", headers=bearer(ADA_TOKEN)).text
        for_bo = server.get("/agents/lark", headers=bearer(BO_TOKEN)).text
    assert list(articles(for_ada)) == ["qi-1", "qi-3"]
    assert "Signed in as Ada Curator &lt;ada@example.org&gt;" in for_ada
    assert 'id="curator"' not in for_ada  # who decides is the token's to say
    cards = articles(for_bo)
    assert list(cards) == ["qi-1", "qi-2", "qi-3"]
    assert "Review 2 of 2" not in cards["qi-1"] and "Review 2 of 2" in cards["qi-2"]
    assert "X" not in re.sub(r"<[^>]+>", "", cards["qi-2"])  # blind: not Ada's edit
    dispute = cards["qi-3"]
    assert "Disputed (approve 1, reject 1)" in dispute
    assert dispute.count('<section class="version ') == 3  # as drafted, Ada's, Bo's
    [edits] = re.findall(r'class="approve-version" data-edits="([^"]*)"', dispute)
    assert json.loads(html.unescape(edits)) == {"title": "Release 2.3: faster"}
    assert "Say what changed &lt;b&gt;for users&lt;/b&gt;." in dispute  # a note is text
    assert 'class="reject"' in dispute


def test_the_agreement_card_shows_the_figures_of_the_api(site: Site) -> None:
    site.git("add", "-A")
    site.git("commit", "-qm", "reviews")
    with serving(site.root) as server:
        page = server.get("/agents/lark").text
        figures = server.get("/api/agreement?agent=lark").json()
    assert figures["items"] == 1 and figures["disputed"] == 1
    card = page.split('<section class="card agreement">', 1)[1].split("</section>", 1)[0]
    assert "1 item · 0 agreed · 1 disputed (0 resolved) · verdicts agree on 0 %" in card
    assert "Ada Curator" in card and "Bo Reviewer" in card


def test_one_curators_workspace_shows_no_review_columns_nor_agreement_card(
    tmp_path: Path,
) -> None:
    site = Site(tmp_path / "ws")
    site.write("lark", "qi-1.json", draft({"title": "T"}))
    site.reconcile()
    with serving(site.root) as server:
        assert "Curator agreement" not in server.get("/agents/lark").text
        overview = server.get("/").text
        [agent] = server.get("/api/agents").json()["agents"]
    assert "in review" not in overview and "disputed" not in overview
    assert (agent["review"], agent["disputed"]) == (0, 0)  # the API counts them always


def test_a_review_over_http_is_the_tokens_curators_and_leaves_the_draft_to_the_others(
    tmp_path: Path,
) -> None:
    """Through the real pass: Ada's approval over HTTP is her review (1 of 2); the draft waits
    in review/ for Bo alone; Bo's rejection, moved by hand, makes the dispute the panel shows
    with both versions."""
    site = Site(tmp_path / "ws")
    site.write("lark", "qi-1.json", draft({"title": "Release 2.1", "body": "Fixes."}))
    site.reconcile()
    write_users(site)
    site.configure("http:\n  users_file: users\nreview:\n  required: 2\n")
    with serving(site.root) as server:
        edits = {"edits": {"title": "Release 2.1: faster"}}
        done = server.post("/api/agents/lark/queue/qi-1/approve", edits, headers=bearer(ADA_TOKEN))
        assert done.status == 200, done.text
        assert site.git("log", "-1", "--format=%an <%ae>|%s").strip() == (
            f"{ADA}|review(lark): qi-1 by Ada Curator (1 of 2)"
        )
        ada = server.get("/api/agents/lark/queue", headers=bearer(ADA_TOKEN)).json()
        bo = server.get("/api/agents/lark/queue", headers=bearer(BO_TOKEN)).json()
        assert queued(ada) == [] and queued(bo) == [("qi-1", "review")]
        [held] = bo["drafts"]
        assert held["review"] == {"done": 1, "of": 2}
        assert [f["current"] for f in held["fields"]] == ["Release 2.1", "Fixes."]  # blind

        waiting = site.agent("lark") / "review" / "qi-1.json"
        doc = json.loads(waiting.read_text())
        site.write("lark", "qi-1.json", {**doc, "rejectionFeedback": "Not for users."}, "review")
        site.move("lark", "qi-1.json", "rejected", source="review")
        reconcile_all(site.runtime(BO))
        assert (site.agent("lark") / "disputed" / "qi-1.json").is_file()
        page = server.get("/agents/lark", headers=bearer(ADA_TOKEN)).text
    dispute = articles(page)["qi-1"]
    assert "Disputed (approve 1, reject 1)" in dispute
    [edits_shown] = re.findall(r'class="approve-version" data-edits="([^"]*)"', dispute)
    assert json.loads(html.unescape(edits_shown)) == {"title": "Release 2.1: faster"}
    assert "Not for users." in dispute
