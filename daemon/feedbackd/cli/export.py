"""`feedbackd export AGENT --format openai-sft|openai-dpo|dspy|hf [--at REV|DATE] [--out PATH]`.

`cli/app.py` imports this module and calls `register` when `export` runs (or `--help` lists
every command).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from feedbackd.cli.common import GLOBALS, AgentArg, command
from feedbackd.cli.output import print_json
from feedbackd.core.wording import counted


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
    folder (data/train.jsonl and a dataset card) for `datasets.load_dataset`."""
    from feedbackd.loop.commands.exporting import open_export, write_export

    runtime = GLOBALS.runtime()
    opened = open_export(runtime, agent, export_format, at)
    written = write_export(opened, out, sys.stdout.buffer)
    if out is not None and as_json:
        print_json(
            {
                "agent": agent,
                "format": opened.format,
                "commit": opened.commit,
                "rows": written.lines,
                "out": str(out),
            }
        )
    elif out is not None and not GLOBALS.quiet:
        source = opened.commit[:12] if opened.commit else "no commit"
        typer.echo(
            f"exported {counted(written.lines, 'row')} of {agent}"
            f" ({opened.format}, from {source}) to {out}",
            err=True,
        )
