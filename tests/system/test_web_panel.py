"""The web panel in a real browser: Playwright driving the distribution's headless Chromium
against `feedbackd serve`, clicking what a curator clicks, then checking files and git.

Needs Debian's `chromium` (Playwright's own browser download is not reachable here): `make test`
installs it when run as root. Elsewhere these tests are skipped with a message saying how to
enable them, unless FEEDBACKD_REQUIRE_BROWSER=1 (set by .ci/run), which turns the skip into a
failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import uuid
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Dialog, Page, expect

from feedbackd.cli import demo
from tests.browser_kit import chromium, skip_without_chromium
from tests.learning_kit import AGENT, Clock, doc, monday_weeks_ago
from tests.repo_kit import ROOT
from tests.web_kit import Server, free_port
from tests.workspace_kit import Site, draft

pytestmark = pytest.mark.slow

SCREENSHOTS = ROOT / "docs" / "screenshots"
# Read before the tests' clean environment drops FEEDBACKD_* variables.
UPDATE_SCREENSHOTS = os.environ.get("FEEDBACKD_UPDATE_SCREENSHOTS") == "1"
SOUL = """# Ledger Lark

Writes release notes.

## Release Notes

Turns a changelog into notes people read.

pricing: 12
"""

skip_without_chromium()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "ws")
    site.write("lark", "qi-1.json", draft({"title": "Release 2.1", "summary": "Bug fixes."}))
    site.write("lark", "qi-2.md", "---\ntitle: Release 2.2\n---\nMore bug fixes.\n")
    (site.agent("lark") / "SOUL.md").write_text(SOUL)
    site.reconcile()
    for stars, value in ((4, "fair"), (2, "overpriced"), (5, "great")):
        rating = {
            "transaction_id": str(uuid.uuid4()), "provider_agent": "lark",
            "skill_id": "release-notes", "rating": stars, "result_quality": "good",
            "would_reuse": stars > 2, "cost_value_ratio": value,
        }  # fmt: skip
        done = site.cli("feedback", "submit", "--as", "buyer-1", "--json", json.dumps(rating))
        assert done.returncode == 0, done.stderr
    return site


def open_page(browser: Browser, url: str, width: int = 1280, height: int = 800) -> Page:
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(url)
    return page


def draft_card(page: Page, item: str) -> Any:
    return page.locator(f'article.draft[data-item="{item}"]')


def test_approve_with_an_edited_field_records_the_correction(
    browser: Browser, site: Site, server: Server
) -> None:
    page = open_page(browser, f"http://{server.host}/agents/lark")
    page.fill("#curator", "Bo Reviewer <bo@example.org>")
    page.dispatch_event("#curator", "change")
    card = draft_card(page, "qi-1")
    card.locator('textarea[name="title"]').fill("Release 2.1: faster sync")
    card.get_by_role("button", name="Approve").click()
    expect(card.locator(".result")).to_contain_text("approved: qi-1, 1 correction (title)")
    page.wait_for_load_state("load")
    expect(page.locator("article.draft")).to_have_count(1)  # the page reloaded: qi-2 remains
    [entry] = site.feedback("lark")
    assert (entry["field"], entry["corrected"]) == ("title", "Release 2.1: faster sync")
    assert "Corrected: Release 2.1: faster sync" in site.prompt("lark")
    assert site.git("log", "-1", "--format=%an|%s").strip() == (
        "Bo Reviewer|approve(lark): qi-1, 1 correction (title)"
    )
    recent = page.locator("section.recent")
    expect(recent.locator(".badge.correction")).to_have_count(1)
    expect(recent.locator("del")).to_have_text("Release 2.1")
    expect(recent.locator("footer")).to_contain_text("1 example injected into the prompt")
    expect(page.locator("section.snippet pre")).to_contain_text("Original: Release 2.1")


def test_reject_needs_a_note_then_records_it(browser: Browser, site: Site, server: Server) -> None:
    page = open_page(browser, f"http://{server.host}/agents/lark")
    card = draft_card(page, "qi-2")
    card.get_by_role("button", name="Reject with note").click()
    expect(card.locator(".result")).to_contain_text("Write a note for the agent first")
    assert (site.agent("lark") / "queue" / "qi-2.md").is_file()
    card.locator(".note textarea").fill("Say what changed for users, not for us.")
    card.get_by_role("button", name="Reject with note").click()
    expect(card.locator(".result")).to_contain_text("rejected: qi-2")
    [entry] = site.feedback("lark")
    assert (entry["type"], entry["notes"]) == (
        "rejection",
        "Say what changed for users, not for us.",
    )
    assert (site.agent("lark") / "rejected" / "qi-2.md").is_file()
    assert site.git("log", "-1", "--format=%s").strip() == "reject(lark): qi-2"


def test_a_refused_decision_is_shown_and_nothing_moves(
    browser: Browser, site: Site, server: Server
) -> None:
    page = open_page(browser, f"http://{server.host}/agents/lark")
    site.move("lark", "qi-1.json", "approved")  # a curator decided it in their editor meanwhile
    card = draft_card(page, "qi-1")
    card.get_by_role("button", name="Approve").click()
    expect(card.locator(".result")).to_contain_text("qi-1 was already approved")
    expect(card.get_by_role("button", name="Approve")).to_be_enabled()


def test_overview_and_skill_charts(browser: Browser, site: Site, server: Server) -> None:
    page = open_page(browser, f"http://{server.host}/")
    row = page.locator("table.agents tr", has_text="Ledger Lark")
    expect(row.locator("td").nth(1)).to_have_text("2")  # queued
    row.get_by_role("link", name="Ledger Lark").click()
    expect(page).to_have_url(f"http://{server.host}/agents/lark")
    skill = page.locator("article.skill", has_text="Release Notes")
    expect(skill.locator("figure.chart")).to_have_count(3)
    expect(skill.locator("svg rect.bar")).to_have_count(3)
    expect(skill.locator(".facts")).to_contain_text("3 ratings")


def test_the_page_is_readable_on_a_laptop_and_a_phone(
    browser: Browser, site: Site, server: Server, tmp_path: Path
) -> None:
    site.write(
        "lark",
        "qi-1.json",
        draft({"title": "Release 2.1: sync is faster", "summary": "Bug fixes."}),
    )
    assert (
        site.cli("approve", "lark", "qi-1", "--curator", "Bo Reviewer <bo@example.org>").returncode
        == 0
    )
    note = {"type": "rejection", "queueItemId": "qi-0", "notes": "Lead with what users gain."}
    assert site.cli("record", "lark", "--json", json.dumps(note)).returncode == 0
    folder = tmp_path
    for name, width, height in (("agent-page", 1280, 800), ("agent-page-phone", 390, 844)):
        page = open_page(browser, f"http://{server.host}/agents/lark", width, height)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{name}: {overflow}px wider than the screen"
        expect(page.get_by_role("heading", name="Recent feedback")).to_be_visible()
        page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
        page.close()
    assert (folder / "agent-page.png").stat().st_size > 10_000


def test_no_asset_comes_from_another_host(browser: Browser, server: Server) -> None:
    page = browser.new_page()
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    page.goto(f"http://{server.host}/agents/lark")
    page.wait_for_load_state("networkidle")
    assert asked and all(url.startswith(f"http://{server.host}/") for url in asked)


# --- a page on another origin, and the login form ---------------------------------------------
@pytest.fixture
def foreign_page(server: Server) -> Iterator[str]:
    """Another origin (another port) serving a page that frames the panel, as a hostile site would
    to have a curator click Approve without knowing."""
    page = (
        "<!doctype html><title>Win a prize</title><h1>Click the button to win</h1>"
        f'<iframe id="bait" src="http://{server.host}/agents/lark" width="1000" height="600">'
        "</iframe>"
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the test's output stays readable

    foreign = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=foreign.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{foreign.server_address[1]}/"
    foreign.shutdown()
    foreign.server_close()
    thread.join(timeout=10)


def test_a_page_on_another_origin_cannot_frame_the_panel(
    browser: Browser, site: Site, server: Server, foreign_page: str, tmp_path: Path
) -> None:
    commits = site.commit_count()
    page = open_page(browser, foreign_page)
    page.wait_for_load_state("load")  # the frame has loaded, or has been refused
    [framed] = [frame for frame in page.frames if frame is not page.main_frame]
    page.screenshot(path=str(tmp_path / "framed.png"))
    approve = framed.locator("button.approve")
    if approve.count():  # what the hostile page would have the curator do
        approve.first.click()
        expect(framed.locator(".result").first).to_contain_text("approved")
    assert approve.count() == 0, "the panel loaded inside another site's page"
    assert site.commit_count() == commits
    assert (site.agent("lark") / "queue" / "qi-1.json").is_file()


def test_the_login_page_is_styled_and_signs_the_curator_in(
    browser: Browser, site: Site, tmp_path: Path
) -> None:
    token = "5e1f" * 16
    server = Server(site.root, env={"FEEDBACKD_HTTP_TOKEN": token})
    try:
        page = browser.new_page()
        refused: list[str] = []
        page.on("console", lambda message: refused.append(message.text))
        page.goto(f"http://{server.host}/agents/lark")
        expect(page).to_have_url(f"http://{server.host}/login")
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(246, 248, 250)"  # panel.css's --page colour: it was loaded
        page.screenshot(path=str(tmp_path / "login.png"))
        page.fill('input[name="token"]', token)
        page.get_by_role("button", name="Sign in").click()
        expect(page).to_have_url(f"http://{server.host}/")
        expect(page.locator("table.agents")).to_contain_text("Ledger Lark")
        assert not [text for text in refused if "Content Security Policy" in text]
    finally:
        server.close()


def test_each_example_of_the_snippet_leads_to_its_decision_in_the_history(
    browser: Browser, site: Site, server: Server, tmp_path: Path
) -> None:
    site.write(
        "lark", "qi-1.json", draft({"title": "Release 2.1: faster", "summary": "Bug fixes."})
    )
    approved = site.cli("approve", "lark", "qi-1", "--curator", "Bo Reviewer <bo@example.org>")
    assert approved.returncode == 0, approved.stderr
    decision = site.git("log", "-1", "--format=%H").strip()
    note = {"type": "rejection", "queueItemId": "qi-0", "notes": "Lead with what users gain."}
    assert site.cli("record", "lark", "--json", json.dumps(note)).returncode == 0
    page = open_page(browser, f"http://{server.host}/agents/lark")
    link = page.locator("section.snippet pre a.lesson")
    expect(link).to_have_count(1)
    expect(link).to_have_text("Example 1:")
    # The snippet still reads exactly as the agent reads it, links and all.
    assert page.locator("section.snippet pre").inner_text() == site.prompt("lark")
    row = page.locator(f"table.history tr#commit-{decision}")
    expect(row).not_to_be_in_viewport()
    link.click()
    expect(page).to_have_url(f"http://{server.host}/agents/lark#commit-{decision}")
    expect(row).to_be_in_viewport()
    expect(row).to_contain_text("approve")
    expect(row).to_contain_text("Bo Reviewer")
    assert page.evaluate("document.querySelector(':target').id") == f"commit-{decision}"
    page.screenshot(path=str(tmp_path / "agent-page-why.png"))


# --- is it learning? (SPEC section 13) ---------------------------------------------------------
# Eight weeks of a curator's decisions on five drafts a week: (rejected, corrected, unedited).
CURVE = [(2, 3, 0), (2, 2, 1), (1, 3, 1), (1, 2, 2), (1, 1, 3), (0, 2, 3), (0, 1, 4), (0, 1, 4)]


@pytest.fixture
def curve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Site:
    """An agent whose drafts a curator corrects less and rejects less, week after week."""
    site, clock = Site(tmp_path / "curve"), Clock(monkeypatch)
    (site.agent(AGENT) / "SOUL.md").parent.mkdir(parents=True)
    (site.agent(AGENT) / "SOUL.md").write_text("# Copy Writer\n\nWrites the site's articles.\n")
    for week, (rejected, corrected, _) in enumerate(CURVE):
        monday = monday_weeks_ago(len(CURVE) - week) + timedelta(hours=9)
        names = [f"w{week}-{n}" for n in range(5)]
        clock.at(monday)
        for name in names:
            site.write(AGENT, f"{name}.json", doc(name))
        site.reconcile()
        for n, name in enumerate(names):
            if n < rejected:
                site.write(AGENT, f"{name}.json", {**doc(name), "rejectionFeedback": "Too dry."})
            elif n < rejected + corrected:
                edits = {"excerpt": f"What {name} gives you."} if n % 2 else {}
                site.write(AGENT, f"{name}.json", doc(name, title=f"Sharper {name}", **edits))
            site.move(AGENT, f"{name}.json", "rejected" if n < rejected else "approved")
        clock.at(monday + timedelta(days=1, hours=week % 3))
        site.reconcile()
    monkeypatch.delenv("GIT_AUTHOR_DATE")
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    return site


def test_the_learning_curve_on_the_agent_page(
    browser: Browser, curve: Site, tmp_path: Path
) -> None:
    server = Server(curve.root)
    try:
        page = open_page(browser, f"http://{server.host}/", 1280, 800)
        page.get_by_role("link", name="Copy Writer").click()
        expect(page).to_have_url(f"http://{server.host}/agents/{AGENT}")
        card = page.locator("section.learning")
        expect(card.get_by_role("heading", name="Is it learning?")).to_be_visible()
        expect(card.locator(".facts")).to_contain_text("40 decided")
        chart = card.locator("figure.rates svg")
        # Nine weeks: the eight of the history, then this one with no decision yet.
        expect(chart).to_have_attribute("aria-label", re.compile(r"^.* 9 periods from .*"))
        expect(chart.locator("g.unedited polyline")).to_have_count(1)
        expect(chart.locator("g.rejected polyline")).to_have_count(1)
        expect(card.locator("figcaption")).to_contain_text("unedited approvals 80%")
        expect(card.locator("figcaption")).to_contain_text("rejections 0%")
        expect(card.locator("ol.fields-corrected li").first).to_contain_text("title 15")
        card.screenshot(path=str(tmp_path / "learning.png"))
        assert (tmp_path / "learning.png").stat().st_size > 5_000
    finally:
        server.close()


# --- every page fits the screen, from a phone to a laptop ---------------------------------------
SAMPLE_DATA = ROOT / "_data"
LONG_ID = "sku_4412_trailhead_35_backpack_forest_green_and_slate_grey"  # no place to break it
# Each element of a card that reaches past its card's edges: what a phone would cut off.
PAST_THE_CARD = """() => {
  const found = [];
  for (const card of document.querySelectorAll(".card")) {
    const box = card.getBoundingClientRect();
    for (const inner of card.querySelectorAll("*")) {
      const r = inner.getBoundingClientRect();
      if (r.width && (r.right > box.right + 1 || r.left < box.left - 1)) {
        found.push(`${inner.tagName.toLowerCase()}.${inner.className} ${Math.round(r.width)}px`
          + ` in ${card.className} ${Math.round(box.width)}px`);
      }
    }
  }
  return found.slice(0, 5);
}"""
# Each field of a draft that shows part of a line, or hides lines while it shows fewer than ten.
CUT_FIELDS = """() => [...document.querySelectorAll("article.draft textarea[name]")].flatMap(
(box) => {
  const style = getComputedStyle(box);
  const padding = parseFloat(style.paddingTop) + parseFloat(style.paddingBottom);
  const lines = (box.clientHeight - padding) / parseFloat(style.lineHeight);
  const hidden = box.scrollHeight > box.clientHeight + 1;
  // A field that scrolls shows the top of its next line in its bottom padding.
  const peeks = hidden && parseFloat(style.paddingBottom) > 0;
  const cut = Math.abs(lines - Math.round(lines)) > 0.05 || (hidden && lines < 9.95) || peeks;
  const told = `${lines.toFixed(2)} lines shown${hidden ? ", more hidden" : ""}`;
  return cut ? [`${box.name}: ${told}${peeks ? ", the next peeking under them" : ""}`] : [];
})"""


def layout_problems(page: Page) -> list[str]:
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    wider = [f"{overflow}px wider than the screen"] if overflow > 0 else []
    return [*wider, *page.evaluate(PAST_THE_CARD), *page.evaluate(CUT_FIELDS)]


@pytest.fixture
def sample(tmp_path: Path) -> Site:
    """The README's sample workspace after the tour's first steps: an approval with an edit, a
    rejection with a note, low ratings that wrote a skill's lessons, and drafts whose ids are as
    long as a shop's SKUs get, one decided, one waiting."""
    site = Site(tmp_path / "sample")
    shutil.copytree(SAMPLE_DATA, site.data, dirs_exist_ok=True)
    for item in (LONG_ID, f"{LONG_ID}_2"):
        site.write("seo-helper", f"{item}.json", draft({"seo.metaDescription": "A pack. " * 9}))
    site.reconcile()
    queued = site.agent("content-writer") / "queue" / "qi-101.json"
    edited = json.loads(queued.read_text())
    edited["contentData"]["title"] = "TypeScript generics: write a helper once, type it right"
    site.write("content-writer", "qi-101.json", edited)
    curator = "Bo Reviewer <bo@example.org>"
    for argv in (
        ["approve", "content-writer", "qi-101", "--curator", curator],
        ["reject", "content-writer", "qi-102", "--notes", "Too generic: name a real project."],
        ["reject", "seo-helper", f"{LONG_ID}_2", "--notes", "Name the colours."],
    ):
        assert site.cli(*argv).returncode == 0
    for buyer in ("content-writer", "seo-helper"):
        rating = {
            "transaction_id": str(uuid.uuid4()), "provider_agent": "heavylift-chengwen",
            "skill_id": "claude-code-run", "rating": 2, "result_quality": "poor",
            "quality_details": "the tests it wrote never ran", "would_reuse": False,
            "cost_value_ratio": "overpriced",
        }  # fmt: skip
        done = site.cli("feedback", "submit", "--as", buyer, "--json", json.dumps(rating))
        assert done.returncode == 0, done.stderr
    return site


