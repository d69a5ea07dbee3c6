"""Test helpers for `eval` and `bisect`: a writer agent whose curators keep correcting the same
excerpt, made through the real pipeline and real git, and a slip that made its lessons worse."""

from __future__ import annotations

from typing import Any

from tests.workspace_kit import Site, draft

AGENT = "writer"
DRAFTED = "About this post."
FIXED = "Read why this matters to you."
SLIP = "Buy now!!! Limited offer!!!"


def post(number: int, excerpt: str = DRAFTED, title: str | None = None) -> dict[str, Any]:
    content = {"title": title or f"Post number {number}", "excerpt": excerpt}
    return draft(content, collection="posts", slug=f"post-{number}")


def approve(site: Site, number: int, excerpt: str, first: str = DRAFTED, **extra: str) -> str:
    """Draft post `number` (its excerpt `first`), then approve it with `excerpt`: two commits.
    The decision commit's sha."""
    name = f"p{number}.json"
    site.write(AGENT, name, post(number, first, extra.get("first_title")))
    site.reconcile()
    site.write(AGENT, name, post(number, excerpt, extra.get("title")))
    site.move(AGENT, name, "approved")
    site.reconcile()
    return site.git("rev-parse", "HEAD").strip()


def lessons_then_later(site: Site, before: int = 2, after: int = 4) -> str:
    """`before` approvals that teach FIXED, then `after` more that correct the same way; the
    commit between them (the lessons as of then)."""
    for number in range(1, before + 1):
        approve(site, number, FIXED)
    between = site.git("rev-parse", "HEAD").strip()
    for number in range(before + 1, before + after + 1):
        approve(site, number, FIXED)
    return between


def a_slip_between(site: Site) -> dict[str, str]:
    """good: two lessons teach FIXED; then a decision that rewrites FIXED into SLIP (the slip),
    an unrelated title fix, and bad; then four later approvals corrected to FIXED."""
    approve(site, 1, FIXED)
    approve(site, 2, FIXED)
    good = site.git("rev-parse", "HEAD").strip()
    approve(site, 3, FIXED)
    slip = approve(site, 4, SLIP, first=FIXED)
    approve(site, 5, FIXED, first=FIXED, first_title="Post five", title="Post number five")
    bad = site.git("rev-parse", "HEAD").strip()
    for number in range(6, 10):
        approve(site, number, FIXED)
    return {"good": good, "slip": slip, "bad": bad}
