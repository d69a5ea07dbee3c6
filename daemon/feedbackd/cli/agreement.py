"""`feedbackd agreement [AGENT] [--since DURATION|DATE] [--json]`: how far the curators who
review the same drafts agree (SPEC section 15), as tables or as the contract's JSON."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from feedbackd.app.reviews.agreementread import curator_agreement
from feedbackd.cli.common import GLOBALS, JsonOption, command
from feedbackd.cli.output import console, print_json

AgentOption = Annotated[
    str | None, typer.Argument(help="Only this agent (default: every agent together).")
]
SinceOption = Annotated[
    str | None,
    typer.Option(help="Only reviews since then: a duration (8w, 30d) or a date (2026-11-30)."),
]


def register(app: typer.Typer) -> None:
    """Add the `agreement` command to the feedbackd command line."""
    app.command("agreement")(agreement)


@command
def agreement(
    agent: AgentOption = None, since: SinceOption = None, as_json: JsonOption = False
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
