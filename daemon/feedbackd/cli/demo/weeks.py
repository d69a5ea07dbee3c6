"""Eight weeks of curation for `make run`'s demo, made as they would have happened: each week an
agent's drafts arrive (one pass commits them), and a curator decides each a day or three later
with `approve` or `reject`, the commands a curator runs. The passes are feedbackd's own; only
the time is told: the decisions' (Runtime.clock) and git's (GIT_AUTHOR_DATE, GIT_COMMITTER_DATE).

Two agents on different topics, each getting better at what its curator keeps correcting: the
content writer learns to title a post by what the reader gains and to open on a fact; the SEO
helper learns to stop stuffing keywords. Every draft carries the `brief` it was written from.

Something for `eval` and `bisect` to find: the content writer ends a post it has not yet got
right with the same stock call to action, which its curator corrects each time (so the lessons
of a week would have saved the next weeks' corrections), and in week 7 the SEO helper's curator,
covering one day of that queue, pastes the shop's banner into a post's call to action: a slip
that makes the lessons worse until newer corrections push it out of the snippet.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from feedbackd.app.commands import actions
from feedbackd.app.reconcile import reconcile_all
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.edges.files import read_file_text

WEEKS = 8
_DATES = ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE")
Row = tuple[str, str, str, str]


def _rows(table: str) -> list[Row]:
    """A table of the drafts' texts, four to a row: data, kept beside this module in
    history.json."""
    data = json.loads(read_file_text(Path(__file__).with_name("history.json")))
    return [(a, b, c, d) for a, b, c, d in data[table]]


@dataclass(frozen=True)
class Draft:
    """One draft as the agent wrote it, and how its curator decided it: `R`ejected with
    `notes`, `C`orrected (the fields in `fixes`) or approved `U`nedited."""

    item: str
    brief: str
    content: dict[str, object]
    outcome: str
    fixes: dict[str, str]
    notes: str = ""
    place: dict[str, str] | None = None  # the site's collection and slug
    curator: str | None = None  # who decided it, when not the agent's own curator


@dataclass(frozen=True)
class Agent:
    agent_id: str
    curator: str
    hour: int  # when its drafts arrive on Mondays
    weeks: list[list[Draft]]


# --- the content writer: developer blog posts ----------------------------------------------------
# (slug, subject, the title its curator wants, the excerpt its curator wants)
POSTS = _rows("posts")
POST_NOTES = [
    "Too generic: name one real project and what it changed.",
    "This reads like a summary of the docs; show the numbers from our own setup.",
    "Lead with the problem the reader has, not with a definition.",
]
# Per week, each draft's outcome: rejections and corrections grow rarer as the lessons land.
POST_WEEKS = ["RCC", "RCC", "RCU", "CCU", "CCU", "CUU", "CCU", "CUU"]
# The call to action that ends a post: the agent's stock one, and the one its curator wants.
STOCK_CTA = "Thanks for reading! If you liked this post, please like and share it."
WANTED_CTA = "Get a post like this every Tuesday: subscribe to the engineering newsletter."
# Week 7's slip: the shop's banner pasted over a post's right call to action, by Tom.
SLIP_ITEM, SLIP_CTA = "qi-021", "Free shipping on orders over 50 EUR: shop the outdoor sale now!"
SLIP_CURATOR = "Tom Okafor <tom@example.org>"


def _post(week: int, n: int, topic: Row) -> Draft:
    slug, subject, title, excerpt = topic
    outcome = POST_WEEKS[week][n]
    early = week < 4  # the first weeks' drafts open on a definition: the excerpt is fixed too
    weak_title = f"A Complete Guide to {subject}" if n % 2 else f"All About {subject}"
    weak_excerpt = f"In this post we will take a look at {subject} and why it is important."
    wrote_title = title if outcome == "U" else weak_title
    wrote_excerpt = excerpt if outcome == "U" or (outcome == "C" and not early) else weak_excerpt
    wrote_cta = WANTED_CTA if outcome == "U" else STOCK_CTA
    fixes = {"title": title}
    if wrote_excerpt != excerpt:
        fixes["excerpt"] = excerpt
    if wrote_cta != WANTED_CTA:
        fixes["cta"] = WANTED_CTA
    item = f"qi-{week * 3 + n + 1:03d}"
    if item == SLIP_ITEM:  # a draft with nothing to fix, "fixed" into the slip
        outcome, fixes = "C", {"cta": SLIP_CTA}
    return Draft(
        item=item,
        brief=f"A post on {subject} for the engineering blog.",
        content={"title": wrote_title, "excerpt": wrote_excerpt, "cta": wrote_cta},
        place={"collection": "posts", "slug": slug},
        outcome=outcome,
        fixes=fixes if outcome == "C" else {},
        notes=POST_NOTES[week % len(POST_NOTES)] if outcome == "R" else "",
        curator=SLIP_CURATOR if item == SLIP_ITEM else None,
    )


# --- the SEO helper: an outdoor shop's product pages ---------------------------------------------
# (sku, product, the tagline its curator wants, the meta description its curator wants)
PRODUCTS = _rows("products")
PRODUCT_NOTES = [
    "Keyword stuffing: write for a person choosing a product, with what it weighs or holds.",
    "Wrong product: this describes the 35 l pack, not this one.",
]
PRODUCT_WEEKS = ["RCC", "CCC", "RCC", "CCU", "CCU", "CCU", "CUU", "CUU"]


def _product(week: int, n: int, item: Row) -> Draft:
    sku, name, tagline, description = item
    outcome = PRODUCT_WEEKS[week][n]
    noun = name.split()[-1].lower()
    weak_tagline = f"The best {noun} ever made, amazing quality!!!"
    weak_description = f"Buy the {name}. Best {noun}. Cheap {noun} online, {noun} sale."
    good_tagline = outcome == "U" or week >= 3  # the tagline lesson lands first
    wrote_tagline = tagline if good_tagline else weak_tagline
    wrote_description = description if outcome == "U" else weak_description
    fixes = {"seo.metaDescription": description}
    if wrote_tagline != tagline:
        fixes["tagline"] = tagline
    return Draft(
        item=sku,
        brief=f"Product page copy for the {name}.",
        content={
            "name": name,
            "tagline": wrote_tagline,
            "seo": {"metaTitle": f"{name} | Outdoor Shop", "metaDescription": wrote_description},
        },
        place={"collection": "products", "slug": name.lower().replace(" ", "-")},
        outcome=outcome,
        fixes=fixes if outcome == "C" else {},
        notes=PRODUCT_NOTES[week % len(PRODUCT_NOTES)] if outcome == "R" else "",
    )


def agents() -> list[Agent]:
    posts = [[_post(w, n, POSTS[w * 3 + n]) for n in range(3)] for w in range(WEEKS)]
    products = [[_product(w, n, PRODUCTS[w * 3 + n]) for n in range(3)] for w in range(WEEKS)]
    return [
        Agent("content-writer", "Maya Chen <maya@example.org>", 9, posts),
        Agent("seo-helper", "Tom Okafor <tom@example.org>", 14, products),
    ]


def history_start(today: datetime) -> datetime:
    """The Monday WEEKS weeks before this week's: the history ends with last week."""
    midnight = today.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return midnight - timedelta(days=midnight.weekday(), weeks=WEEKS)


