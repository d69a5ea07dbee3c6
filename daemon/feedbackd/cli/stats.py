"""Figures over the history, as tables or as the contract's JSON:
- `feedbackd stats [AGENT] [--by day|week|month] [--since DURATION|DATE] [--json]`: is the agent
  learning? The decisions per period and in total (SPEC section 13).
- `feedbackd agreement [AGENT] [--since DURATION|DATE] [--json]`: how far the curators who review
  the same drafts agree (SPEC section 15)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from feedbackd.app.commands.learningstats import agent_stats
from feedbackd.app.reviews.agreementread import curator_agreement
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
    """Add the `stats` and `agreement` commands to the feedbackd command line."""
    app.command("stats")(stats)
    app.command("agreement")(agreement)


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


ReviewsSinceOption = Annotated[
    str | None,
    typer.Option(
        "--since", help="Only reviews since then: a duration (8w, 30d) or a date (2026-11-30)."
    ),
]


@command
def agreement(
    agent: AgentOption = None, since: ReviewsSinceOption = None, as_json: JsonOption = False
) -> None:
    """How far curators agree on the drafts two or more of them reviewed: verdicts, Cohen's
    kappa per pair, Krippendorff's alpha, each content field and each curator."""
    figures = curator_agreement(GLOBALS.runtime(), agent, since)
    if as_json:
        print_json(figures)
    else:
        show_agreement(figures)


def show_agreement(figures: dict[str, Any]) -> None:
    out = console()
    who = figures["agent"] or "every agent"
    if not figures["items"]:
        out.print(escape(f"No draft of {who} has two reviews yet."))
        return
    out.print(
        escape(
            f"{who}: {figures['items']} items reviewed by two or more curators: "
            f"{figures['agreed']} agreed, {figures['disputed']} disputed"
            f" ({figures['resolved']} resolved)"
        )
    )
    out.print(
        escape(
            f"verdicts agree on {_share(figures['verdict_agreement'])} of items;"
            f" Krippendorff's alpha {_number(figures['alpha'])}"
        )
    )
    _table(out, "Cohen's kappa", ("a", "b", "items", "kappa"), figures["kappa"])
    _table(out, "Fields approved by all", ("field", "items", "agreement"), figures["fields"])
    _table(out, "Curators", ("curator", "reviews", "decided", "agreement"), figures["curators"])


def _table(out: Any, title: str, columns: tuple[str, ...], rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    table = Table(title=escape(title), box=None)
    for column in columns:
        table.add_column(
            column, justify="left" if column in ("a", "b", "field", "curator") else "right"
        )
    for row in rows:
        table.add_row(*(escape(_cell(column, row[column])) for column in columns))
    out.print(table)


def _cell(column: str, value: Any) -> str:
    if column == "agreement":
        return _share(value)
    if column == "kappa":
        return _number(value)
    return str(value)


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"
