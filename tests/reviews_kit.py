"""Test helpers: drafts held for more reviews (review/) or disputed (disputed/), and the lines of
reviews.jsonl behind them, made by hand as a pass with `review.required` ≥ 2 leaves them."""

from __future__ import annotations

import hashlib
import itertools
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from feedbackd.core.reviews.disputefiles import with_reviews
from feedbackd.core.reviews.reviewlog import parse_review
from feedbackd.core.reviews.reviewplan import reviews_key
from feedbackd.core.timeutil import iso_ms
from tests.workspace_kit import Site, draft

ADA = "Ada Curator <ada@example.org>"
BO = "Bo Reviewer <bo@example.org>"
_IDS = itertools.count(1)


def review_line(item: str, curator: str, verdict: str, **version: Any) -> dict[str, Any]:
    """A review made now: an approval's `content` (the fields given), a rejection's `notes`."""
    line: dict[str, Any] = {"id": f"rv-test{next(_IDS):06d}", "item": item, "curator": curator}
    line["verdict"] = verdict
    if verdict == "approve":
        line["content"] = version
    else:
        line["notes"] = version.get("notes", "Not this one.")
    return {**line, "at": iso_ms(datetime.now(UTC))}


def add_reviews(site: Site, agent: str, lines: list[dict[str, Any]]) -> None:
    with (site.agent(agent) / "reviews.jsonl").open("a") as log:
        log.writelines(json.dumps(line) + "\n" for line in lines)


def hold_for_review(site: Site, agent: str, name: str, lines: list[dict[str, Any]]) -> Path:
    """The queued draft `name`, moved to review/ as it was, with its reviews so far."""
    queued = site.agent(agent) / "queue" / name
    held = site.agent(agent) / "review" / name
    held.parent.mkdir(exist_ok=True)
    queued.rename(held)
    add_reviews(site, agent, lines)
    return held


def hold_as_disputed(site: Site, agent: str, name: str, lines: list[dict[str, Any]]) -> Path:
    """The queued draft `name` in disputed/, as first drafted with the `reviews` key of
    `lines`, which go to reviews.jsonl."""
    queued = site.agent(agent) / "queue" / name
    disputed = site.agent(agent) / "disputed" / name
    disputed.parent.mkdir(exist_ok=True)
    records = [parse_review(json.dumps(line)) for line in lines]
    disputed.write_text(with_reviews(queued.read_bytes(), disputed, reviews_key(records)))
    queued.unlink()
    add_reviews(site, agent, lines)
    return disputed


# --- curators signed in over HTTP (http.users_file) ---------------------------------------------
ADA_TOKEN = "ada-" + "1" * 40
BO_TOKEN = "bo-" + "2" * 40


def users_line(person: str, token: str) -> str:
    """A line of http.users_file: the person and their token's SHA-256."""
    return f"{person} {hashlib.sha256(token.encode()).hexdigest()}\n"


def write_users(site: Site) -> None:
    """`users` beside feedbackd.yaml, naming Ada and Bo with their tokens (a commented file)."""
    lines = users_line(ADA, ADA_TOKEN) + users_line(BO, BO_TOKEN)
    (site.root / "users").write_text(f"# curators of this workspace\n{lines}")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def two_reviews_required(root: Path) -> Site:
    """A new workspace at `root` whose committed settings ask two curators' reviews of a draft."""
    site = Site(root)
    site.configure("review:\n  required: 2\n")
    site.git("add", "feedbackd.yaml")
    site.git("commit", "-q", "-m", "two reviews a draft")
    return site


def two_drafts_two_curators(root: Path) -> Site:
    """A new workspace at `root`: agent lark's qi-1 and qi-2 queued, and the curators' users
    file named by the settings (so each write over HTTP is the token's curator's)."""
    site = Site(root)
    site.write("lark", "qi-1.json", draft({"title": "Release 2.1", "summary": "Bug fixes."}))
    site.write("lark", "qi-2.json", draft({"title": "Release 2.2", "summary": "More fixes."}))
    site.reconcile()
    write_users(site)
    site.configure("http:\n  users_file: users\n")
    return site


def three_drafts(site: Site, note: str = "Say what changed for users.") -> Site:
    """Agent lark's qi-1 queued; qi-2 reviewed by Ada, in review/; qi-3 disputed: Ada approved
    an edit, Bo rejected it with `note`."""
    for n in (1, 2, 3):
        site.write("lark", f"qi-{n}.json", draft({"title": f"Release 2.{n}", "body": "Fixes."}))
    site.reconcile()
    hold_for_review(site, "lark", "qi-2.json", [review_line("qi-2", ADA, "approve", title="X")])
    faster = review_line("qi-3", ADA, "approve", title="Release 2.3: faster", body="Fixes.")
    hold_as_disputed(
        site, "lark", "qi-3.json", [faster, review_line("qi-3", BO, "reject", notes=note)]
    )
    return site
