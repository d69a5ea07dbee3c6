"""`feedbackd events [--json]`: each webhook's last delivery, what it is owed and its last
error; `feedbackd events replay --hook URL --since REV|DATE`: those commits sent again."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from feedbackd.app.events.hookreport import events_report, replay
from feedbackd.cli.common import GLOBALS, JsonOption, command
from feedbackd.cli.output import console, print_json

events_app = typer.Typer(
    help="Webhooks: what each is owed, and ranges sent again.",
    invoke_without_command=True,
    rich_markup_mode=None,
)


def register(app: typer.Typer) -> None:
    app.add_typer(events_app, name="events")


@events_app.callback()
def events(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Each webhook: its last delivery, what it is owed, its last error."""
    if ctx.invoked_subcommand is None:
        _show(as_json=as_json)


@command
def _show(as_json: bool) -> None:
    report = events_report(GLOBALS.runtime())
    if as_json:
        print_json(report)
    else:
        show_events(report)


@events_app.command("replay")
@command
def replay_command(
    hook: Annotated[str, typer.Option("--hook", help="The hook's url, as configured.")],
    since: Annotated[
        str, typer.Option("--since", help="A commit (those after it are sent) or a date.")
    ],
    as_json: JsonOption = False,
) -> None:
    """Send the commits since REV or DATE to one hook again (the daemon sends them, or this
    command when no daemon runs)."""
    report = replay(GLOBALS.runtime(), hook, since)
    if as_json:
        print_json(report)
        return
    out = console()
    out.print(escape(f"{len(report['replayed'])} events replayed to {hook}; {report['owed']} owed"))
    if report["last_error"] and report["owed"]:
        out.print(escape(f"last error: {report['last_error']}"))


def show_events(report: dict[str, Any]) -> None:
    out = console()
    if not report["hooks"]:
        out.print("No webhooks configured (events.webhooks in feedbackd.yaml).")
        return
    table = Table(box=None)
    for column in ("hook", "owed", "delivered", "last delivery", "last error"):
        table.add_column(column)
    for hook in report["hooks"]:
        last = hook["last_delivery"] or {}
        when = str(last.get("at", ""))[:19].replace("T", " ")
        error = hook["last_error"] if hook["owed"] else ""
        table.add_row(
            escape(hook["url"]),
            str(hook["owed"]),
            str(hook["delivered"]),
            escape(f"{str(last.get('commit', ''))[:12]} {when}".strip()),
            escape(error or ""),
        )
    out.print(table)
