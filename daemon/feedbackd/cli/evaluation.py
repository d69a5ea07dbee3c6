"""`feedbackd eval AGENT [--at REV|DATE] [--against REV|DATE|none] [--items N] [--examples
recent|relevant] [--command CMD] [--jobs N] [--no-cache] [--note] [--json]` and `feedbackd
bisect AGENT --good REV --bad REV [--items N] [--command CMD] [--json]` (SPEC section 14):
would the lessons have helped, and which decision made them worse.

`cli/main.py` imports this module and calls `register` when one of them runs (or `--help`
lists every command).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import typer
from rich.markup import escape

from feedbackd.cli.common import GLOBALS, AgentArg, JsonOption, command
from feedbackd.cli.output import console, print_json

ItemsOption = Annotated[int, typer.Option("--items", help="How many later approvals to run.")]
CommandOption = Annotated[
    str | None,
    typer.Option(
        "--command",
        help="The agent command (default eval.command); builtin:apply-lessons needs no model.",
    ),
]


def register(app: typer.Typer) -> None:
    """Add `eval` and `bisect` to the feedbackd command line."""
    app.command("eval")(eval_command)
    app.command("bisect")(bisect_command)


@command
def eval_command(
    agent: AgentArg,
    at: Annotated[
        str | None,
        typer.Option(
            help="The lessons as of this revision or date"
            " (default: just before the last --items approvals)."
        ),
    ] = None,
    against: Annotated[
        str, typer.Option(help="The baseline: another revision or date, or none (no lessons).")
    ] = "none",
    items: ItemsOption = 50,
    examples: Annotated[
        str, typer.Option(help="recent (the snippet) or relevant (prompt --for each item).")
    ] = "recent",
    agent_command: CommandOption = None,
    jobs: Annotated[
        int | None, typer.Option(help="Commands run at once (default eval.jobs).")
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Run every answer again.")] = False,
    note: Annotated[
        bool, typer.Option("--note", help="Keep the report as a git note on the revision.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Would the lessons as of a revision have saved the corrections curators made after it?
    Runs the agent command on the approvals decided later, with those lessons and without."""
    from feedbackd.app.commands.evaluating import EvalAsk, run_eval

    ask = EvalAsk(agent, at, against, items, examples, agent_command, jobs, not no_cache, note)
    if examples == "relevant":  # the ranking loads numpy: only this path pays for it
        from feedbackd.app.commands.evalrelevant import relevant_lessons

        ask = dataclasses.replace(ask, rank=relevant_lessons)
    report = run_eval(GLOBALS.runtime(), ask)
    if as_json:
        print_json(report)
    else:
        show_eval(report)


def show_eval(report: dict[str, Any]) -> None:
    out = console()
    out.print(escape(eval_words(report)))
    for result in report["results"]:
        if "error" in result:
            out.print(escape(f"  failed: {result['item']}: {result['error']}"))
    fields = report["fields"]
    if fields:
        against = report["against"]["fields"]
        named = ", ".join(
            f"{name} {value:.2f} (vs {against.get(name, 0):.2f})" for name, value in fields.items()
        )
        out.print(escape(f"  by field: {named}"))


def eval_words(report: dict[str, Any]) -> str:
    """ "lessons as of 3f2a1c9: 0.94 vs 0.71 without lessons, +0.23 (95 % 0.18 to 0.28) on 50
    later approvals"."""
    against = report["against"]
    baseline = "without lessons" if against["at"] is None else f"with those of {against['at'][:7]}"
    scored = report["items"] - report["failed"]
    interval = report["ci95"]
    within = f" (95 % {interval[0]:.2f} to {interval[1]:.2f})" if interval else ""
    failed = f", {report['failed']} failed" if report["failed"] else ""
    return (
        f"lessons as of {report['at'][:7]}: {report['score']:.2f} vs {against['score']:.2f}"
        f" {baseline}, {report['delta']:+.2f}{within} on {scored} later approvals{failed}"
    )


@command
def bisect_command(
    agent: AgentArg,
    good: Annotated[str, typer.Option("--good", help="A revision whose lessons were good.")],
    bad: Annotated[str, typer.Option("--bad", help="A later revision whose lessons are worse.")],
    items: ItemsOption = 50,
    agent_command: CommandOption = None,
    as_json: JsonOption = False,
) -> None:
    """Find the decision that made the lessons worse, scoring each revision on the approvals
    decided after --bad; never touches the work tree or a `git bisect` of yours."""
    from feedbackd.app.commands.bisecting import run_bisect

    report = run_bisect(GLOBALS.runtime(), agent, good, bad, items, agent_command)
    if as_json:
        print_json(report)
    else:
        show_bisect(report)


def show_bisect(report: dict[str, Any]) -> None:
    out = console()
    out.print(escape(f"{report['candidates']} candidates, {report['items']} items; scores:"))
    for step in report["steps"]:
        out.print(escape(f"  {step['commit'][:12]}  {step['score']:.4f}"))
    first = report["first_bad"]
    if first is None:
        out.print(escape("No lesson change explains it: every candidate scored as good."))
        return
    out.print(escape(f"first bad decision: {first['commit'][:12]} {first['subject']}"))
    out.print(escape(f"  by {first['curator']}, item {first['item'] or '—'}"))
    for entry in first["entries"]:
        values = f"{entry.get('original', '')!r} → {entry.get('corrected', '')!r}"
        out.print(
            escape(f"  entry {entry['id']} ({entry.get('field') or entry['type']}): {values}")
        )
    for line in report["todo"]:
        out.print(escape(f"  to undo it: {line}"))
