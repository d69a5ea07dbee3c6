"""The JSON routes: the seeds' own (webhouse CMS feedback, AgentBnB ratings and reputation) with
their shapes, and feedbackd's (agents, queue, decisions, prompt, log, status).

Each route reads its input, calls one function of app/commands/actions.py or
app/commands/queries.py in a worker thread (they take the workspace's write lock and run git), and
answers with what the matching command prints with --json.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from feedbackd.app.commands import actions, exportwrite, learningstats, queries, submitting
from feedbackd.app.commands import lessonsources as lessons
from feedbackd.app.report import Report
from feedbackd.app.reviews import agreementread
from feedbackd.app.workspace.agentfiles import existing_agent
from feedbackd.app.workspace.configfile import config_path
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.curation.exportrows import STREAMED
from feedbackd.core.curation.feedback import check_record
from feedbackd.core.errors import Busy, FeedbackdError, InvalidFeedback, UsageError
from feedbackd.core.formats.jsontext import load_json_object, refuse_unknown_keys
from feedbackd.core.ids import validate_id
from feedbackd.core.people import Person
from feedbackd.core.ratings.records import InvalidRating, parse_rating
from feedbackd.core.timeutil import iso_ms
from feedbackd.core.websafety import CURATOR_STATE
from feedbackd.core.webusers import acting_curator
from feedbackd.core.wording import counted
from feedbackd.edges.clock import utcnow
from feedbackd.edges.files import FileState, file_state

T = TypeVar("T")
MAX_LIMIT = 100
_WHOLE_NUMBER = re.compile(r"[0-9]{1,9}")  # more digits are never a sensible limit
APPROVE_KEYS = frozenset({"curator", "edits"})
REJECT_KEYS = frozenset({"notes", "curator"})


class Site:
    """The workspace a server answers for. Settings are read again whenever the configuration
    file changes (or appears, or goes), so an edited feedbackd.yaml counts at the next request,
    as it does for the daemon and the commands; an unchanged one is not parsed again."""

    def __init__(self, workspace: str, config: str | None) -> None:
        self.workspace = workspace
        self.config = config
        self.exports = 0  # exports streaming now (counted on the event loop alone)
        self._lock = threading.Lock()
        self._seen: tuple[str | None, FileState | None] | None = None
        self._runtime: Runtime | None = None

    def runtime(self, curator: str | None = None, *, signed_in: bool = False) -> Runtime:
        with self._lock:
            root = Path(self.workspace)
            seen = _file_state(config_path(self.config, root))
            if self._runtime is None or seen != self._seen:
                opened = Runtime.open(self.workspace, self.config)
                # A request does not hang on a busy workspace: it answers 503 busy instead.
                self._runtime = opened.waiting_at_most(opened.settings.http.write_wait_s)
                self._seen = seen
            runtime = self._runtime
        return runtime.with_curator(curator, signed_in=signed_in)


def _file_state(path: Path | None) -> tuple[str | None, FileState | None]:
    return (None, None) if path is None else (str(path), file_state(path))


async def work(function: Callable[[], T]) -> T:
    """Run blocking work (files, git, the write lock) off the event loop."""
    return await run_in_threadpool(function)


async def json_object(request: Request, allowed: Collection[str] | None = None) -> dict[str, Any]:
    """The request body as a JSON object, read as strictly as every JSON feedbackd accepts;
    with `allowed`, a key outside it is refused too. InvalidFeedback (400) for anything else."""
    body = await request.body()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidFeedback(
            f"the body is not UTF-8 (byte {exc.start})", hint="send JSON encoded as UTF-8"
        ) from None
    data = load_json_object(text, "the body")
    if allowed is not None:
        refuse_unknown_keys(data, allowed)
    return data


def limit_of(request: Request, default: int) -> int:
    """`?limit=N`: a whole number; above MAX_LIMIT counts as MAX_LIMIT."""
    text = request.query_params.get("limit")
    if text is None:
        return default
    # ASCII digits only: str.isdigit() also passes "²", which int() refuses.
    if not _WHOLE_NUMBER.fullmatch(text):
        raise InvalidFeedback(
            f"limit {_shown(text)} is not a whole number (digits 0-9, at most 9 of them)",
            hint=f"e.g. limit=10; at most {MAX_LIMIT} are listed",
        )
    return min(int(text), MAX_LIMIT)


def _shown(text: str) -> str:
    """A value from the request as a message quotes it: cut short, so a megabyte of digits is
    not sent back."""
    return repr(text if len(text) <= 40 else text[:40] + "…")


def report_json(report: Report, root: Path) -> dict[str, Any]:
    """What `approve --json` and `reject --json` print."""
    return {
        "events": [event.to_json() for event in report.events],
        "problems": [problem.line(root) for problem in report.problems],
        "warnings": report.warnings,
    }


def signed_in(request: Request) -> str | None:
    """The curator the request's token names (http.users_file), None without a users file."""
    curator: str | None = request.scope.get("state", {}).get(CURATOR_STATE)
    return curator