# --- playing it ---------------------------------------------------------------------------------
@contextmanager
def git_dates() -> Iterator[None]:
    """GIT_*_DATE as the history sets them, put back as they were after it."""
    saved = {name: os.environ.get(name) for name in _DATES}
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def date_git(moment: datetime) -> None:
    """git dates the commits that follow at `moment` (inside git_dates)."""
    for name in _DATES:
        os.environ[name] = moment.strftime("%Y-%m-%dT%H:%M:%S+0000")


def at(runtime: Runtime, moment: datetime) -> Runtime:
    """The runtime whose passes decide at `moment`, git dating its commits so too."""
    date_git(moment)
    return replace(runtime, clock=lambda: moment)


def play(runtime: Runtime, start: datetime) -> int:
    """The weeks from `start`, each agent's drafts then its curator's decisions; the number of
    decisions made."""
    decided = 0
    for week in range(WEEKS):
        monday = start + timedelta(weeks=week)
        for agent in agents():
            arrived = monday + timedelta(hours=agent.hour)
            _arrive(at(runtime, arrived), agent.agent_id, agent.weeks[week], arrived)
            for n, draft in enumerate(agent.weeks[week]):
                # Tuesday to Thursday, at an hour that moves from week to week
                when = arrived + timedelta(days=1 + n, hours=1 + (week + n) % 4)
                curator = draft.curator or agent.curator
                _decide(at(runtime, when).with_curator(curator), agent.agent_id, draft)
                decided += 1
    return decided


def _arrive(runtime: Runtime, agent_id: str, drafts: list[Draft], when: datetime) -> None:
    queue = runtime.workspace.agent(agent_id).queue
    written = []
    for draft in drafts:
        path = queue / f"{draft.item}.json"
        doc = {
            "id": draft.item,
            "agentId": agent_id,
            **(draft.place or {}),
            "generatedAt": when.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "brief": draft.brief,
            "contentData": draft.content,
        }
        path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(path)
    # The agent wrote each draft whole: its pass need not wait for the files to settle.
    reconcile_all(runtime, [agent_id], written_whole=frozenset(written))


def _decide(runtime: Runtime, agent_id: str, draft: Draft) -> None:
    if draft.outcome == "R":
        actions.reject(runtime, agent_id, draft.item, draft.notes)
    else:
        actions.approve(runtime, agent_id, draft.item, draft.fixes or None)
