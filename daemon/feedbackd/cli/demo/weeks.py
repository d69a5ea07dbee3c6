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

from feedbackd.app.commands import actions
from feedbackd.app.reconcile import reconcile_all
from feedbackd.app.workspace.runtime import Runtime

WEEKS = 8
_DATES = ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE")


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
POSTS = [
    ("ts-utility-types", "TypeScript utility types", "Stop Retyping Your Models: Five TypeScript Utility Types", "Partial, Pick, Omit, Record and ReturnType remove most hand-written duplicate types."),  # noqa: E501
    ("docker-layers", "Docker layer caching", "Cut Docker Builds From Minutes to Seconds With Layer Order", "Copy the lockfile before the source and a code change no longer reinstalls every dependency."),  # noqa: E501
    ("git-bisect", "git bisect", "Find the Commit That Broke the Build in Seven Steps", "git bisect halves the suspects each step: 100 commits take seven builds, not a day."),  # noqa: E501
    ("ts-strict", "TypeScript strict mode", "Turn On TypeScript Strict Mode Without Stopping the Team", "Enable one flag a week and fix its errors in one pull request: how we did 40,000 lines."),  # noqa: E501
    ("pg-explain", "reading EXPLAIN in Postgres", "Read a Postgres Query Plan in Five Minutes", "Three numbers in EXPLAIN ANALYZE tell you where a slow query spends its time."),  # noqa: E501
    ("ci-cache", "CI caching", "Halve Your CI Bill by Caching the Right Three Folders", "Dependencies, build output and test fixtures: what to cache and what never to."),  # noqa: E501
    ("ts-zod", "runtime validation with Zod in TypeScript", "One Zod Schema for Your Types and Your API Checks", "Derive the TypeScript type from the schema and a bad payload fails at the door, not in a report."),  # noqa: E501
    ("feature-flags", "feature flags", "Ship on Friday: Feature Flags That Make Deploys Boring", "Deploy dark, turn on for staff, then for 5 % of users: the rollout we use for every change."),  # noqa: E501
    ("pg-vacuum", "Postgres autovacuum", "Why Your Postgres Table Is Ten Times Its Size", "Dead rows pile up when autovacuum falls behind; two settings fix most tables."),  # noqa: E501
    ("ts-generics-api", "typing an API client with TypeScript generics", "Type Every Endpoint of Your API Client Once With Generics", "One generic request function turns a route table into typed calls, and a renamed field into a compile error."),  # noqa: E501
    ("observability", "structured logging", "Logs You Can Query: Structured Logging in One Afternoon", "JSON lines with a request id turn grep sessions into one query."),  # noqa: E501
    ("code-review", "code review", "Review a Pull Request in Fifteen Minutes Without Missing Bugs", "Read the tests first, then the interfaces, then the rest: the order we review in."),  # noqa: E501
    ("ts-enums", "TypeScript enums versus unions", "Replace TypeScript Enums With Union Types and Lose Nothing", "String unions narrow, serialise and tree-shake; enums do none of the three."),  # noqa: E501
    ("pg-indexes", "Postgres partial indexes", "A Postgres Index a Tenth the Size: Partial Indexes", "Index only the open orders and the hot query reads 90 % fewer pages."),  # noqa: E501
    ("flaky-tests", "flaky tests", "Fix a Flaky Test by Waiting on a Condition, Not a Clock", "Most flaky tests sleep; waiting on what they need makes them fast and reliable."),  # noqa: E501
    ("ts-monorepo", "TypeScript project references", "Build a TypeScript Monorepo Three Times Faster", "Project references let tsc rebuild only the packages a change touched."),  # noqa: E501
    ("rate-limits", "rate limiting", "Rate Limits That Never Lock Out Your Best Customers", "A token bucket per key, with bursts: what we run in front of our API."),  # noqa: E501
    ("pg-migrations", "zero-downtime Postgres migrations", "Rename a Postgres Column Without Taking the Site Down", "Add, backfill, switch reads, drop: four deploys and no lock."),  # noqa: E501
    ("ts-errors", "error handling in TypeScript", "Typed Errors in TypeScript: Return Them, Do Not Throw", "A Result type makes every failure visible at the call site."),  # noqa: E501
    ("docker-compose", "Docker Compose for local development", "One Command to a Working Dev Setup With Docker Compose", "A new hire runs docker compose up and has the app, database and queue in two minutes."),  # noqa: E501
    ("git-hooks", "git hooks", "Catch Secrets Before They Reach the Remote With a Pre-Commit Hook", "A ten-line hook stops keys and tokens at the commit, where they are free to remove."),  # noqa: E501
    ("ts-decorators", "TypeScript decorators", "Add Logging to Every Service Method With One TypeScript Decorator", "Standard decorators wrap a method in five lines; here is one that times calls."),  # noqa: E501
    ("pg-json", "JSONB in Postgres", "When JSONB Beats a Table, and When It Costs You", "JSONB suits sparse attributes; filter on a key often and it wants a column."),  # noqa: E501
    ("on-call", "on-call handovers", "An On-Call Handover That Takes Five Minutes", "Three questions at every handover and nothing gets lost between shifts."),  # noqa: E501
]  # fmt: skip
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


