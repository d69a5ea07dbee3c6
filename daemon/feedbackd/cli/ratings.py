"""Commands for ratings of rented skills: submit, list, reputation, memory.

A rating submit is the command that buyers' agents run most: what only the others need (rich's
tables, the queries) is imported in their bodies, so that a submit starts without it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from feedbackd.app.commands.submitting import submit_or_queue
from feedbackd.app.workspace.agentfiles import existing_agent, list_memory
from feedbackd.cli.common import GLOBALS, AgentArg, JsonOption, command, group_options
from feedbackd.cli.output import (
    FLEX,
    NAME,
    TEXT,
    Column,
    console,
    fitted_table,
    print_json,
    progress_bar,
)
from feedbackd.core.ratings.records import ALLOWED
from feedbackd.core.wording import counted
from feedbackd.edges.files import agent_ids

if TYPE_CHECKING:
    from rich.table import Table

    from feedbackd.app.workspace.runtime import Runtime

TABLE_ROWS = 20
_SHOWN_SKILLS = 8  # the skills a line lists when none is close to a mistyped one
feedback_app = typer.Typer(
    help="Ratings of rented skills.",
    no_args_is_help=True,
    rich_markup_mode=None,
    callback=group_options,
)


def register(app: typer.Typer) -> None:
    app.add_typer(feedback_app, name="feedback")
    app.command("reputation")(reputation)
    app.command("memory")(memory)


def _fields_help() -> str:
    """Every field of a rating, what it takes, and an example: from the rules that check it."""
    lines = [f"{name}: {allowed}" for name, allowed in ALLOWED.items()]
    example = (
        '{"transaction_id": "123e4567-e89b-12d3-a456-426614174000", "provider_agent":'
        ' "heavylift-chengwen", "skill_id": "claude-code-run", "rating": 4, "result_quality":'
        ' "good", "would_reuse": true, "cost_value_ratio": "fair"}'
    )
    return "\n\n".join(["Fields of the rating (--json):", *lines, f"Example: --json '{example}'"])


@feedback_app.command("submit", epilog=_fields_help())
@command
def submit(
    payload: Annotated[str, typer.Option("--json", help="The rating as a JSON object.")],
    as_agent: Annotated[
        str | None, typer.Option("--as", help="Your agent id (the requester).")
    ] = None,
) -> None:
    """Record a rating of a rental (one commit); prints what was stored as JSON.

    When the daemon holds the workspace longer than a command waits, the rating is queued in
    the rating inbox instead (status `queued`) and the daemon records it."""
    # stdout is the report, so a bar for the first submit after a fresh clone goes to stderr.
    runtime = GLOBALS.runtime()
    with progress_bar("indexing ratings", stderr=True) as progress:
        done = submit_or_queue(runtime, payload, as_agent, progress)
    if isinstance(done, Path):  # the daemon held the workspace too long: it records it later
        print_json({"status": "queued", "file": runtime.workspace.relative(done)})
        return
    event, changes = done
    changed = [c.to_json() for c in changes]
    print_json(
        {
            "status": "recorded",
            **event.to_json(),
            "changes": changed,
            "warnings": list(event.warnings),
        }
    )


@feedback_app.command("list")
@command
def list_ratings(
    skill: Annotated[str, typer.Option("--skill", help="The skill id.")],
    agent: Annotated[str | None, typer.Option("--agent", help="Only this provider.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Only this recent, e.g. 7d.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=0, help="At most N ratings.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Ratings of a skill, newest first, with averages and the reputation score."""
    # The queries load the daemon's status and sync too, which a submit does without.
    from feedbackd.app.commands import queries

    runtime = GLOBALS.runtime()
    if limit is None and not as_json:
        limit = TABLE_ROWS  # a table of thousands of rows helps nobody; the summary covers all
    with progress_bar("indexing ratings", not as_json) as progress:
        report = queries.feedback_list(runtime, skill, agent, since, limit, progress)
    if as_json:
        print_json(report)
    else:
        _print_list(runtime, report)


def _print_list(runtime: Runtime, report: dict[str, Any]) -> None:
    out = console()
    feedbacks = report["feedbacks"]
    out.print(_list_table(str(report["skill_id"]), feedbacks, out.width))
    shown = len(feedbacks) if isinstance(feedbacks, list) else 0
    total = report["count"]
    more = f" (the newest {shown} shown; --limit N for more)" if shown != total else ""
    if not total:
        out.print("no ratings match")
        _closest_line(runtime, report)
        _closest_skill_line(runtime, report, report.get("agent_id"))
        return
    out.print(
        f"{counted(total, 'rating')}{more}, average {report['average_rating']},"
        f" reputation {report['reputation_score']}"
    )
    out.print(
        "(the reputation of these ratings only: this skill and the filters given;"
        " `feedbackd reputation AGENT` weighs all of a provider's ratings)"
    )


