"""Two curators on the web panel in a real browser (SPEC section 15): Playwright driving the
distribution's headless Chromium against `feedbackd serve` with an http.users_file, each curator
signed in with their own token in a browser context of their own, clicking what they click, then
checking files and git.

Needs Debian's `chromium`, as test_web_panel.py does (skipped with a message
without it, a failure under FEEDBACKD_REQUIRE_BROWSER=1).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser_kit import chromium, skip_without_chromium
from tests.reviews_kit import (
    ADA,
    ADA_TOKEN,
    BO,
    BO_TOKEN,
    hold_as_disputed,
    hold_for_review,
    review_line,
    two_drafts_two_curators,
)
from tests.web_kit import Server
from tests.workspace_kit import Site

pytestmark = pytest.mark.slow


skip_without_chromium()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return two_drafts_two_curators(tmp_path / "ws")


def signed_in(browser: Browser, server: Server, token: str) -> Page:
    """A curator's own browser (a context of its own: its own cookie), signed in with their
    token through the login form, on the agent's page."""
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.goto(f"http://{server.host}/agents/lark")
    page.fill('input[name="token"]', token)
    page.get_by_role("button", name="Sign in").click()
    page.goto(f"http://{server.host}/agents/lark")
    return page


def test_a_token_the_users_file_does_not_name_is_not_signed_in(
    browser: Browser, site: Site
) -> None:
    server = Server(site.root)
    try:
        page = browser.new_context().new_page()
        page.goto(f"http://{server.host}/agents/lark")
        page.fill('input[name="token"]', "nobody-" + "3" * 40)
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator(".problem")).to_have_text("That is not the token.")
        page.goto(f"http://{server.host}/agents/lark")
        expect(page).to_have_url(f"http://{server.host}/login")
    finally:
        server.close()


def test_each_curator_sees_the_drafts_waiting_for_them_and_the_dispute_side_by_side(
    browser: Browser, site: Site, tmp_path: Path
) -> None:
    hold_for_review(site, "lark", "qi-1.json", [review_line("qi-1", ADA, "approve", title="X")])
    hold_as_disputed(
        site,
        "lark",
        "qi-2.json",
        [
            review_line(
                "qi-2", ADA, "approve", title="Release 2.2: faster sync", summary="More fixes."
            ),
            review_line("qi-2", BO, "reject", notes="Say what changed for users."),
        ],
    )
    site.configure("http:\n  users_file: users\nreview:\n  required: 2\n")
    server = Server(site.root)
    try:
        ada = signed_in(browser, server, ADA_TOKEN)
        bo = signed_in(browser, server, BO_TOKEN)
        expect(ada.locator("header.top")).to_contain_text("Signed in as Ada Curator")
        expect(ada.locator("article.draft")).to_have_count(1)  # qi-1 waits for the others
        expect(bo.locator("article.draft")).to_have_count(2)
        held = bo.locator('article.draft[data-item="qi-1"]')
        expect(held.locator(".round")).to_contain_text("Review 2 of 2")
        expect(held.locator('textarea[name="title"]')).to_have_value("Release 2.1")
        dispute = bo.locator('article.draft[data-item="qi-2"]')
        versions = dispute.locator("section.version")
        expect(versions).to_have_count(3)
        expect(versions.nth(1)).to_contain_text("Release 2.2: faster sync")
        expect(versions.nth(2)).to_contain_text("Say what changed for users.")
        boxes = [versions.nth(n).bounding_box() for n in range(3)]
        assert all(box is not None for box in boxes)
        tops = {round(box["y"]) for box in boxes if box}
        assert len(tops) == 1, boxes  # side by side, in one row
        dispute.screenshot(path=str(tmp_path / "dispute.png"))
        bo.screenshot(path=str(tmp_path / "bo.png"), full_page=True)
        ada.screenshot(path=str(tmp_path / "ada.png"), full_page=True)
        bo.set_viewport_size({"width": 390, "height": 844})  # a phone: one version a row
        assert bo.evaluate("document.documentElement.scrollWidth") <= 390
        bo.screenshot(path=str(tmp_path / "bo-phone.png"), full_page=True)
    finally:
        server.close()
    print(f"screenshots in {tmp_path}")


def test_two_curators_review_a_draft_and_a_version_settles_the_dispute(
    browser: Browser, site: Site, tmp_path: Path
) -> None:
    """Ada approves qi-1 with an edit, Bo rejects it: disputed, both versions side by side; an
    Approve-this-version click settles it with Ada's version, decided by Bo."""
    site.configure("http:\n  users_file: users\nreview:\n  required: 2\n")
    server = Server(site.root)
    try:
        ada = signed_in(browser, server, ADA_TOKEN)
        mine = ada.locator('article.draft[data-item="qi-1"]')
        mine.locator('textarea[name="title"]').fill("Release 2.1: faster sync")
        mine.get_by_role("button", name="Approve").click()
        expect(mine.locator(".result")).to_contain_text("reviewed: qi-1 by Ada Curator (1 of 2)")
        ada.wait_for_load_state("load")
        expect(ada.locator('article.draft[data-item="qi-1"]')).to_have_count(0)
        assert (site.agent("lark") / "review" / "qi-1.json").is_file()

        bo = signed_in(browser, server, BO_TOKEN)
        theirs = bo.locator('article.draft[data-item="qi-1"]')
        expect(theirs.locator(".round")).to_contain_text("Review 2 of 2")
        expect(theirs.locator('textarea[name="title"]')).to_have_value("Release 2.1")  # blind
        theirs.locator(".note textarea").fill("Say what changed for users.")
        theirs.get_by_role("button", name="Reject with note").click()
        expect(theirs.locator(".result")).to_contain_text("disputed: qi-1")
        bo.wait_for_load_state("load")
        dispute = bo.locator('article.draft.disputed[data-item="qi-1"]')
        versions = dispute.locator("section.version")
        expect(versions).to_have_count(3)
        expect(versions.nth(1)).to_contain_text("Release 2.1: faster sync")
        expect(versions.nth(2)).to_contain_text("Say what changed for users.")
        dispute.screenshot(path=str(tmp_path / "dispute-live.png"))

        dispute.get_by_role("button", name="Approve this version").click()
        expect(dispute.locator(".result")).to_contain_text("approved: qi-1")
        bo.wait_for_load_state("load")
        expect(bo.locator('article.draft[data-item="qi-1"]')).to_have_count(0)
        bo.screenshot(path=str(tmp_path / "settled.png"), full_page=True)
    finally:
        server.close()
    approved = json.loads((site.agent("lark") / "approved" / "qi-1.json").read_text())
    assert approved["contentData"]["title"] == "Release 2.1: faster sync"
    assert "reviews" not in approved
    message = site.git("log", "-1", "--format=%an <%ae>%n%B")
    assert message.startswith(f"{BO}\napprove(lark): qi-1")
    assert f"Feedback-Adjudicator: {BO}" in message