def _post(week: int, n: int, topic: tuple[str, str, str, str]) -> Draft:
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
PRODUCTS = [
    ("sku-4301", "Ridge 28 Daypack", "28 litres, a rain cover and a hip belt for a full day out", "A 28 l daypack with a stowed rain cover, hip-belt pockets and a 1.1 kg frame. Fits a 3 l bladder."),  # noqa: E501
    ("sku-4302", "Summit Down Jacket", "650-fill down that packs into its own pocket", "650-fill responsibly sourced down, 380 g, packs into its chest pocket. Warm to -5 °C."),  # noqa: E501
    ("sku-4303", "Basecamp 2 Tent", "Two people, 2.4 kg, pitched in five minutes", "A two-person tent at 2.4 kg with two doors and a porch; pitches fly-first in the rain."),  # noqa: E501
    ("sku-4304", "Trail Runner GTX", "Waterproof trail shoes with a 4 mm lug", "Gore-Tex trail running shoes with 4 mm lugs and a rock plate. 290 g a shoe (UK 8)."),  # noqa: E501
    ("sku-4305", "Ember Travel Mug", "Coffee still hot after three hours", "A 300 ml vacuum mug that keeps drinks hot for 3 hours and fits car cup holders. Leak-proof lid."),  # noqa: E501
    ("sku-4306", "Alpine 45 Backpack", "45 litres with a back panel that breathes", "A 45 l trekking pack with a ventilated mesh back, adjustable torso length and a 1.6 kg weight."),  # noqa: E501
    ("sku-4307", "Merino Base Layer", "Wear it three days without it smelling", "A 200 g/m² merino long-sleeve base layer that resists odour for days. Machine washable."),  # noqa: E501
    ("sku-4308", "Trek Poles Carbon", "Carbon poles at 220 g each, folding to 38 cm", "Carbon trekking poles, 220 g each, folding to 38 cm with cork grips and tungsten tips."),  # noqa: E501
    ("sku-4309", "Lumen 400 Headlamp", "400 lumens, USB-C and a red mode for camp", "A 400-lumen rechargeable headlamp with USB-C charging, a red night mode and 40 h on low."),  # noqa: E501
    ("sku-4310", "Stormshell Rain Jacket", "Three-layer waterproof that fits in a pocket", "A 3-layer 20,000 mm waterproof jacket with pit zips, 310 g, packs into its hood."),  # noqa: E501
    ("sku-4311", "Canyon 20 Hydration Pack", "A 2 l bladder and room for a jacket", "A 20 l hydration pack with a 2 l bladder, a magnetic hose clip and room for a shell."),  # noqa: E501
    ("sku-4312", "Camp Stove Mini", "Boils a litre in three and a half minutes", "A 75 g canister stove that boils 1 l in 3.5 minutes, with a piezo igniter and a case."),  # noqa: E501
    ("sku-4313", "Valley Sleeping Bag", "Comfort to 2 °C at 900 g", "A 900 g synthetic sleeping bag rated comfort 2 °C, with a two-way zip and a compression sack."),  # noqa: E501
    ("sku-4314", "Roam Travel Backpack", "Carry-on sized, opens flat like a suitcase", "A 40 l carry-on travel backpack that opens flat, with a laptop sleeve and stowable straps."),  # noqa: E501
    ("sku-4315", "Fleece Midlayer 200", "The fleece you reach for every morning", "A 200-weight recycled fleece with a full zip and hand pockets. 420 g in size M."),  # noqa: E501
    ("sku-4316", "Gaiter Pro", "Keeps snow and scree out of your boots", "Waterproof knee-high gaiters with a front zip, a steel-cored strap and a boot hook."),  # noqa: E501
    ("sku-4317", "Insulated Bottle 750", "Ice still there after 24 hours", "A 750 ml double-walled steel bottle: cold for 24 h, hot for 12. Wide mouth, no plastic taste."),  # noqa: E501
    ("sku-4318", "Approach Shoe Rock", "Sticky rubber for scrambles, comfort for the walk in", "Approach shoes with sticky Vibram rubber at the toe and a cushioned heel for long walk-ins."),  # noqa: E501
    ("sku-4319", "Bivvy Bag Lite", "A 280 g shelter for nights you did not plan", "A 280 g waterproof breathable bivvy bag with a mesh head opening. Fits over any sleeping bag."),  # noqa: E501
    ("sku-4320", "Summit 60 Backpack", "60 litres for a week out, 1.9 kg", "A 60 l expedition pack at 1.9 kg with a removable lid, ice-axe loops and a load-lifting frame."),  # noqa: E501
    ("sku-4321", "Solar Charger 21W", "Charges a phone in the sun in two hours", "A folding 21 W solar panel with two USB ports that charges a phone in about 2 h of full sun."),  # noqa: E501
    ("sku-4322", "Wool Hiking Socks", "Cushioned where boots rub, thin where they do not", "Merino hiking socks with a cushioned heel and toe and a thin instep. Sold as two pairs."),  # noqa: E501
    ("sku-4323", "Camp Chair Compact", "Sits like a real chair, packs like a water bottle", "A 950 g folding camp chair that holds 120 kg and packs to the size of a 1 l bottle."),  # noqa: E501
    ("sku-4324", "Dry Bag Set", "Three sizes, one colour each, nothing gets wet", "A set of three roll-top dry bags (5, 10 and 20 l) in three colours, so you know which is which."),  # noqa: E501
]  # fmt: skip
PRODUCT_NOTES = [
    "Keyword stuffing: write for a person choosing a product, with what it weighs or holds.",
    "Wrong product: this describes the 35 l pack, not this one.",
]
PRODUCT_WEEKS = ["RCC", "CCC", "RCC", "CCU", "CCU", "CCU", "CUU", "CUU"]


def _product(week: int, n: int, item: tuple[str, str, str, str]) -> Draft:
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
