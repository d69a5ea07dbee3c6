"""`feedbackd export AGENT --format openai-sft|openai-dpo|dspy|hf [--at REV|DATE] [--out PATH]`.

`cli/app.py` imports this module and calls `register` when `export` runs (or `--help` lists
every command).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from feedbackd.cli.common import GLOBALS, AgentArg, command
from feedbackd.cli.output import print_json
from feedbackd.core.wording import counted

if TYPE_CHECKING:
    from feedbackd.loop.commands.exporting import Export


def register(app: typer.Typer) -> None:
    """Add `export` to the feedbackd command line."""
    app.command("export")(export)


@command
def export(
    agent: AgentArg,
    export_format: Annotated[
        str | None,
        typer.Option("--format", help="openai-sft, openai-dpo, dspy or hf.", show_default=False),
    ] = None,
    at: Annotated[
        str | None,
        typer.Option(
            help="As the history was then: a revision (HEAD~3, a sha), a time or a date"
            " (2026-11-30: the end of that day, UTC)."
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Write here (a file; for hf, a folder) instead of standard output."),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help='With --out, print {"agent", "format", "commit", "rows", "out"}'
            " (the rows are JSON lines already).",
        ),
    ] = False,
) -> None:
    """Decided items as fine-tuning or evaluation data, from the git history (default HEAD).

    openai-sft: a chat line per approved item; openai-dpo: a preference line per corrected
    approval (approved preferred to the draft); dspy: a JSON array of examples; hf: a dataset
    folder (data/train-HASH.jsonl and a dataset card) for `datasets.load_dataset`."""
    from feedbackd.loop.commands.exporting import open_export, write_export

    runtime = GLOBALS.runtime()
    opened = open_export(runtime, agent, export_format, at)
    written = write_export(opened, out, sys.stdout.buffer)
    if out is not None:
        _say_written(agent, opened, written.lines, out, as_json)


def _say_written(agent: str, opened: Export, rows: int, out: Path, as_json: bool) -> None:
    """What went where: JSON on stdout with --json, else a line on stderr (not with --quiet)."""
    if as_json:
        report = {"agent": agent, "format": opened.format, "commit": opened.commit}
        print_json({**report, "rows": rows, "out": str(out)})
    elif not GLOBALS.quiet:
        source = opened.commit[:12] if opened.commit else "no commit"
        typer.echo(
            f"exported {counted(rows, 'row')} of {agent} ({opened.format}, from {source}) to {out}",
            err=True,
        )
