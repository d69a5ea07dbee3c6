"""The MCP server of one workspace (SPEC section 16): its tools, resources and prompt, built on
the official SDK's MCPServer. The transports (stdio.py, http.py) serve the same server.

Each tool runs in a worker thread (the SDK runs plain functions so): the reads and writes of
app/commands take files, git and the workspace's write lock as the commands do. A refusal of
feedbackd's (a bad argument, an unknown agent, a repeated transaction, a busy workspace) is a
tool error carrying the command line's code and message, and the server goes on serving.

A host waits for the server's first answer before it offers the tools, and the SDK alone takes
most of a second to import: what the tools run (app/commands, and numpy for lessons_for) is
imported in a thread as the server starts, while it answers the host, as the command line
imports a command's machinery when the command runs.
"""

from __future__ import annotations

import importlib
import json
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from feedbackd import __version__
from feedbackd.core.errors import DiskFull, FeedbackdError, InternalError, NotFound, UsageError
from feedbackd.core.websafety import CURATOR_STATE
from feedbackd.edges.files import NO_SPACE
from feedbackd.mcp.shapes import (
    Entry,
    Ratings,
    Received,
    Recent,
    Reputation,
    Snippet,
    Stats,
    Why,
)

if TYPE_CHECKING:
    from feedbackd.app.workspace.runtime import Runtime
    from feedbackd.mcp.toolanswers import Answer

log = logging.getLogger("feedbackd")
Opener = Callable[[], "Runtime"]  # the workspace as it is now (settings read again if changed)
Work = Callable[["Runtime"], "Answer"]
F = TypeVar("F", bound=Callable[..., CallToolResult])
# The curator a call over HTTP is made by (the token's, with http.users_file): a write tool
# records as them, as every write over HTTP is.
SIGNED_IN: ContextVar[str | None] = ContextVar("feedbackd_mcp_curator", default=None)

AgentArg = Annotated[str, Field(description="Agent id (a folder under _data/agents/).")]
TaskArg = Annotated[
    str,
    Field(description="The task or draft the agent is about to do: plain text, or an item."),
]
SkillArg = Annotated[str, Field(description="A skill id (from the provider's SOUL.md).")]
SinceArg = Annotated[
    str | None,
    Field(description="Only this recent: a duration (30s, 15m, 12h, 7d, 4w) or a date."),
]
READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

INSTRUCTIONS = (
    "feedbackd keeps the lessons curators taught each agent and the ratings buyers gave it. "
    "Before a task, call lessons_for with the task to get the corrections that fit it."
)


class FeedbackdServer(MCPServer[Any]):
    """MCPServer, whose refusal of arguments that do not fit a tool's input schema is said as
    the command line says a bad usage: `usage: limit: Input should be a valid integer`."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        # The tool runs in a worker thread, which takes this task's context variables along.
        signed_in = SIGNED_IN.set(_curator_of(context))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            if not isinstance(error.__cause__, ValidationError):
                raise
            return refusal(UsageError(_arguments_problem(name, error.__cause__)))
        finally:
            SIGNED_IN.reset(signed_in)


def _curator_of(context: Context[Any, Any] | None) -> str | None:
    """The curator the HTTP request's token names (http.users_file; the guard put it in the
    request's state), None over standard input and output or without a users file."""
    try:
        request = context.request_context.request if context is not None else None
    except ValueError:  # a context outside a request
        return None
    scope = getattr(request, "scope", None)
    state = scope.get("state") if isinstance(scope, dict) else None
    curator = state.get(CURATOR_STATE) if isinstance(state, dict) else None
    return curator if isinstance(curator, str) else None


def _arguments_problem(tool: str, error: ValidationError) -> str:
    """Each argument refused and why, without the values given (a task may be a megabyte)."""
    problems = [
        f"{'.'.join(str(part) for part in problem['loc']) or 'arguments'}: {problem['msg']}"
        for problem in error.errors()
    ]
    return f"{tool}: " + "; ".join(problems)


def build_server(
    opener: Opener, allow_writes: bool, told: Callable[[str], str] = str
) -> MCPServer[Any]:
    """The server of the workspace `opener` opens; the write tools only with `allow_writes`.
    `told`: a refusal's message as the client reads it (over HTTP, without the server's paths)."""
    with _root_logger_kept():
        server = FeedbackdServer("feedbackd", version=__version__, instructions=INSTRUCTIONS)
    call = _caller(opener, told)
    _snippet_tools(server, call)
    _feedback_tools(server, call)
    _rating_tools(server, call)
    if allow_writes:
        _write_tools(server, call)
    _resources(server, opener)
    _prompts(server, opener)
    threading.Thread(target=_machinery, name="mcp-imports", daemon=True).start()
    return server


