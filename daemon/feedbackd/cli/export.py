"""`feedbackd export AGENT --format openai-sft|openai-dpo|trl-sft|trl-dpo|trl-kto|dspy|hf
[--at REV|DATE] [--out PATH] [--split time:SHARE|hash:SHARE] [--dedup] [--with-snippet]
[--include-rejections]`.

`cli/main.py` imports this module and calls `register` when `export` runs (or `--help` lists
every command).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from feedbackd.cli.common import GLOBALS, AgentArg, command
from feedbackd.cli.output import print_json
from feedbackd.core.curation.exportsplits import VALIDATION, ExportOptions, parse_split
from feedbackd.core.wording import counted

if TYPE_CHECKING:
    from feedbackd.app.commands.exportwrite import Counts, Export


def register(app: typer.Typer) -> None:
    """Add `export` to the feedbackd command line."""
    app.command("export")(export)


FormatOption = Annotated[
    str | None,
    typer.Option(
        "--format",
        help="openai-sft, openai-dpo, trl-sft, trl-dpo, trl-kto, dspy or hf.",
        show_default=False,
    ),
]
AtOption = Annotated[
    str | None,
    typer.Option(
        help="As the history was then: a revision (HEAD~3, a sha), a time or a date"
        " (2026-11-30: the end of that day, UTC)."
    ),
]
OutOption = Annotated[
    Path | None,
    typer.Option(help="Write here (a file; for hf, a folder) instead of standard output."),
]
SplitOption = Annotated[
    str | None,
    typer.Option(
        help="time:0.9 (the last 10 % of decisions is validation) or hash:0.1 (a tenth"
        " of the items, by id, the same in every export); needs --out: validation goes"
        " to NAME.validation.jsonl, or to hf's validation split.",
        show_default=False,
    ),
]
DedupOption = Annotated[
    bool, typer.Option("--dedup", help="Keep only the newest row of each input.")
]
SnippetOption = Annotated[
    bool,
    typer.Option(
        "--with-snippet",
        help="Put the lessons the agent read when it drafted (its snippet then) in the"
        " prompt, after the input.",
    ),
]
RejectionsOption = Annotated[
    bool,
    typer.Option(
        "--include-rejections",
        help="dspy: keep rejections too (rows with output null, which optimisers refuse).",
    ),
]


JsonOption = Annotated[
    bool,
    typer.Option(
        "--json",
        help='With --out, print {"agent", "format", "commit", "rows", "out"}'
        " (the rows are JSON lines already).",
    ),
]


@command
def export(
    agent: AgentArg,
    export_format: FormatOption = None,
    at: AtOption = None,
    out: OutOption = None,
    split: SplitOption = None,
    dedup: DedupOption = False,
    with_snippet: SnippetOption = False,
    include_rejections: RejectionsOption = False,
    as_json: JsonOption = False,
) -> None:
    """Decided items as fine-tuning or evaluation data, from the git history (default HEAD).

    openai-sft: a chat line per approved item; openai-dpo: a preference line per corrected
    approval (approved preferred to the draft); trl-sft, trl-dpo, trl-kto: TRL's conversational
    prompt/completion, prompt/chosen/rejected and prompt/completion/label (approvals desirable,
    rejections not) with a metadata column; dspy: a JSON array of examples (approvals; with
    --include-rejections, rejections too); hf: a dataset folder (data/train-HASH.jsonl, TRL's
    columns among them, and a dataset card) for `datasets.load_dataset`. export.system in
    feedbackd.yaml (a text, or soul for the agent's SOUL.md) is the system message."""
    from feedbackd.app.commands.exportwrite import open_export, write_export

    options = ExportOptions(parse_split(split), dedup, with_snippet, include_rejections)
    opened = open_export(GLOBALS.runtime(), agent, export_format, at, options)
    written = write_export(opened, out, sys.stdout.buffer)
    if out is not None and as_json:
        print_json(_written_json(agent, opened, written, out))
    elif not GLOBALS.quiet:
        source = opened.commit[:12] if opened.commit else "no commit"
        for line in report(f"{agent} ({opened.format}, from {source})", out, written):
            typer.echo(line, err=True)


def _written_json(agent: str, opened: Export, written: Counts, out: Path) -> dict[str, object]:
    """--json with --out: what went where (the rows themselves are JSON lines already)."""
    rows = sum(written.lines.values())
    return {
        "agent": agent,
        "format": opened.format,
        "commit": opened.commit,
        "rows": rows,
        "out": str(out),
    }


def report(what: str, out: Path | None, written: Counts) -> list[str]:
    """What the export did, for standard error (the rows themselves may be on standard out)."""
    said = []
    if out is not None:
        rows = counted(sum(written.lines.values()), "row")
        validation = written.lines.get(VALIDATION)
        shared = "" if validation is None else f", {validation} in validation"
        said.append(f"exported {rows} of {what} to {out}{shared}")
    if written.dropped:
        duplicates = counted(written.dropped, "duplicate")
        said.append(f"{duplicates} dropped (the same input as a newer row)")
    if written.left_out:
        rejections = counted(written.left_out, "rejection")
        said.append(f"{rejections} left out (--include-rejections keeps them)")
    return said
