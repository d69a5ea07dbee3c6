"""The web panel: the agents, and for each agent what it has learned (Recent feedback, the snippet
as the agent reads it, the learning history), what waits for review (the queue, with Approve and
Reject-with-note), and per skill how its reputation, ratings and price moved.

Server-rendered HTML; the little JavaScript in static/panel.js only sends the curator's decisions
to the same API a script would use. No asset comes from another host.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from feedbackd.app.commands import learningstats, queries
from feedbackd.app.commands import lessonsources as lessons
from feedbackd.app.commands.evaluating import saved_eval
from feedbackd.app.ratings.rentals import buyer_named
from feedbackd.app.reviews.agreementread import curator_agreement
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.commitmsg import LogEntry, decider
from feedbackd.core.curation.feedbackjson import ENTRY_TYPES  # each has a badge colour
from feedbackd.core.curation.prompts import EXAMPLES_HEADING, LESSON_LINES, REJECTIONS_HEADING
from feedbackd.core.errors import FeedbackdError, NotFound
from feedbackd.core.people import display_name
from feedbackd.core.webusers import Access
from feedbackd.core.wording import counted
from feedbackd.web import charts
from feedbackd.web.api import STATUS_OF_CODE, Site, signed_in, without_workspace, work
from feedbackd.web.attempts import FailedAttempts
from feedbackd.web.evalcard import eval_card
from feedbackd.web.guard import SESSION_COOKIE, client_address
from feedbackd.web.html import e, page
from feedbackd.web.learningcard import learning_card
from feedbackd.web.reviewcards import agreement_card, disputed_draft, review_round

RECENT = 5
HISTORY_ROWS = 50  # the newest steps of the agent page's history
STATIC = {
    "panel.css": "text/css",
    "panel.js": "text/javascript",
    "favicon.svg": "image/svg+xml",
}
# What scripts call answers in JSON, even to a browser; any other path is a page of the panel.
SCRIPT_PATHS = ("/api/", "/static/", "/metrics", "/healthz")
Handler = Callable[[Request], Awaitable[Response]]


def routes(site: Site, access: Access, attempts: FailedAttempts) -> list[Route]:
    async def overview(request: Request) -> Response:
        runtime = await work(site.runtime)
        agents = await work(lambda: queries.agents_overview(runtime))
        status = await work(lambda: queries.workspace_status(runtime, []))
        curator = signed_in(request)
        return HTMLResponse(page("Agents", _overview(agents, status), signed_in=curator))

    async def agent_page(request: Request) -> Response:
        agent_id, curator = request.path_params["agent"], signed_in(request)
        runtime = await work(site.runtime)
        view = await work(lambda: _agent_view(site, agent_id, curator))
        title = view["summary"]["name"] or agent_id
        examples = runtime.settings.prompt.max_examples
        body = _agent_body(view, examples)
        return HTMLResponse(page(title, body, agent=agent_id, signed_in=curator))

    async def static(request: Request) -> Response:
        return _static_file(request.path_params["name"])

    async def icon(request: Request) -> Response:
        return _static_file("favicon.svg")

    return [
        Route("/", _as_page(site, overview), methods=["GET"]),
        Route("/agents/{agent}", _as_page(site, agent_page), methods=["GET"]),
        Route("/static/{name}", static, methods=["GET"]),
        Route("/favicon.ico", icon, methods=["GET"]),
        *_login_routes(access, attempts),
    ]


def _static_file(name: str) -> Response:
    if name not in STATIC:
        # The JSON error every other layer answers, not a page: a script or a browser's
        # console reads the same shape.
        raise NotFound(f"no file {name!r} in /static/", hint=f"the panel has {', '.join(STATIC)}")
    text = resources.files("feedbackd.web").joinpath("static", name).read_text("utf-8")
    return Response(text, media_type=f"{STATIC[name]}; charset=utf-8")


# --- pages that cannot be shown -----------------------------------------------------------------
def _as_page(site: Site, handler: Handler) -> Handler:
    """A page's refusals (an unknown agent is a 404) as a page for a browser, and as every
    error is (SPEC section 12, JSON) for a script that asks for the page."""

    async def answer(request: Request) -> Response:
        try:
            return await handler(request)
        except FeedbackdError as refused:
            if not _accepts_html(request):
                raise
            return refusal_page(refused, site.workspace, site.config)

    return answer


def refusal_page(
    refused: FeedbackdError, workspace: str, config: str | None = None
) -> HTMLResponse:
    """The message and hint the API would answer, with the same status, and a way back."""
    status = STATUS_OF_CODE.get(refused.code, 400)
    title = "Not found" if status == 404 else "Not shown"
    said = [without_workspace(text, workspace, config) for text in (refused.message, refused.hint)]
    hint = f'<p class="hint-line">{e(said[1])}</p>' if said[1] else ""
    body = f'<h1>{title}</h1><p class="problem">{e(said[0])}</p>{hint}{_BACK}'
    return HTMLResponse(page(title, body), status_code=status)


def wants_page(request: Request) -> bool:
    """A path no route takes, asked for by a browser (it accepts HTML) outside what scripts
    call: answered with a page, where a script gets the JSON error."""
    return not request.url.path.startswith(SCRIPT_PATHS) and _accepts_html(request)


def _accepts_html(request: Request) -> bool:
    """A browser's request: its Accept header names HTML."""
    return "text/html" in request.headers.get("accept", "")