def _machinery() -> None:
    """Import what the tools run, so that the first call finds it loaded (a call that comes
    sooner waits for the import, as Python's import lock has it)."""
    for module in ("feedbackd.mcp.toolanswers", "feedbackd.app.commands.promptfor"):
        importlib.import_module(module)


@contextmanager
def _root_logger_kept() -> Iterator[None]:
    """MCPServer sets up the root logger (a handler, a level) for a program of its own: feedbackd
    logs through its own logger (cli/logsetup.py), and a library's debug lines stay quiet."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def _caller(opener: Opener, told: Callable[[str], str]) -> Callable[[Work], CallToolResult]:
    def call(work: Work) -> CallToolResult:
        try:
            runtime = opener()
            curator = SIGNED_IN.get()
            answer = work(runtime if curator is None else runtime.with_curator(curator))
        except FeedbackdError as error:
            return refusal(error, told)
        except OSError as error:
            return refusal(_os_error(error))
        except Exception:  # a bug: the log has its traceback; the server goes on
            log.exception("internal error in an MCP tool")
            return refusal(InternalError(UNEXPECTED))
        text = TextContent(type="text", text=answer.shown())
        return CallToolResult(content=[text], structured_content=answer.value)

    return call


def refusal(error: FeedbackdError, told: Callable[[str], str] = str) -> CallToolResult:
    """A tool error: `code: message` as text, `{"error", "message"}` as structured content (the
    command line's `--json` error)."""
    message = told(str(error))
    shown = TextContent(type="text", text=f"{error.code}: {message}")
    value = {"error": error.code, "message": message}
    return CallToolResult(content=[shown], structured_content=value, is_error=True)


# What a client is told of a failure that is no refusal: the details (a path of the server's
# disk, a traceback) are the log's, as the HTTP API keeps them.
UNEXPECTED = "internal error: the server failed unexpectedly; its log has the details"


def _os_error(error: OSError) -> FeedbackdError:
    if error.errno in NO_SPACE:
        return DiskFull(f"the disk is full ({error.strerror}); nothing of this call was kept")
    log.error("MCP tool failed: %s", error)
    return InternalError(UNEXPECTED)


def _tool(server: MCPServer[Any], annotations: ToolAnnotations) -> Callable[[F], F]:
    """Register a tool, its docstring as one line of description (as a host shows it)."""

    def register(function: F) -> F:
        described = " ".join((function.__doc__ or "").split())
        server.add_tool(function, description=described, annotations=annotations)
        return function

    return register


def _snippet_tools(server: MCPServer[Any], call: Callable[[Work], CallToolResult]) -> None:
    @_tool(server, READS)
    def lessons_for(
        agent: AgentArg,
        task: TaskArg,
        limit: Annotated[
            int | None, Field(description="How many examples (default: prompt.max_examples).")
        ] = None,
    ) -> Annotated[CallToolResult, Snippet]:
        """The agent's prompt snippet with the past corrections most relevant to this task, the
        most relevant last (`feedbackd prompt AGENT --for -`). Call it before the task."""
        from feedbackd.mcp import toolanswers

        return call(lambda runtime: toolanswers.lessons_for(runtime, agent, task, limit))

    @_tool(server, READS)
    def snippet(
        agent: AgentArg,
        at: Annotated[
            str | None,
            Field(description="The snippet as it was then: a revision (HEAD~3, a sha) or a date."),
        ] = None,
    ) -> Annotated[CallToolResult, Snippet]:
        """The agent's prompt snippet, its last corrections (`feedbackd prompt AGENT [--at]`)."""
        from feedbackd.mcp import toolanswers

        return call(lambda runtime: toolanswers.snippet(runtime, agent, at))

    @_tool(server, READS)
    def why(agent: AgentArg) -> Annotated[CallToolResult, Why]:
        """Where each example and note of the snippet came from: its decision commit, item,
        field and curator (`feedbackd why AGENT`)."""
        from feedbackd.mcp import toolanswers

        return call(lambda runtime: toolanswers.why(runtime, agent))


def _feedback_tools(server: MCPServer[Any], call: Callable[[Work], CallToolResult]) -> None:
    @_tool(server, READS)
    def recent_feedback(
        agent: AgentArg,
        limit: Annotated[int, Field(description="How many entries, newest first.")] = 5,
    ) -> Annotated[CallToolResult, Recent]:
        """The agent's recent feedback entries, newest first (`feedbackd recent AGENT`)."""
        from feedbackd.mcp import toolanswers

        return call(lambda runtime: toolanswers.recent_feedback(runtime, agent, limit))

    @_tool(server, READS)
    def stats(
        agent: AgentArg,
        by: Annotated[str, Field(description="Period: day, week (from Monday) or month.")] = "week",
        since: SinceArg = None,
    ) -> Annotated[CallToolResult, Stats]:
        """Is the agent learning? Decisions, unedited approvals, corrections and rejections per
        period and in total (`feedbackd stats AGENT`)."""
        from feedbackd.mcp import toolanswers

        return call(lambda runtime: toolanswers.stats(runtime, agent, by, since))


def _rating_tools(server: MCPServer[Any], call: Callable[[Work], CallToolResult]) -> None:
    @_tool(server, READS)
    def list_ratings(
        skill_id: SkillArg,
        agent: Annotated[str | None, Field(description="Only this provider.")] = None,
        since: SinceArg = None,
        limit: Annotated[int | None, Field(description="At most this many ratings.")] = None,
    ) -> Annotated[CallToolResult, Ratings]:
        """A skill's ratings, newest first, with averages and the reputation score
        (`feedbackd feedback list --skill SKILL`)."""
        from feedbackd.mcp import toolanswers

        return call(
            lambda runtime: toolanswers.list_ratings(runtime, skill_id, agent, since, limit)
        )

    @_tool(server, READS)
    def reputation(
        agent: AgentArg,
        skill: Annotated[str | None, Field(description="Only this skill.")] = None,
    ) -> Annotated[CallToolResult, Reputation]:
        """A provider's reputation score (0-1), overall and per skill, compatible with
        AgentBnB's registry (`feedbackd reputation AGENT`)."""
        from feedbackd.mcp import toolanswers

        return call(lambda runtime: toolanswers.reputation(runtime, agent, skill))


def _write_tools(server: MCPServer[Any], call: Callable[[Work], CallToolResult]) -> None:
    @_tool(server, WRITES)
    def submit_rating(
        rating: Annotated[
            dict[str, Any],
            Field(
                description="A rating in AgentBnB's shape: transaction_id (UUID), provider_agent,"
                " skill_id, requester_agent, rating (1-5), result_quality (excellent, good,"
                " acceptable, poor, failed), would_reuse, cost_value_ratio (great, fair,"
                " overpriced); optional latency_ms, quality_details, timestamp."
            ),
        ],
    ) -> Annotated[CallToolResult, Received]:
        """Record a buyer's rating of a rental (one commit), as `POST /api/feedback` does; a
        second rating of the same transaction_id is refused (feedback_already_submitted)."""
        from feedbackd.mcp import toolanswers

        return call(lambda runtime: toolanswers.submit_rating(runtime, rating))

    @_tool(server, WRITES)
    def record_feedback(
        agent: AgentArg,
        type: Annotated[str, Field(description="correction, edit or rejection.")],
        queueItemId: Annotated[str | None, Field(description="The item it is about.")] = None,
        field: Annotated[str | None, Field(description="The field corrected.")] = None,
        original: Annotated[str | None, Field(description="What the agent wrote.")] = None,
        corrected: Annotated[str | None, Field(description="What the curator made it.")] = None,
        notes: Annotated[str | None, Field(description="Why (a rejection needs it).")] = None,
    ) -> Annotated[CallToolResult, Entry]:
        """Record one feedback entry and commit it (`feedbackd record AGENT --json`)."""
        from feedbackd.mcp import toolanswers

        given = {"type": type, "queueItemId": queueItemId, "field": field}
        given |= {"original": original, "corrected": corrected, "notes": notes}
        return call(lambda runtime: toolanswers.record_feedback(runtime, agent, given))


def _resources(server: MCPServer[Any], opener: Opener) -> None:
    @server.resource(
        "feedbackd://agents/{agent}/snippet", mime_type="text/markdown", name="snippet"
    )
    def snippet_text(agent: str) -> str:
        """The agent's prompt snippet as it reads it (prompt/feedback.md)."""
        from feedbackd.app.commands.queries import prompt_text

        text: str = _read(lambda: prompt_text(opener(), agent))
        return text

    @server.resource("feedbackd://agents/{agent}/stats", mime_type="application/json", name="stats")
    def stats_json(agent: str) -> str:
        """Is the agent learning? `feedbackd stats AGENT --json`."""
        from feedbackd.app.commands.learningstats import agent_stats

        report = _read(lambda: agent_stats(opener(), agent))
        return json.dumps(report, ensure_ascii=False)


def _read(read: Callable[[], Any]) -> Any:
    """A resource's content; feedbackd's refusals as the SDK's resource errors."""
    try:
        return read()
    except NotFound as error:
        raise ResourceNotFoundError(f"{error.code}: {error}") from None
    except FeedbackdError as error:
        raise ResourceError(f"{error.code}: {error}") from None


def _prompts(server: MCPServer[Any], opener: Opener) -> None:
    @server.prompt(name="learn-from-feedback")
    def learn_from_feedback(agent: str, task: str) -> list[UserMessage]:
        """The lessons curators taught the agent that fit the task (lessons_for's text), as a
        user message to put before the task."""
        from feedbackd.mcp import toolanswers

        answer = _read(lambda: toolanswers.lessons_for(opener(), agent, task, None))
        return [UserMessage(answer.shown())]