# The buyer, the stars and the value are what a provider reads first; the time, then the quality
# (the stars say most of it), are left out where the terminal is too narrow for all of them.
LIST_COLUMNS = (
    Column("when", TEXT, drop=3),
    Column("provider", NAME),
    Column("from", NAME),
    Column("rating", NAME),
    Column("quality", TEXT, drop=1),
    Column("value", TEXT, drop=2),
    Column("details", FLEX),
)


def _list_table(skill: str, feedbacks: object, width: int) -> Table:
    """The ratings listed; the provider goes in the title when they are all of one provider."""
    from rich.markup import escape

    ratings = feedbacks if isinstance(feedbacks, list) else []
    rows = [
        [
            str(r["timestamp"])[:16].replace("T", " "),
            escape(r["provider_agent"]),
            escape(r["requester_agent"]),
            "★" * int(r["rating"]),
            escape(r["result_quality"]),
            escape(r["cost_value_ratio"]),
            escape(r.get("quality_details", "")),
        ]
        for r in ratings
    ]
    providers = {row[1] for row in rows}
    columns, title = list(LIST_COLUMNS), f"Ratings of {escape(skill)}"
    if len(providers) == 1:
        (provider,) = providers
        columns, rows, title = (
            columns[:1] + columns[2:],
            [r[:1] + r[2:] for r in rows],
            f"Ratings of {provider}/{escape(skill)}",
        )
    return fitted_table(columns, rows, width, title=title, show_edge=False)


def _closest_line(runtime: Runtime, report: dict[str, object]) -> None:
    """For a provider without a folder (a report with `known` false), the agent it may be a
    typo of: AgentBnB's cold-start answer stays, but a typo must not pass for an answer."""
    from rich.markup import escape

    if report.get("known") is not False:
        return
    where = runtime.workspace.relative(runtime.workspace.agents_dir)
    close = report.get("closest")
    guess = f"did you mean {close}?" if close else f"`ls {where}` lists the agents"
    console().print(escape(f"no agent {report['agent_id']} in {where}/: {guess}"))


def _closest_skill_line(runtime: Runtime, report: dict[str, Any], provider: str | None) -> None:
    """For a skill none of the providers asked about has (a report with `closest_skill`), the
    skill it may be a typo of, or the skills there are: a typo must not pass for no ratings."""
    if "closest_skill" not in report:
        return
    # Imported here, as the queries are, so that a submit starts without them.
    from rich.markup import escape

    from feedbackd.app.commands.skillnames import known_skills

    close, skill = report["closest_skill"], report["skill_id"]
    said = f"{provider} has no skill {skill}" if provider else f"no agent has a skill {skill}"
    if close:
        guess = f"did you mean {close}?"
    else:
        known = known_skills(runtime, [provider] if provider else agent_ids(runtime.workspace))
        shown = ", ".join(known[:_SHOWN_SKILLS]) + (", …" if len(known) > _SHOWN_SKILLS else "")
        whose = "its skills are" if provider else "the skills are"
        guess = f"{whose}: {shown}" if known else "no skill is in a SOUL.md or rated yet"
    console().print(escape(f"{said}: {guess}"))


@command
def reputation(
    agent: AgentArg,
    skill: Annotated[str | None, typer.Option("--skill", help="Only this skill.")] = None,
    as_json: JsonOption = False,
) -> None:
    """A provider's reputation score (0-1), overall and per skill."""
    from feedbackd.app.commands import queries

    runtime = GLOBALS.runtime()
    with progress_bar("indexing ratings", not as_json) as progress:
        report = queries.reputation(runtime, agent, skill, progress)
    if as_json:
        print_json(report)
        return
    out = console()
    if not report["feedback_count"]:
        never = "never rated" if report.get("known") is False else "no ratings yet"
        out.print(
            f"{agent}: reputation {report['reputation_score']}: {never}, so the starting"
            " value (reputation.cold_start, as AgentBnB)"
        )
        _closest_line(runtime, report)
        _closest_skill_line(runtime, {**report, "skill_id": skill}, agent)
        return
    out.print(
        f"{agent}: reputation {report['reputation_score']} from"
        f" {counted(report['feedback_count'], 'rating')} (confidence {report['confidence']}:"
        " the ratings' total weight, each counting less as it ages)"
    )
    skills = report.get("skills")
    for skill_id, values in skills.items() if isinstance(skills, dict) else []:
        out.print(
            f"  {skill_id}: {values['reputation_score']}"
            f" ({counted(values['feedback_count'], 'rating')})"
        )


@command
def memory(
    agent: AgentArg,
    category: Annotated[str | None, typer.Option("--category", help="e.g. cases")] = None,
    as_json: JsonOption = False,
) -> None:
    """An agent's memory records, highest importance first."""
    runtime = GLOBALS.runtime()
    records = list_memory(runtime.workspace, existing_agent(runtime, agent).agent_id, category)
    if as_json:
        print_json([json.loads(record.line()) for record in records])
        return
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"Memory of {agent}", show_edge=False)
    for column in ("importance", "category", "subject", "content"):
        table.add_column(column)
    for record in records:
        table.add_row(
            f"{record.importance:.2f}",
            escape(record.category),
            escape(record.subject or ""),
            escape(record.content),
        )
    console().print(table)