def missing_page(request: Request) -> HTMLResponse:
    said = f"{request.method} {request.url.path}: the panel has no such page"
    body = f'<h1>Not found</h1><p class="problem">{e(said)}</p>{_BACK}'
    return HTMLResponse(page("Not found", body), status_code=404)


_BACK = '<p><a href="/">Back to the agents</a></p>'


def _agent_view(site: Site, agent_id: str, curator: str | None) -> dict[str, Any]:
    """Everything the agent page shows, read in one worker thread; the queue of what waits for
    `curator`'s review (None: for anyone's)."""
    runtime = site.runtime()
    summary = queries.agent_summary(runtime, agent_id)
    history = queries.learning_log(runtime, agent_id, None)
    why = _lessons_or_none(runtime, agent_id, history)
    linked = {line["commit"] for line in why}
    # The newest steps, and any older one that a lesson of the snippet links to.
    shown = [h for index, h in enumerate(history) if index < HISTORY_ROWS or h.commit in linked]
    return {
        "summary": summary,
        "recent": _recent_or_problem(runtime, agent_id),
        "snippet": queries.prompt_text(runtime, agent_id),
        "why": why,
        "queue": _queue_or_problem(runtime, agent_id, curator),
        "agreement": _agreement_or_problem(runtime, agent_id),
        "history": [queries.log_json(entry) | _history_words(entry) for entry in shown],
        "lessons": queries.skill_lessons(runtime, agent_id),
        "skills": [
            queries.skill_history(runtime, agent_id, skill["skill_id"]) | {"name": skill["name"]}
            for skill in summary["skills"]
        ],
        "reputation": queries.reputation(runtime, agent_id, None),
        "learning": learningstats.agent_stats(runtime, agent_id, "week"),
        "eval": _saved_eval_or_none(runtime, agent_id),
    }


def _saved_eval_or_none(runtime: Runtime, agent_id: str) -> dict[str, Any] | None:
    """The agent's last eval kept with --note; none when git cannot tell (the card then says how
    to keep one): the page shows what it can."""
    try:
        return saved_eval(runtime, agent_id)
    except FeedbackdError:
        return None


def _queue_or_problem(runtime: Runtime, agent_id: str, curator: str | None) -> dict[str, Any]:
    """The drafts waiting for the curator; a damaged reviews.jsonl (who may review what is then
    unknown) is said on the card, and the rest of the page is shown."""
    try:
        return {"drafts": queries.queue(runtime, agent_id, curator), "curator": curator}
    except FeedbackdError as error:
        return {"drafts": [], "curator": curator, "problem": error.message}


def _agreement_or_problem(runtime: Runtime, agent_id: str) -> dict[str, Any] | None:
    try:
        return curator_agreement(runtime, agent_id)
    except FeedbackdError as error:
        return {"problem": error.message}


def _recent_or_problem(runtime: Any, agent_id: str) -> dict[str, Any]:
    try:
        return queries.recent_feedback(runtime, agent_id, RECENT)
    except FeedbackdError as error:
        return {"entries": [], "total": 0, "problem": error.message}


