"""Read-only views for people and scripts: recent feedback, the prompt snippet, the learning log."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from feedbackd.cli.output import console, print_json
from feedbackd.core.feedback import FeedbackEntry
from feedbackd.loop.agentfiles import existing_agent, read_feedback
from feedbackd.loop.queries import learning_log, log_json, recent_feedback
from feedbackd.loop.runtime import Runtime
from feedbackd.loop.statusfile import Progress

TYPE_STYLE = {"correction": "green", "edit": "blue", "rejection": "red"}


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
    table = Table(title=f"Recent feedback: {agent_id}", show_lines=True)
    for column in ("when", "type", "item", "field", "change"):
        table.add_column(column)
    for entry in newest:
        style = TYPE_STYLE.get(entry.type, "")
        table.add_row(
            entry.createdAt[:16].replace("T", " "),
            f"[{style}]{entry.type}[/]" if style else entry.type,
            entry.queueItemId or "",
            escape(entry.field or ""),
            _change(entry),
        )
    out.print(table)
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
    table = Table(title="Learning history", show_edge=False)
    for column in ("date", "event", "agent", "item/skill", "curator", "what"):
        table.add_column(column)
    for entry in entries:
        table.add_row(
            entry.date[:16].replace("T", " "),
            entry.event or "",
            entry.agent or "",
            entry.item or entry.skill or "",
            escape(entry.curator or ""),
            escape(entry.subject.split(": ", 1)[-1]),
        )
    console().print(table)


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
