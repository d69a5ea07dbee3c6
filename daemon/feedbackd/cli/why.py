"""`feedbackd why AGENT`, for people: a table of the snippet's lessons and their decisions."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from feedbackd.app.commands.lessonsources import why
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.cli.output import NAME, TEXT, Column, console, fitted_table, print_json
from feedbackd.core.people import display_name

SECTION_NAMES = {"examples": "Example", "avoid": "Avoid"}
SHORT_COMMIT = 12  # enough for `git show`, short enough for the table
COLUMNS = [
    Column("line", NAME),
    Column("item", NAME),
    Column("field", NAME),
    Column("curator", TEXT, drop=1),
    Column("commit", NAME),
    Column("at", TEXT, drop=2),
]


def show_why(runtime: Runtime, agent_id: str, as_json: bool) -> None:
    found = why(runtime, agent_id)
    if as_json:
        print_json(found)
        return
    out = console()
    if not found["lines"]:
        out.print(f"The snippet of {agent_id} is empty: no example or note to trace.")
        return
    # Ids and commits are whole, never cut: a reader copies them into git. The curator, then
    # the time, are left out where even that is too wide.
    rows = [list(map(escape, _row(line))) for line in found["lines"]]
    title = f"Where the lessons of {agent_id} came from"
    out.print(fitted_table(COLUMNS, rows, out.width, title=title, show_edge=False))
    if any(line["commit"] is None for line in found["lines"]):
        out.print(
            "not found: no commit of the history tells that entry (one written by hand, or a"
            " history that does not hold its commit)"
        )


def _row(line: dict[str, Any]) -> list[str]:
    commit = line["commit"]
    return [
        f"{SECTION_NAMES[line['section']]} {line['n']}",
        line["item"] or "",
        line["field"] or "",
        display_name(line["curator"] or ""),
        commit[:SHORT_COMMIT] if commit else "not found",
        line["at"][:16].replace("T", " "),
    ]