def test_every_page_fits_the_screen_at_390_and_1280_px(
    browser: Browser, sample: Site, tmp_path: Path
) -> None:
    server = Server(sample.root)
    pages = [
        "/", "/agents/content-writer", "/agents/seo-helper", "/agents/heavylift-chengwen",
        "/login", "/agents/nobody",
    ]  # fmt: skip
    problems = []
    try:
        for width in (390, 1280):
            for path in pages:
                page = open_page(browser, f"http://{server.host}{path}", width, 844)
                found = [f"{path} at {width}px: {said}" for said in layout_problems(page)]
                if found:  # a picture of what is wrong, to look at
                    shot = tmp_path / f"{width}{path.replace('/', '-')}.png"
                    page.screenshot(path=str(shot), full_page=True)
                    found.append(f"(see {shot})")
                problems += found
                page.close()
    finally:
        server.close()
    assert problems == [], "\n".join(problems)


# A browser that does not size fields to their content (panel.css's field-sizing), as Firefox.
NO_FIELD_SIZING = """
CSS.supports = ((supports) => (property, ...rest) =>
  property === "field-sizing" ? false : supports.call(CSS, property, ...rest))(CSS.supports);
document.addEventListener("DOMContentLoaded", () => {
  const style = document.createElement("style");
  style.textContent = "textarea { field-sizing: fixed !important; }";
  document.head.append(style);
});
"""