def _lessons_or_none(runtime: Runtime, agent_id: str, history: list[LogEntry]) -> list[Any]:
    """Where each lesson of the snippet came from (`why`); none when feedback.json is corrupt
    (the Recent feedback card says so): the snippet is shown without links."""
    try:
        lines: list[Any] = lessons.why(runtime, agent_id, history)["lines"]
    except FeedbackdError:
        return []
    return lines


# --- the agents ---------------------------------------------------------------------------------
def _overview(agents: list[dict[str, Any]], status: dict[str, Any]) -> str:
    # review/ and disputed/ get columns once some draft waits there: a team of one curator
    # (review.required 1) never sees them.
    reviewing = any(agent["review"] or agent["disputed"] for agent in agents)
    rows = "".join(_agent_row(agent, reviewing) for agent in agents)
    empty = '<p class="empty">No agents yet: add a folder under _data/agents/.</p>'
    held = "<th>in review</th><th>disputed</th>" if reviewing else ""
    table = (
        f'<table class="agents"><thead><tr><th>agent</th><th>queued</th>{held}<th>approved</th>'
        "<th>rejected</th><th>feedback</th><th>skills</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )
    return f"<h1>Agents</h1>{_status_line(status)}{table if agents else empty}"


def _agent_row(agent: dict[str, Any], reviewing: bool) -> str:
    name = agent["name"] or agent["agent_id"]
    skills = ", ".join(skill["name"] for skill in agent["skills"]) or "—"
    entries = "corrupt" if agent["feedback_entries"] is None else agent["feedback_entries"]
    held = [("queued", "queued")]
    held += [("review", "in review"), ("disputed", "disputed")] if reviewing else []
    waiting = "".join(
        f'<td class="n{" waiting" if agent[key] else ""}" data-label="{label}">{agent[key]}</td>'
        for key, label in held
    )
    # data-label: on a phone each row is a card, and each count says what it counts.
    return (
        f'<tr><td class="agent"><a href="/agents/{e(agent["agent_id"])}">{e(name)}</a>'
        f' <span class="id">{e(agent["agent_id"])}</span></td>{waiting}'
        f'<td class="n" data-label="approved">{agent["approved"]}</td>'
        f'<td class="n" data-label="rejected">{agent["rejected"]}</td>'
        f'<td class="n" data-label="feedback">{e(entries)}</td>'
        f'<td class="skills" data-label="skills">{e(skills)}</td></tr>'
    )


def _status_line(status: dict[str, Any]) -> str:
    running = "running" if status.get("running") else "not running"
    problems = status.get("problems") or []
    items = "".join(f"<li>{e(problem)}</li>" for problem in problems)
    listed = f'<ul class="problems">{items}</ul>' if problems else ""
    return f'<p class="status {running.replace(" ", "-")}">daemon {running}</p>{listed}'


# --- one agent ----------------------------------------------------------------------------------
def _agent_body(view: dict[str, Any], max_examples: int) -> str:
    summary = view["summary"]
    name = summary["name"] or summary["agent_id"]
    counts = (
        f'<span class="chip">{summary["queued"]} queued</span>'
        f'<span class="chip">{summary["approved"]} approved</span>'
        f'<span class="chip">{summary["rejected"]} rejected</span>'
    )
    for key, said in (("review", "in review"), ("disputed", "disputed")):
        counts += f'<span class="chip">{summary[key]} {said}</span>' if summary[key] else ""
    return (
        f'<nav class="crumbs"><a href="/">Agents</a> / {e(summary["agent_id"])}</nav>'
        f'<h1>{e(name)}</h1><p class="counts">{counts}</p>'
        '<div class="columns">'
        f'<div class="column">{_recent_card(view["recent"], summary, max_examples)}'
        f"{_snippet_card(view['snippet'], view['why'])}"
        f"{_lessons_card(view['lessons'], summary['skills'])}</div>"
        f'<div class="column wide">{_queue_card(summary["agent_id"], view["queue"])}'
        f"{agreement_card(view['agreement'])}</div>"
        "</div>"
        f'<div class="columns learning-row">{learning_card(view["learning"])}'
        f"{eval_card(summary['agent_id'], view['eval'])}</div>"
        f"{_skills_section(view['skills'], view['reputation'])}"
        f"{_history_card(view['history'])}"
    )


def _recent_card(recent: dict[str, Any], summary: dict[str, Any], max_examples: int) -> str:
    entries = "".join(_entry(entry) for entry in recent["entries"])
    if recent.get("problem"):
        entries = f'<li class="problem">{e(recent["problem"])}</li>'
    elif not entries:
        entries = '<li class="empty">No feedback yet.</li>'
    injected = summary["examples_injected"] or 0
    footer = (
        f"Showing {len(recent['entries'])} of {recent['total']} · {counted(injected, 'example')}"
        f" injected into the prompt (at most {max_examples})"
    )
    return (
        '<section class="card recent"><h2>Recent feedback</h2>'
        f'<ul class="entries">{entries}</ul><footer>{e(footer)}</footer></section>'
    )


def _entry(entry: dict[str, Any]) -> str:
    kind = entry.get("type", "") if entry.get("type") in ENTRY_TYPES else "other"
    field = f'<code class="field">{e(entry["field"])}</code>' if entry.get("field") else ""
    when = entry.get("createdAt", "")
    if kind == "rejection":
        change = f'<p class="notes">{e(entry.get("notes") or "(no note)")}</p>'
    else:
        change = (
            f'<p class="diff"><del>{e(entry.get("original") or "")}</del>'
            f' <span aria-hidden="true">→</span> <ins>{e(entry.get("corrected") or "")}</ins></p>'
        )
    return (
        f'<li class="entry"><span class="badge {kind}">{kind}</span>{field}'
        f'<time datetime="{e(when)}">{e(when[:16].replace("T", " "))}</time>{change}</li>'
    )


def _snippet_card(text: str, why: list[dict[str, Any]]) -> str:
    if text:
        shown = _linked_snippet(text, why)
    else:
        shown = '<span class="empty">(empty: no corrections yet)</span>'
    hint = "prompt/feedback.md, exactly as the agent reads it"
    if any(line["commit"] for line in why):
        hint += "; each example leads to the decision it came from"
    return (
        '<section class="card snippet"><h2>Prompt snippet</h2>'
        f'<p class="hint">{e(hint)}</p><pre>{shown}</pre></section>'
    )


def _linked_snippet(text: str, why: list[dict[str, Any]]) -> str:
    """The snippet, escaped, its text unchanged, with each example's label line and each note
    a link to the row of its decision in the learning history. Lines are taken in turn (Example
    1, then 2, ...), so a value that holds such a line further on steals no link."""
    sources = {(line["section"], line["n"]): line for line in why if line["commit"]}
    section: str | None = None
    following = {"examples": 1, "avoid": 1}
    shown = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\n")
        section = {EXAMPLES_HEADING: "examples", REJECTIONS_HEADING: "avoid"}.get(body, section)
        found = LESSON_LINES[section].fullmatch(body) if section else None
        if section is None or found is None or int(found.group(1)) != following[section]:
            shown.append(e(line))
            continue
        source = sources.get((section, following[section]))
        following[section] += 1
        shown.append(_lesson_link(body, source) + line[len(body) :] if source else e(line))
    return "".join(shown)


def _lesson_link(text: str, source: dict[str, Any]) -> str:
    said = [source["item"], source["field"], source["curator"], source["commit"][:12]]
    title = " · ".join(str(part) for part in said if part)
    return (
        f'<a class="lesson" href="#commit-{e(source["commit"])}" title="{e(title)}">{e(text)}</a>'
    )


def _lessons_card(lessons: list[dict[str, str]], skills: list[dict[str, Any]]) -> str:
    """What each skill's low ratings taught (`prompt/skills/{skill}.md`), as the agent reads
    it; nothing for an agent that offers no skill and has no such file."""
    if not lessons and not skills:
        return ""
    names = {skill["skill_id"]: skill["name"] for skill in skills}
    blank = '<span class="empty">(empty)</span>'
    shown = "".join(
        f"<h3>{e(names.get(one['skill_id'], one['skill_id']))}</h3>"
        f'<p class="file">{e(one["file"])}</p><pre>{e(one["text"]) or blank}</pre>'
        for one in lessons
    )
    if not shown:
        shown = (
            '<p class="empty">No skill lessons yet: a skill\'s low ratings write them into'
            " prompt/skills/SKILL.md.</p>"
        )
    return (
        '<section class="card lessons"><h2>Skill lessons</h2>'
        f'<p class="hint">from low ratings, exactly as the agent reads them</p>{shown}</section>'
    )


def _queue_card(agent_id: str, queue: dict[str, Any]) -> str:
    drafts = queue["drafts"]
    body = "".join(_draft(agent_id, draft) for draft in drafts)
    if queue.get("problem"):
        body = f'<p class="problem">{e(queue["problem"])}</p>'
    elif not body:
        body = '<p class="empty">Nothing waits for review.</p>'
    hint = ""
    if queue["curator"]:  # with http.users_file: the drafts this curator has yet to review
        hint = f'<p class="hint">waiting for {e(display_name(queue["curator"]))}\'s review</p>'
    return (
        f'<section class="card queue"><h2>Queue <span class="count">{len(drafts)}</span></h2>'
        f"{hint}{body}</section>"
    )


def _draft(agent_id: str, draft: dict[str, Any]) -> str:
    head = (
        f"<header><h3>{e(draft.get('title', draft['id']))}</h3>"
        f'<span class="id">{e(draft["id"])}.{e(draft["format"])}</span></header>'
    )
    if "error" in draft:
        problem = f'<p class="problem">{e(draft["error"])}</p>'
        return f'<article class="draft broken">{head}{problem}</article>'
    if draft.get("waits") == "disputed":
        return disputed_draft(agent_id, draft, head)
    rows = "".join(_field_row(field) for field in draft["fields"])
    return (
        f'<article class="draft" data-agent="{e(agent_id)}" data-item="{e(draft["id"])}">{head}'
        f"{review_round(draft)}"
        '<table class="fields"><thead><tr><th>field</th><th>original</th>'
        f"<th>current (edit before approving)</th></tr></thead><tbody>{rows}</tbody></table>"
        '<div class="decide"><button type="button" class="approve">Approve</button>'
        '<label class="note">Note for the agent <textarea rows="2" '
        'placeholder="Why is it rejected?"></textarea></label>'
        '<button type="button" class="reject">Reject with note</button></div>'
        '<p class="result" role="status"></p></article>'
    )


def _field_row(field: dict[str, Any]) -> str:
    """One text field: what the agent wrote (struck through where a curator changed it) beside
    the current text, which the curator may still edit before approving."""
    original, current = field["original"], field["current"]
    if field["changed"]:
        before = f"<del>{e(original)}</del>"
    else:
        before = '<span class="same">unchanged</span>' if original is not None else "—"
    rows = min(10, current.count("\n") + len(current) // 40 + 1)
    return (
        f'<tr class="field{" changed" if field["changed"] else ""}">'
        f'<th scope="row"><code>{e(field["field"])}</code></th><td class="original">{before}</td>'
        f'<td><textarea rows="{rows}" name="{e(field["field"])}" data-current="{e(current)}"'
        f' aria-label="{e(field["field"])}">{e(current)}</textarea></td></tr>'
    )


def _skills_section(skills: list[dict[str, Any]], reputation: dict[str, Any]) -> str:
    if not skills:
        return ""
    scores = reputation.get("skills") or {}
    cards = "".join(_skill_card(skill, scores.get(skill["skill_id"], {})) for skill in skills)
    overall = reputation.get("reputation_score")
    return (
        f'<section class="skills"><h2>Skills <span class="score">reputation {overall}'
        f'</span></h2><div class="skill-grid">{cards}</div></section>'
    )


def _skill_card(skill: dict[str, Any], score: dict[str, Any]) -> str:
    count = score.get("feedback_count", 0)
    price = skill["prices"][-1]["price"] if skill["prices"] else None
    facts = f"{counted(count, 'rating')} · reputation {score.get('reputation_score', 0.5)}"
    facts += f" · price {price:g}" if price is not None else ""
    return (
        f'<article class="card skill"><h3>{e(skill["name"])}</h3>'
        f'<p class="facts">{e(facts)}</p>'
        f"{charts.line('Reputation', skill['reputation'], 'score', 0.0, 1.0)}"
        f"{charts.bars('Ratings', skill['ratings'], 'rating', 1, 5)}"
        f"{charts.steps('Price', skill['prices'], 'price')}</article>"
    )


def _history_card(shown: list[dict[str, Any]]) -> str:
    """The steps _agent_view chose to show, newest first."""
    rows = "".join(
        f'<tr id="commit-{e(h["commit"])}">'
        f'<td class="when"><time datetime="{e(h["date"])}">'
        f"{e(h['date'][:16].replace('T', ' '))}</time></td>"
        f'<td><span class="event {e(h["event"] or "")}">{e(h["event"] or "")}</span>'
        f"{_reverted_mark(h)}</td>"
        f'<td class="name">{e(h["item"] or h["skill"] or "")}</td>'
        f'<td class="who">{e(h["who"])}</td><td class="what">{e(h["what"])}</td></tr>'
        for h in shown
    )
    empty = '<p class="empty">Nothing learned yet.</p>'
    table = (
        '<table class="history"><thead><tr><th>when</th><th>event</th><th>item / skill</th>'
        f"<th>who</th><th>what</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    return f'<section class="card"><h2>Learning history</h2>{table if shown else empty}</section>'


def _reverted_mark(entry: dict[str, Any]) -> str:
    """A step that a `git revert` undid (the revert is a row of its own, newer)."""
    if not entry.get("reverted"):
        return ""
    return ' <span class="reverted" title="undone by a git revert">reverted</span>'


def _history_words(entry: LogEntry) -> dict[str, str]:
    """Who made a step and what it was, as a row of the history says them: the curator's name
    for a curator's step or a revert, the buyer for a rating, no one for feedbackd's own steps
    (drafts, prices, lessons, syncs), whoever's git identity committed them; what is a
    rejection's note, an approval's corrected fields, a price change, else the commit's
    summary."""
    summary = entry.subject.split(": ", 1)[-1]
    who = decider(entry)
    if entry.event == "rating":
        who = buyer_named(summary) or ""
    what = summary
    if entry.event == "reject":
        what = entry.note or "(no note)"
    elif entry.event == "approve" and entry.fields:
        what = ", ".join(entry.fields)
    elif entry.price_old and entry.price_new:
        what = f"price {entry.price_old} → {entry.price_new}"
    return {"who": who, "what": what}


# --- login (only when a token is set) ---------------------------------------------------------
def _login_routes(access: Access, attempts: FailedAttempts) -> list[Route]:
    async def form(request: Request) -> Response:
        return _login_page(_login_form(access, failed=False))

    async def login(request: Request) -> Response:
        address = client_address(request.scope)
        wait = attempts.wait_s(address)
        if wait is not None:  # refused before reading: even the right token, while guessing
            refusal = _login_page(_too_many(wait), status_code=429)
            refusal.headers["Retry-After"] = str(wait)
            return refusal
        posted = parse_qs((await request.body()).decode("utf-8", errors="replace"))
        value = (posted.get("token") or [""])[0]
        cookie = access.cookie_for(value) if access.guarded else None
        if cookie is None:
            attempts.failed(address)
            return _login_page(_login_form(access, failed=True), status_code=401)
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(SESSION_COOKIE, cookie, httponly=True, samesite="strict", path="/")
        return response

    return [Route("/login", form, methods=["GET"]), Route("/login", login, methods=["POST"])]


def _login_page(body: str, status_code: int = 200) -> HTMLResponse:
    return HTMLResponse(page("Sign in", body, script=False), status_code=status_code)


def _login_form(access: Access, *, failed: bool) -> str:
    problem = '<p class="problem">That is not the token.</p>' if failed else ""
    asked = (
        "your own token (its hash is your line of http.users_file on the server)"
        if access.users
        else "its access token (http.token_file on the server)"
    )
    return (
        "<h1>Sign in</h1>"
        f"<p>This feedbackd asks for {asked}.</p>"
        f'{problem}<form method="post" action="/login" class="login">'
        '<label>Token <input type="password" name="token" autocomplete="current-password"'
        ' required></label><button type="submit">Sign in</button></form>'
    )


def _too_many(wait_s: int) -> str:
    return (
        "<h1>Sign in</h1>"
        f'<p class="problem">Too many wrong tokens from your address: try again in {wait_s} s.'
        '</p><p><a href="/login">Back to the sign-in form</a></p>'
    )
