"""`feedbackd optimize [AGENT] [--dry-run] [--json]`: run the self-optimisation rules now.

It says what it changed (or, with --dry-run, would change) and why: price changes in SOUL.md,
lessons for weak skills, new descriptions. A dry run writes, commits and runs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import typer

from feedbackd.app.commits.locking import write_lock
from feedbackd.app.ratings.selfoptimize import optimize_all
from feedbackd.app.ratings.skillpass import SkillChange
from feedbackd.cli.common import GLOBALS, JsonOption, command
from feedbackd.cli.output import print_json

AgentOption = Annotated[str | None, typer.Argument(help="Only this agent (default: every agent).")]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Say what would change; change nothing.")
]


def register(app: typer.Typer) -> None:
    """Add the `optimize` command to the feedbackd command line."""
    app.command("optimize")(optimize)


@command
def optimize(
    agent: AgentOption = None, dry_run: DryRunOption = False, as_json: JsonOption = False
) -> None:
    """Cut prices buyers call too high and write lessons for weak skills (SOUL.md rules)."""
    runtime = GLOBALS.runtime()
    if dry_run:
        changes = optimize_all(runtime, agent, dry_run=True)
    else:
        with write_lock(runtime):
            changes = optimize_all(runtime, agent, dry_run=False)
    if as_json:
        print_json({"dry_run": dry_run, "changes": [c.to_json() for c in changes]})
    elif not GLOBALS.quiet:
        for line in describe(changes, dry_run):
            typer.echo(line)


def describe(changes: Sequence[SkillChange], dry_run: bool) -> list[str]:
    """One line per change: `pricing(agent/skill): 20 → 19 (why) [commit]`."""
    if not changes:
        return ["nothing to change"]
    lines = []
    for change in changes:
        prefix = "would " if dry_run else ""
        where = f"{change.kind}({change.agent}/{change.skill})"
        commit = f" [{change.commit[:8]}]" if change.commit else ""
        text = f"{prefix}{where}: {change.summary}{commit}"
        if change.why not in change.summary:
            text += f" — because {change.why}"
        lines.append(text)
    return lines