def acting(request: Request, named: str | None) -> str | None:
    """Who a write is made as: with a users file, the token's curator (a body naming another
    is refused, 403); else the curator the body names, if any."""
    curator = signed_in(request)
    return named if curator is None else acting_curator(Person.parse(curator), named)


def optional_string(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidFeedback(f"{key} must be a string")
    return value


def routes(site: Site) -> list[Route]:
    return [
        *_webhouse_routes(site),
        *_agentbnb_routes(site),
        *_agent_routes(site),
        *_why_routes(site),
        *_workspace_routes(site),
        *_learning_routes(site),
    ]


# --- webhouse CMS -----------------------------------------------------------------------------
def _webhouse_routes(site: Site) -> list[Route]:
    async def recent(request: Request) -> Response:
        agent, limit = request.path_params["agent"], limit_of(request, 10)
        runtime = await work(site.runtime)
        await work(lambda: existing_agent(runtime, agent))
        return JSONResponse(await work(lambda: queries.recent_feedback(runtime, agent, limit)))

    async def record(request: Request) -> Response:
        agent = request.path_params["agent"]
        data = check_record(await json_object(request))
        curator = acting(request, None)
        runtime = await work(lambda: site.runtime(curator))
        await work(lambda: existing_agent(runtime, agent))
        entry = await work(lambda: actions.record(runtime, agent, data))
        return JSONResponse(entry.to_json())

    path = "/api/cms/agents/{agent}/feedback"
    return [Route(path, recent, methods=["GET"]), Route(path, record, methods=["POST"])]


# --- AgentBnB -----------------------------------------------------------------------------------
def _agentbnb_routes(site: Site) -> list[Route]:
    async def submit(request: Request) -> Response:
        data = await json_object(request)
        issues = rating_issues(data)
        if issues:
            return JSONResponse({"error": "Validation failed", "issues": issues}, 400)
        runtime = await work(site.runtime)
        try:
            event, _ = await work(lambda: submitting.submit_rating(runtime, json.dumps(data), None))
        except InvalidFeedback as error:
            return JSONResponse({"error": "Validation failed", "issues": [error.message]}, 400)
        received = {"feedback_id": data.get("transaction_id"), "received_at": iso_ms(utcnow())}
        answer = {**received, "commit": event.commit, "warnings": list(event.warnings)}
        return JSONResponse(answer, status_code=201)

    async def ratings(request: Request) -> Response:
        skill = request.path_params["skill"]
        query = request.query_params
        limit = limit_of(request, 20)
        runtime = await work(site.runtime)
        return JSONResponse(
            await work(
                lambda: queries.feedback_list(
                    runtime, skill, query.get("agent"), query.get("since"), limit
                )
            )
        )

    async def reputation(request: Request) -> Response:
        agent = request.path_params["agent"]
        runtime = await work(site.runtime)
        report = await work(lambda: queries.reputation(runtime, agent, None))
        return JSONResponse({**report, "score": report["reputation_score"]})

    return [
        Route("/api/feedback", submit, methods=["POST"]),
        Route("/api/feedback/{skill}", ratings, methods=["GET"]),
        Route("/api/reputation/{agent}", reputation, methods=["GET"]),
    ]


def rating_issues(data: dict[str, Any]) -> list[str]:
    """Every problem of a rating sent to `POST /api/feedback`, all at once. Over HTTP the
    rating names its requester itself: the configured agent_id is the server's, not the
    caller's."""
    try:
        parse_rating(data, requester=None, now=utcnow(), ask="add requester_agent")
    except InvalidRating as error:
        return list(error.issues)
    except InvalidFeedback as error:
        return [error.message]
    return []


# --- agents and their queues ----------------------------------------------------------------------
def _agent_routes(site: Site) -> list[Route]:
    async def agents(request: Request) -> Response:
        runtime = await work(site.runtime)
        return JSONResponse({"agents": await work(lambda: queries.agents_overview(runtime))})

    async def agent(request: Request) -> Response:
        agent_id = request.path_params["agent"]
        runtime = await work(site.runtime)
        return JSONResponse(await work(lambda: queries.agent_summary(runtime, agent_id)))

    async def queue(request: Request) -> Response:
        """The drafts waiting for the curator's review: the token's (http.users_file), else the
        one `?curator=` names, else anyone's (SPEC section 15)."""
        agent_id = request.path_params["agent"]
        curator = acting(request, request.query_params.get("curator"))
        runtime = await work(site.runtime)
        drafts = await work(lambda: queries.queue(runtime, agent_id, curator))
        return JSONResponse({"agent_id": agent_id, "drafts": drafts})

    async def prompt(request: Request) -> Response:
        agent_id = request.path_params["agent"]
        runtime = await work(site.runtime)
        await work(lambda: existing_agent(runtime, agent_id))
        text = await work(lambda: queries.prompt_text(runtime, agent_id))
        return PlainTextResponse(text, media_type="text/markdown; charset=utf-8")

    base = "/api/agents/{agent}"
    return [
        Route("/api/agents", agents, methods=["GET"]),
        Route(base, agent, methods=["GET"]),
        Route(f"{base}/queue", queue, methods=["GET"]),
        Route(f"{base}/queue/{{item}}/approve", _approve(site), methods=["POST"]),
        Route(f"{base}/queue/{{item}}/reject", _reject(site), methods=["POST"]),
        Route(f"{base}/prompt", prompt, methods=["GET"]),
        Route(f"{base}/prompt", _prompt_for(site), methods=["POST"]),
        Route(f"{base}/export", _export(site), methods=["GET"]),
    ]


def _why_routes(site: Site) -> list[Route]:
    """Where each lesson of the snippet came from: what `why --json` prints."""

    async def why(request: Request) -> Response:
        agent_id = request.path_params["agent"]
        runtime = await work(site.runtime)
        return JSONResponse(await work(lambda: lessons.why(runtime, agent_id)))

    return [Route("/api/agents/{agent}/why", why, methods=["GET"])]


def _prompt_for(site: Site) -> Callable[[Request], Any]:
    async def prompt_for(request: Request) -> Response:
        """The snippet with the examples most relevant to the body's task: `{"text": "..."}` or
        an item object (SPEC section 13); text/markdown, as GET gives the plain snippet."""
        agent_id = request.path_params["agent"]
        document = await json_object(request)
        runtime = await work(site.runtime)
        text = await work(lambda: _snippet_for(runtime, agent_id, document))
        return PlainTextResponse(text, media_type="text/markdown; charset=utf-8")

    return prompt_for


def _snippet_for(runtime: Runtime, agent_id: str, document: dict[str, Any]) -> str:
    # Ranking loads numpy: imported in the worker thread when first asked, so neither the
    # server's start nor its event loop waits for it.
    from feedbackd.app.commands.promptfor import prompt_for
    from feedbackd.core.curation.relevance import task_of_object

    existing_agent(runtime, agent_id)
    return prompt_for(runtime, agent_id, task_of_object(document, "the body"))


def _export(site: Site) -> Callable[[Request], Any]:
    """`GET /api/agents/{id}/export?format=&at=`: the export streamed as `feedbackd export`
    prints it. Everything a request can get wrong is refused before the answer starts."""

    async def export(request: Request) -> Response:
        agent_id, query = request.path_params["agent"], request.query_params
        _streamed(query.get("format"), agent_id)  # before any git is read
        runtime = await work(site.runtime)
        most = runtime.settings.http.max_exports
        if site.exports >= most:
            return too_many_exports(most)
        site.exports += 1
        try:
            opened = await work(
                lambda: exportwrite.open_export(
                    runtime, agent_id, query.get("format"), query.get("at")
                )
            )
        except BaseException:
            site.exports -= 1
            raise
        kind = "application/json" if opened.format == "dspy" else "application/x-ndjson"
        name = f"{agent_id}-{opened.format}.{'json' if opened.format == 'dspy' else 'jsonl'}"
        return HeldStream(
            site,
            opened.text(),  # a plain iterator: starlette reads it in a worker thread
            media_type=f"{kind}; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )

    return export


class HeldStream(StreamingResponse):
    """An export's stream, which counts among the site's exports until it ends, however it
    ends (the whole answer sent, the client gone, cut for not reading, the server stopping)."""

    def __init__(self, site: Site, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.site = site

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.site.exports -= 1


def too_many_exports(most: int) -> Response:
    """503 busy: each export reads the history and holds memory while it streams, so only
    http.max_exports run at once (a client that stops reading would otherwise hold one each)."""
    message = f"{counted(most, 'export')} already streaming, the most at once; try again shortly"
    headers = {"Retry-After": str(RETRY_BUSY_S)}
    return JSONResponse({"error": "busy", "message": message}, 503, headers=headers)


def _streamed(name: str | None, agent_id: str) -> None:
    """A usage error unless `format=` names a format HTTP streams."""
    if name not in STREAMED:
        what = "format= is missing" if name is None else f"format={name}"
        raise UsageError(
            f"{what}: HTTP streams {', '.join(STREAMED)}",
            hint=f"the hf dataset is a folder: `feedbackd export {agent_id} --format hf --out DIR`",
        )


def _approve(site: Site) -> Callable[[Request], Any]:
    async def approve(request: Request) -> Response:
        data = await json_object(request, APPROVE_KEYS)
        edits = data.get("edits") or {}
        if not isinstance(edits, dict) or not all(isinstance(v, str) for v in edits.values()):
            raise InvalidFeedback('edits must be an object of text fields: {"title": "..."}')
        return await _decide(site, request, data, lambda rt, a, i: actions.approve(rt, a, i, edits))

    return approve


def _reject(site: Site) -> Callable[[Request], Any]:
    async def reject(request: Request) -> Response:
        data = await json_object(request, REJECT_KEYS)
        notes = optional_string(data, "notes")
        if not notes or not notes.strip():
            raise InvalidFeedback("notes are required: say why the draft is rejected")
        return await _decide(site, request, data, lambda rt, a, i: actions.reject(rt, a, i, notes))

    return reject


async def _decide(
    site: Site,
    request: Request,
    data: dict[str, Any],
    decide: Callable[[Runtime, str, str], Report],
) -> Response:
    """A decision on the queued item the path names, by the body's curator: what the command
    prints with --json."""
    agent, item = request.path_params["agent"], request.path_params["item"]
    curator = acting(request, optional_string(data, "curator"))
    signed = signed_in(request) is not None
    runtime = await work(lambda: site.runtime(curator, signed_in=signed))

    def checked_decision() -> Report:
        existing_agent(runtime, agent)
        return decide(runtime, agent, item)

    return JSONResponse(report_json(await work(checked_decision), runtime.workspace.root))


# --- the workspace ------------------------------------------------------------------------------
def _workspace_routes(site: Site) -> list[Route]:
    async def log(request: Request) -> Response:
        agent, since = request.query_params.get("agent"), request.query_params.get("since")
        runtime = await work(site.runtime)
        if agent:
            validate_id(agent, "agent id")
        entries = await work(lambda: queries.learning_log(runtime, agent or None, since))
        return JSONResponse([queries.log_json(entry) for entry in entries])

    async def status(request: Request) -> Response:
        runtime = await work(site.runtime)
        return JSONResponse(await work(lambda: queries.workspace_status(runtime, [])))

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    return [
        Route("/api/log", log, methods=["GET"]),
        Route("/api/status", status, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
    ]


# --- is the agent learning? (SPEC section 13) ----------------------------------------------------
def _learning_routes(site: Site) -> list[Route]:
    async def stats(request: Request) -> Response:
        agent, query = request.path_params["agent"], request.query_params
        by, since = query.get("by") or "week", query.get("since") or None
        runtime = await work(site.runtime)
        return JSONResponse(
            await work(lambda: learningstats.agent_stats(runtime, agent, by, since))
        )

    async def evaluation(request: Request) -> Response:
        agent, query = request.path_params["agent"], request.query_params
        items = _whole(query.get("items"), "items", 50)
        at, against = query.get("at") or None, query.get("against") or "none"
        runtime = await work(site.runtime)
        return JSONResponse(await work(lambda: _eval_report(runtime, agent, at, against, items)))

    async def agreement(request: Request) -> Response:
        agent, since = request.query_params.get("agent"), request.query_params.get("since")
        if agent:
            validate_id(agent, "agent id")
        runtime = await work(site.runtime)
        return JSONResponse(
            await work(lambda: agreementread.curator_agreement(runtime, agent or None, since))
        )

    return [
        Route("/api/agents/{agent}/stats", stats, methods=["GET"]),
        Route("/api/agents/{agent}/eval", evaluation, methods=["GET"]),
        Route("/api/agreement", agreement, methods=["GET"]),
    ]


def _whole(text: str | None, name: str, default: int) -> int:
    if text is None:
        return default
    if not _WHOLE_NUMBER.fullmatch(text):
        raise UsageError(f"{name} {_shown(text)} is not a whole number", hint=f"e.g. {name}=50")
    return int(text)


def _eval_report(
    runtime: Runtime, agent: str, at: str | None, against: str, items: int
) -> dict[str, Any]:
    """`eval --json` with eval.command (SPEC section 14); nothing is written but the answers
    kept in .feedbackd/. Imported when first asked: `--examples relevant` loads numpy."""
    from feedbackd.app.commands.evaluating import EvalAsk, run_eval

    return run_eval(runtime, EvalAsk(agent, at=at, against=against, items=items))


STATUS_OF_CODE = {
    "not_found": 404,
    "already_decided": 409,
    "forbidden": 403,
    "feedback_already_submitted": 409,
    "locked": 503,
    "git_error": 500,
    "workspace_error": 500,
    "config_error": 500,
    "disk_full": 507,  # Insufficient Storage: the same request goes through once space is freed
}


# Seconds a client is told to wait before it tries a write again that found the workspace busy.
RETRY_BUSY_S = 5


def error_response(
    error: FeedbackdError, workspace: str | None = None, config: str | None = None
) -> Response:
    """`{"error": code, "message": text}` with the status the code stands for (400 for refused
    input), naming files relative to the `workspace` (and the `config` file by its name); a
    write that gave up on a busy workspace, having changed nothing, is 503 `busy`."""
    if isinstance(error, Busy):
        message = f"{error.who}; nothing was changed: try again in a few seconds"
        headers = {"Retry-After": str(RETRY_BUSY_S)}
        return JSONResponse({"error": "busy", "message": message}, 503, headers=headers)
    status = STATUS_OF_CODE.get(error.code, 400)
    message = str(error) if workspace is None else without_workspace(str(error), workspace, config)
    return JSONResponse({"error": error.code, "message": message}, status_code=status)


def without_workspace(message: str, workspace: str, config: str | None = None) -> str:
    """The message with the workspace's own path cut from the files it names. feedbackd's
    messages name files relative to the workspace already; what git, the operating system or
    the configuration loader quote (`/srv/site/feedbackd.yaml, line 3`) does not, and a client
    must not learn the server's folders from it."""
    for root in dict.fromkeys([workspace, str(Path(workspace).resolve())]):
        message = message.replace(f"{root.rstrip('/')}/", "")
    if config:  # `--config` given from outside the workspace: named by the file's name alone
        given = Path(config).expanduser()
        for spelled in dict.fromkeys([str(given), str(given.absolute()), str(given.resolve())]):
            message = message.replace(spelled, given.name)
    return message
