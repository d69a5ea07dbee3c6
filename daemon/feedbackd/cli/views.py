"""Read-only views for people and scripts: recent feedback, the prompt snippet, the learning log."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from feedbackd.cli.output import console, print_json
from feedbackd.core.feedback import FeedbackEntry
from feedbackd.core.prompts import render_snippet
from feedbackd.core.timeutil import parse_duration, utcnow
from feedbackd.loop.agentfiles import read_feedback
from feedbackd.loop.runtime import Runtime

TYPE_STYLE = {"correction": "green", "edit": "blue", "rejection": "red"}


def show_recent(runtime: Runtime, agent_id: str, limit: int, as_json: bool) -> None:
    entries = read_feedback(runtime.workspace.agent(agent_id).feedback)
    newest = list(reversed(entries))[:limit]
    if as_json:
        print_json({"entries": [entry.as_json() for entry in newest], "total": len(entries)})
        return
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


def prompt_text(runtime: Runtime, agent_id: str) -> str:
    """The snippet file as written; rendered from feedback.json when it was never generated."""
    agent = runtime.workspace.agent(agent_id)
    if agent.prompt.exists():
        return agent.prompt.read_text(encoding="utf-8")
    text = render_snippet(read_feedback(agent.feedback), runtime.settings.prompt)
    return text + "\n" if text and not text.endswith("\n") else text


def show_log(runtime: Runtime, agent_id: str | None, since: str | None, as_json: bool) -> None:
    from feedbackd.loop.repo import open_repo

    if agent_id is not None:
        runtime.workspace.agent(agent_id)  # validates the id
    start = utcnow() - parse_duration(since) if since else None
    with open_repo(runtime) as repo:
        entries = repo.log(agent=agent_id, since=start) if repo is not None else []
    if as_json:
        print_json([_log_json(entry) for entry in entries])
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


def _log_json(entry: object) -> dict[str, object]:
    keys = (
        "commit", "date", "event", "agent", "item", "skill",
        "curator", "fields", "price_old", "price_new",
    )  # fmt: skip
    return {key: getattr(entry, key) for key in keys}


def show_status(state: dict[str, object]) -> None:
    out = console()
    if state.get("running"):
        out.print(f"[green]running[/] (pid {state['pid']}, up {state['uptime_s']} s)")
    else:
        out.print("[yellow]not running[/]")
    last = state.get("last_event")
    if isinstance(last, dict):
        when = str(last.get("time", ""))[:19].replace("T", " ")
        out.print(
            escape(
                f"last event: {last.get('event')}({last.get('agent')}) {last.get('summary')}"
                f" at {when}"
            )
        )
    counts = state.get("counts")
    if isinstance(counts, dict) and counts:
        out.print("recorded: " + ", ".join(f"{n} {event}" for event, n in sorted(counts.items())))
    out.print(f"pending: {state.get('pending', 0)}")
    problems = state.get("problems")
    for problem in problems if isinstance(problems, list) else []:
        out.print(f"[red]problem[/]: {escape(str(problem))}")
