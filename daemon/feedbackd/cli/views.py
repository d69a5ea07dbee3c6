"""Read-only views for people and scripts: recent feedback, the prompt snippet, the learning log."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rich.markup import escape
from rich.table import Table

from feedbackd.app.commands.queries import learning_log, log_json, recent_feedback
from feedbackd.app.daemon.statusfile import PassProgress
from feedbackd.app.workspace.agentfiles import existing_agent, read_feedback
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.cli.output import FLEX, NAME, TEXT, Column, console, fitted_table, print_json
from feedbackd.core.commitmsg import LogEntry, decider
from feedbackd.core.config import PromptSettings
from feedbackd.core.curation.feedback import FeedbackEntry
from feedbackd.core.curation.feedbackjson import EntryType
from feedbackd.core.curation.prompts import rejections, snippet_lessons
from feedbackd.core.wording import counted

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
    out.print(reach_line(entries, runtime.settings.prompt))


def reach_line(entries: list[FeedbackEntry], settings: PromptSettings) -> str:
    """How many entries there are and how many of them the prompt shows, as they are now (the
    limit is the most that can reach it, not what does)."""
    sections = Counter(section for section, _, _ in snippet_lessons(entries, settings))
    usable = sum(entry.is_example for entry in entries)
    shown = [(sections["examples"], usable, "correction")]
    if settings.include_rejections:
        noted = len(rejections(entries, len(entries)))
        shown.append((sections["avoid"], noted, "rejection note"))
    parts = [_part(*counts) for counts in shown if counts[0]]
    head = f"{counted(len(entries), 'entry', 'entries')} in all"
    if not parts:
        nothing = "nothing" if settings.include_rejections else "no correction"
        return f"{head}; {nothing} reaches the prompt."
    one = len(parts) == 1 and sum(count for count, _, _ in shown) == 1
    return f"{head}; {' and '.join(parts)} {'reaches' if one else 'reach'} the prompt."


def _part(chosen: int, there: int, what: str) -> str:
    return counted(chosen, what) if chosen == there else f"the last {chosen} of {there} {what}s"


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
            escape(decider(entry)),
            escape(_what(entry)),
        ]
        for entry in entries
    ]
    options = {"title": "Learning history", "show_edge": False, "pad_edge": False}
    return fitted_table(columns, rows, width, **options)


NOTE_WIDTH = 60  # of a rejection's note in the log: enough to tell what it was about


def _what(entry: LogEntry) -> str:
    """The commit's summary, and a rejection's note (cut) after it; `(reverted)` first when a
    `git revert` undid it (its revert is a row of its own, which says what it undid)."""
    summary = entry.subject.split(": ", 1)[-1]
    what = f'{summary}: "{_cut(entry.note, NOTE_WIDTH)}"' if entry.note else summary
    return f"(reverted) {what}" if entry.reverted else what


SUMMARY_WIDTH = 80  # a status line stays readable whatever a commit's summary holds


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _daemon_line(state: dict[str, object]) -> str:
    """`running (pid 12, up 30 s)`; `starting (…)` during the start-up pass, whose uptime is
    unknown until the daemon has written its status file."""
    if not state.get("running"):
        return "[yellow]not running[/]"
    uptime = state.get("uptime_s")
    pid = state.get("pid")
    facts = f"pid {pid if pid is not None else 'unknown'}"
    facts += f", up {uptime} s" if isinstance(uptime, int) else ""
    if state.get("starting"):
        return f"[yellow]starting[/] ({facts})"
    return f"[green]running[/] ({facts})"


def _waiting_lines(agents: object) -> list[str]:
    """`waiting: lark 1 in review/, 1 disputed`, for each agent with drafts held for more
    reviews or a dispute (review.required ≥ 2); nothing for the others."""
    lines = []
    for agent, counts in agents.items() if isinstance(agents, dict) else []:
        review, disputed = counts.get("review", 0), counts.get("disputed", 0)
        if review or disputed:
            lines.append(f"waiting: {agent} {review} in review/, {disputed} disputed")
    return lines


def show_status(state: dict[str, object], progress: PassProgress | None = None) -> None:
    out = console()
    out.print(_daemon_line(state))
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
    for line in _waiting_lines(state.get("agents")):
        out.print(escape(line))
    events = state.get("events")
    if isinstance(events, dict) and (events.get("owed") or events.get("last_error")):
        error = f"; last error: {events['last_error']}" if events.get("last_error") else ""
        out.print(escape(f"webhooks: {events.get('owed')} owed{error}"))
    problems = state.get("problems")
    for problem in problems if isinstance(problems, list) else []:
        out.print(f"[red]problem[/]: {escape(str(problem))}")