def test_fields_fit_their_text_where_the_browser_cannot_size_them(
    browser: Browser, sample: Site
) -> None:
    server = Server(sample.root)
    try:
        for path in ("/agents/seo-helper", "/agents/content-writer"):
            # bypass_csp: the test's own style element, which the panel's policy refuses.
            page = browser.new_page(viewport={"width": 390, "height": 844}, bypass_csp=True)
            page.add_init_script(NO_FIELD_SIZING)
            page.goto(f"http://{server.host}{path}")
            assert (
                page.evaluate("getComputedStyle(document.querySelector('textarea')).fieldSizing")
                == "fixed"
            )
            assert page.evaluate(CUT_FIELDS) == [], path
            page.close()
    finally:
        server.close()


# --- the demo of `make run`, as the README shows it ---------------------------------------------
# Each item of a list whose content reaches past its own room, or whose room meets another's:
# an item's room is its box and, left of it, its number (a marker outside the box, in the
# list's padding for the first column and in the gap between columns for the others).
CROWDED_ITEMS = """(selector) => {
  const found = [];
  const items = [...document.querySelectorAll(selector)];
  const boxes = items.map((item) => {
    const r = item.getBoundingClientRect();
    const marker = parseFloat(getComputedStyle(item.parentElement).paddingLeft);
    return {left: r.left - marker, right: r.right, top: r.top, bottom: r.bottom};
  });
  items.forEach((item, i) => {
    const box = boxes[i];
    for (const inner of item.querySelectorAll("*")) {
      const r = inner.getBoundingClientRect();
      if (r.right > box.right + 1) {
        found.push(`${inner.textContent} reaches past its item (${Math.round(r.right)}px`
          + ` > ${Math.round(box.right)}px)`);
      }
    }
    boxes.slice(i + 1).forEach((other, j) => {
      const apart = box.right <= other.left + 1 || other.right <= box.left + 1
        || box.bottom <= other.top + 1 || other.bottom <= box.top + 1;
      if (!apart) found.push(`${item.textContent} meets ${items[i + 1 + j].textContent}`);
    });
  });
  return found;
}"""


