"""Test helpers: drafts held for more reviews (review/) or disputed (disputed/), and the lines of
reviews.jsonl behind them, made by hand as a pass with `review.required` ≥ 2 leaves them."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from feedbackd.core.reviews.disputefiles import with_reviews
from feedbackd.core.reviews.reviewlog import parse_review
from feedbackd.core.reviews.reviewplan import reviews_key
from feedbackd.core.timeutil import iso_ms
from tests.workspace_kit import Site

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
