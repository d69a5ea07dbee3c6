"""`feedbackd stats [AGENT] [--by day|week|month] [--since DURATION|DATE] [--json]`: is the agent
learning? The decisions per period and in total, as a table or as SPEC section 13's JSON."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from feedbackd.app.commands.learningstats import agent_stats
from feedbackd.cli.common import GLOBALS, JsonOption, command
from feedbackd.cli.output import console, print_json
from feedbackd.core.curation.learningcurve import check_period
from feedbackd.core.wording import duration_text

AgentOption = Annotated[
    str | None, typer.Argument(help="Only this agent (default: every agent together).")
]
ByOption = Annotated[str, typer.Option("--by", help="Period: day, week (from Monday) or month.")]
SinceOption = Annotated[
    str | None,
    typer.Option(help="Only decisions since then: a duration (8w, 30d) or a date (2026-11-30)."),
]
FIELDS_SHOWN = 10  # the most corrected fields the table names


def register(app: typer.Typer) -> None:
    """Add the `stats` command to the feedbackd command line."""
    app.command("stats")(stats)


@command
def stats(
    agent: AgentOption = None,
    by: ByOption = "week",
    since: SinceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Is the agent learning? Decisions, unedited approvals, corrections and rejections per
    period, from the decisions HEAD holds (reverted ones and forgotten lessons left out)."""
    check_period(by)  # a usage error before the workspace is even looked for
    report = agent_stats(GLOBALS.runtime(), agent, by, since)
    if as_json:
        print_json(report)
    else:
        show_stats(report)


def show_stats(report: dict[str, Any]) -> None:
    out = console()
    who = report["agent"] or "every agent"
    if not report["total"]["decided"]:
        when = "in that time" if report["periods"] else "yet"
        out.print(escape(f"No decisions of {who} {when}."))
        return
    table = Table(title=escape(f"Is {who} learning? (by {report['by']})"), box=None)
    table.add_column(report["by"])
    for column in ("decided", "approved", "rejected", "corr.", "unedited", "corr/appr", "wait"):
        table.add_column(column, justify="right")
    for period in report["periods"]:
        table.add_row(period["start"], *_cells(period))
    table.add_row("[b]total[/]", *_cells(report["total"]), end_section=True)
    out.print(table)
    out.print(LEGEND)
    fields = list(report["fields"].items())[:FIELDS_SHOWN]
    if fields:
        named = ", ".join(f"{name} {count}" for name, count in fields)
        out.print(escape(f"most corrected fields: {named}"))


# The columns explained, once, under the table: a pipe's 80 columns leave no room for long names.
LEGEND = (
    "corr.: corrections; unedited: approvals with no correction; corr/appr: corrections per"
    " approval; wait: median time from a draft's first commit to its decision"
)


def _cells(row: dict[str, Any]) -> list[str]:
    rate, per = row["unedited_rate"], row["corrections_per_approval"]
    return [
        *(str(row[key]) for key in ("decided", "approved", "rejected", "corrections")),
        "—" if rate is None else f"{rate:.0%}",
        "—" if per is None else f"{per:.2f}",
        duration_text(row["median_decision_s"]),
    ]