@pytest.fixture(scope="module")
def demo_site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    """`make run`'s demo workspace after the daemon's first pass: eight weeks of history, and
    this week's drafts waiting; the eval of week 6's lessons kept as docs/learning.md keeps it."""
    root = tmp_path_factory.mktemp("demo") / "demo"
    demo.build(root)
    site = Site(root)
    assert site.cli("run", "--once").returncode == 0
    assert site.cli("eval", "content-writer", "--items", "6", "--note").returncode == 0
    return site


def test_the_demos_agent_pages_as_the_readme_shows_them(
    browser: Browser, demo_site: Site, tmp_path: Path
) -> None:
    folder = SCREENSHOTS if UPDATE_SCREENSHOTS else tmp_path
    server = Server(demo_site.root)
    problems = []
    try:
        for name, width, height in (("agent-page", 1280, 800), ("agent-page-phone", 390, 844)):
            for agent in ("content-writer", "seo-helper"):
                page = open_page(browser, f"http://{server.host}/agents/{agent}", width, height)
                fields = page.locator("ol.fields-corrected li")
                expect(fields.first).to_be_visible()
                crowded = page.evaluate(CROWDED_ITEMS, "ol.fields-corrected li")
                problems += [f"{agent} at {width}px: {said}" for said in crowded]
                if agent == "content-writer":
                    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
                    if width == 1280:
                        card = page.locator("section.learning")
                        expect(card.locator("figure.rates svg")).to_have_attribute(
                            "aria-label", re.compile(r"^.* 9 periods from .*")
                        )
                        card.screenshot(path=str(folder / "learning.png"))
                page.close()
    finally:
        server.close()
    assert problems == [], "\n".join(problems)


