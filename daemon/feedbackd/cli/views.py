"""Read-only views for people and scripts: recent feedback, the prompt snippet, the learning log."""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape
from rich.table import Table

from feedbackd.cli.output import FLEX, NAME, TEXT, Column, console, fitted_table, print_json
from feedbackd.core.commitmsg import CURATOR_EVENTS, LogEntry
from feedbackd.core.curation.feedback import FeedbackEntry
from feedbackd.core.curation.feedbackjson import EntryType
from feedbackd.core.people import Person
from feedbackd.loop.commands.queries import learning_log, log_json, recent_feedback
from feedbackd.loop.daemon.statusfile import Progress
from feedbackd.loop.workspace.agentfiles import existing_agent, read_feedback
from feedbackd.loop.workspace.runtime import Runtime

TYPE_STYLE: dict[EntryType, str] = {"correction": "green", "edit": "blue", "rejection": "red"}
# The item and the field are names a reader copies: whole; the time goes first when it is narrow.
RECENT_COLUMNS = (
    Column("when", TEXT, drop=1),
    Column("type"),
    Column("item", NAME),
    Column("field", NAME),
    Column("change", FLEX),
)


def show_recent(runtime: Runtime, agent_id: str, limit: int, as_json: bool) -> None:
    if as_json:
        print_json(recent_feedback(runtime, agent_id, limit))
        return
    entries = read_feedback(existing_agent(runtime, agent_id).feedback)
    newest = list(reversed(entries))[:limit]
    out = console()
    if not newest:
        out.print(f"No feedback for {agent_id} yet.")
        return
    rows = [
        [
            entry.createdAt[:16].replace("T", " "),
            f"[{TYPE_STYLE[entry.type]}]{entry.type}[/]"
            if entry.type in TYPE_STYLE
            else entry.type,
            escape(entry.queueItemId or ""),
            escape(entry.field or ""),
            _change(entry),
        ]
        for entry in newest
    ]
    title = f"Recent feedback: {agent_id}"
    out.print(fitted_table(RECENT_COLUMNS, rows, out.width, title=title, show_lines=True))
    examples = runtime.settings.prompt.max_examples
    noun = "entry" if len(entries) == 1 else "entries"
    out.print(f"{len(entries)} {noun} in all; the last {examples} corrections reach the prompt.")


def _change(entry: FeedbackEntry) -> str:
    if entry.type == "rejection":
        return escape(entry.notes or "")
    # The arrow keeps the direction readable where styles are off (NO_COLOR, pipes).
    original, corrected = escape(entry.original or ""), escape(entry.corrected or "")
    return f"[strike]{original}[/strike]\n→ {corrected}"


def show_log(runtime: Runtime, agent_id: str | None, since: str | None, as_json: bool) -> None:
    entries = learning_log(runtime, agent_id, since)
    if as_json:
        print_json([log_json(entry) for entry in entries])
        return
    out = console()
    out.print(_log_table(entries, agent_id is None, out.width))


def _log_table(entries: Sequence[LogEntry], with_agent: bool, width: int) -> Table:
    """The learning history for a terminal `width` wide: names whole, as a reviewer copies them
    into other commands; the curator, then the date, are left out where even that is too wide.
    Asked about one agent (not `with_agent`), the agent column would repeat its name."""
    columns = [
        Column("date", TEXT, drop=2),
        Column("event", NAME),
        *([Column("agent", NAME)] if with_agent else []),
        Column("item/skill", NAME),
        Column("curator", TEXT, drop=1),
        Column("what", FLEX),
    ]
    rows = [
        [
            entry.date[:16].replace("T", " "),
            escape(entry.event or ""),
            *([escape(entry.agent or "")] if with_agent else []),
            escape(entry.item or entry.skill or ""),
            escape(_curator_name(entry)),
            escape(_what(entry)),
        ]
        for entry in entries
    ]
    options = {"title": "Learning history", "show_edge": False, "pad_edge": False}
    return fitted_table(columns, rows, width, **options)


NOTE_WIDTH = 60  # of a rejection's note in the log: enough to tell what it was about


def _what(entry: LogEntry) -> str:
    """The commit's summary, and a rejection's note (cut) after it."""
    summary = entry.subject.split(": ", 1)[-1]
    return f'{summary}: "{_cut(entry.note, NOTE_WIDTH)}"' if entry.note else summary


def _curator_name(entry: LogEntry) -> str:
    """Who decided, for a curator's events alone: a rating is its buyer's (the summary names
    them) and a price change or a draft is feedbackd's, whoever's git identity committed it."""
    if entry.event not in CURATOR_EVENTS or not entry.curator:
        return ""
    try:
        return Person.parse(entry.curator).name
    except ValueError:
        return entry.curator


SUMMARY_WIDTH = 80  # a status line stays readable whatever a commit's summary holds


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def show_status(state: dict[str, object], progress: Progress | None = None) -> None:
    out = console()
    if state.get("running"):
        out.print(f"[green]running[/] (pid {state['pid']}, up {state['uptime_s']} s)")
    else:
        out.print("[yellow]not running[/]")
    if progress is not None:
        out.print(escape(progress.line()))
    last = state.get("last_event")
    if isinstance(last, dict):
        when = str(last.get("time", ""))[:19].replace("T", " ")
        summary = _cut(str(last.get("summary")), SUMMARY_WIDTH)
        what = f"{last.get('event')}({last.get('agent')}) {summary}"
        out.print(escape(f"last event: {what} at {when}"))
    counts = state.get("counts")
    if isinstance(counts, dict) and counts:
        out.print("recorded: " + ", ".join(f"{n} {event}" for event, n in sorted(counts.items())))
    out.print(f"pending: {state.get('pending', 0)}")
    problems = state.get("problems")
    for problem in problems if isinstance(problems, list) else []:
        out.print(f"[red]problem[/]: {escape(str(problem))}")
