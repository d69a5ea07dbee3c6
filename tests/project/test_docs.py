"""The README is a user's guide that fits a short read, and every relative link in it and in
docs/ leads somewhere: a file that exists, and a heading that exists in it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from feedbackd.core.commitmsg import EVENTS
from tests.repo_kit import PACKAGE, ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
README_MAX_BYTES = 20 * 1024


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces to -."""
    found = set()
    prose = re.sub(r"(?ms)^```.*?^```", "", page.read_text(encoding="utf-8"))
    for line in prose.splitlines():
        if line.startswith("#"):
            text = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return found


def relative_links(page: Path) -> list[str]:
    links = LINK.findall(page.read_text(encoding="utf-8"))
    return [link for link in links if not re.match(r"[a-z]+:", link)]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for link in relative_links(page):
        target, _, anchor = link.partition("#")
        file = (page.parent / target).resolve() if target else page
        missing_heading = anchor and file.suffix == ".md" and anchor not in anchors(file)
        if not file.exists() or missing_heading:
            broken.append(link)
    assert broken == []


def test_the_readme_stays_a_short_guide() -> None:
    assert len((ROOT / "README.md").read_bytes()) <= README_MAX_BYTES


def test_the_readme_names_every_event_log_prints() -> None:
    """The commands section lists the events of `log`: feedbackd's own, and the reverts of
    them that `log` shows beside them."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### The learning history", 1)[1].split("\n#", 1)[0]
    listed = re.search(r"\(((?:`[a-z]+`,\s*)+`[a-z]+`)\)", section)
    assert listed is not None
    assert set(re.findall(r"`([a-z]+)`", listed[1])) == {*EVENTS, "revert"}


def test_the_check_sees_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n[gone](nowhere.md) [here](#title) [not](#missing)\n```\n## In code\n```\n"
    )
    assert relative_links(page) == ["nowhere.md", "#title", "#missing"]
    assert anchors(page) == {"title"}  # a `#` line in a code block is no heading


def test_the_readme_shows_who_decides_for_both_decisions() -> None:
    """`reject` takes --curator as `approve` does: a reader of the command list must not credit
    rejections to the git user for want of knowing it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for command in ("approve", "reject"):
        [line] = [x for x in readme.splitlines() if x.startswith(f"feedbackd {command} AGENT")]
        assert '[--curator "N <e>"]' in line, line


def test_the_architecture_page_names_every_module_and_room() -> None:
    """docs/architecture.md answers "where is X" for every module: a module or room added
    without a word there fails here, so the page never lags the package."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"[a-z_]+", page))
    parts = [p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts]
    modules = {p.stem for p in parts if not p.stem.startswith("__")}
    rooms = {p.parent.name for p in parts if p.parent != PACKAGE}
    assert len(modules) > 100 and {"core", "edges", "app", "cli", "web"} <= rooms
    assert sorted((modules | rooms) - named) == []