# --- would the lessons have helped? (SPEC section 14) ------------------------------------------
def test_the_last_kept_eval_beside_the_learning_curve(
    browser: Browser, demo_site: Site, tmp_path: Path
) -> None:
    server = Server(demo_site.root)
    try:
        for width, beside in ((1280, True), (390, False)):
            page = open_page(browser, f"http://{server.host}/agents/content-writer", width, 844)
            card, curve = page.locator("section.eval"), page.locator("section.learning")
            expect(
                card.get_by_role("heading", name="Would the lessons have helped?")
            ).to_be_visible()
            expect(card.locator(".delta")).to_have_text("+0.10 better (95 % 0.03 to 0.17)")
            expect(card).to_contain_text("on 6 later approvals")
            expect(card).to_contain_text("0.87 with these lessons")
            expect(card).to_contain_text("0.77 without lessons")
            expect(card.locator("svg rect.mine")).to_have_attribute("width", "262.4")
            mine, theirs = card.bounding_box(), curve.bounding_box()
            assert mine is not None and theirs is not None
            if beside:  # on a laptop, to the right of the curve, at its height
                assert mine["x"] > theirs["x"] + theirs["width"] - 1 and mine["y"] == theirs["y"]
            else:  # on a phone, under it
                assert mine["y"] >= theirs["y"] + theirs["height"]
            assert layout_problems(page) == []
            if width == 1280:  # docs/learning.md shows it
                folder = SCREENSHOTS if UPDATE_SCREENSHOTS else tmp_path
                card.screenshot(path=str(folder / "eval.png"))
            page.screenshot(path=str(tmp_path / f"agent-page-{width}.png"), full_page=True)
            page.close()
    finally:
        server.close()


def test_a_note_edited_into_markup_shows_as_text(
    browser: Browser, site: Site, server: Server
) -> None:
    hostile = {
        "agent": "lark", "score": "<img src=x onerror=alert(1)>", "delta": "<script>alert(2)",
        "against": {"at": "<svg onload=alert(3)>", "score": 0.5}, "ci95": [1, "x"], "items": -4,
    }  # fmt: skip
    site.git("notes", "--ref=feedbackd-eval", "add", "-m", json.dumps(hostile), "HEAD")
    page = browser.new_page()
    alerts: list[str] = []

    def dialog(shown: Dialog) -> None:  # a script the note slipped in would open one
        alerts.append(shown.message)
        shown.dismiss()

    page.on("dialog", dialog)
    page.goto(f"http://{server.host}/agents/lark")
    card = page.locator("section.eval")
    expect(card.locator(".delta")).to_have_text("—")
    expect(card).to_contain_text("0.50 with those of <svg on")
    expect(card).to_contain_text("on —")
    assert page.locator("section.eval img, section.eval script").count() == 0
    assert alerts == []
