"""The chaos run's checks of reviews by several curators (SPEC section 15), for its agent whose
drafts two curators review. Once the daemon is quiet, whatever was killed, reset or reverted:
- each review is one line of reviews.jsonl (no id twice, no curator twice for an item) and one
  commit: its own `review(...)` commit, or the decision or dispute commit it completed;
- reviews agree with where each item is: none for a draft in queue/, fewer than two curators for
  one in review/, differing verdicts for one in disputed/ (whose `reviews` key names the same
  curators), two or more for a decided one, which agree with its folder unless a curator settled
  a dispute (its commit names an adjudicator).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from feedbackd.core.reviews.reviewlog import ReviewRecord, read_reviews
from feedbackd.core.reviews.reviewplan import Agreed, Disputed, Pending, outcome
from tests.workspace_kit import Site

REVIEWED = "reviewed-writer"
CURATORS = ("Ada <ada@example.org>", "Bo <bo@example.org>", "Cy <cy@example.org>")
VERDICT_OF = {"approved": "approve", "rejected": "reject"}


def review_problems(site: Site, agent: str) -> list[str]:
    folder = site.agent(agent)
    log = folder / "reviews.jsonl"
    records = read_reviews(log.read_text()) if log.exists() else []
    lines = [line for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
    found = [] if len(lines) == len(records) else [f"{agent}: a review line twice in {lines}"]
    by_item: dict[str, list[ReviewRecord]] = {}
    for record in records:
        by_item.setdefault(record.item, []).append(record)
    commits = _review_commits(site, agent)
    for item, reviews in sorted(by_item.items()):
        curators = Counter(r.curator.email for r in reviews)
        found += [f"{agent}/{item}: {c} reviewed twice" for c, n in curators.items() if n > 1]
        made = commits.get(item, Counter())
        found += [f"{agent}/{item}: {c} has {n} review commits" for c, n in made.items() if n > 1]
    for path in sorted(folder.glob("*/*.json")):
        state = path.parent.name
        if state in ("queue", "review", "disputed", *VERDICT_OF):
            reviews = by_item.get(path.stem, [])
            made = commits.get(path.stem, Counter())
            found += _where_problems(site, path, state, reviews, made)
    return found


def _review_commits(site: Site, agent: str) -> dict[str, Counter[str]]:
    """For each item, its `review(...)` commits by curator's name."""
    text = site.git("log", "--format=%s", "--grep=^Feedback-Event: review$")
    counts: dict[str, Counter[str]] = {}
    prefix = f"review({agent}): "
    for subject in text.splitlines():
        if subject.startswith(prefix):
            item, _, rest = subject[len(prefix) :].partition(" by ")
            counts.setdefault(item, Counter())[rest.rpartition(" (")[0]] += 1
    return counts


def _where_problems(
    site: Site, path: Path, state: str, reviews: list[ReviewRecord], commits: Counter[str]
) -> list[str]:
    """What is wrong with the reviews of the item at `path`, given the folder it is in."""
    name, result = f"{path.parent.parent.name}/{path.stem}", outcome(reviews, 2)
    if state == "queue" and reviews:
        return [f"{name} waits in queue/ but has reviews {reviews}"]
    if state == "review" and not (reviews and isinstance(result, Pending)):
        return [f"{name} waits in review/ with reviews {reviews}"]
    if state == "review" and sum(commits.values()) != len(reviews):
        return [f"{name} waits in review/ with reviews {reviews} but review commits {commits}"]
    if state == "disputed":
        key = json.loads(path.read_text()).get("reviews", [])
        if not isinstance(result, Disputed) or {r["curator"] for r in key} != {
            str(r.curator) for r in reviews
        }:
            return [f"{name} is disputed, with reviews {reviews} and key {key}"]
    if state in VERDICT_OF:
        if isinstance(result, Pending):
            return [f"{name} is decided with reviews {reviews}"]
        settled = "Feedback-Adjudicator:" in _last_decision_message(site, path)
        if not settled and not (isinstance(result, Agreed) and result.verdict == VERDICT_OF[state]):
            return [f"{name} is in {state}/ but its reviews say {result}"]
    return []


def _last_decision_message(site: Site, path: Path) -> str:
    """The message of the last commit that put the item where it is."""
    rel = path.relative_to(site.root).as_posix()
    return site.git("log", "-1", "--format=%B", "--", rel)
