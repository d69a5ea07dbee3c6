"""The command line of remote sync: `feedbackd merge-driver` (run by git) and `feedbackd sync`.

`cli/main.py` imports this module and calls `register` when one of its commands runs (or
`--help` lists them all).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from feedbackd.cli.common import GLOBALS, JsonOption, command, report_out
from feedbackd.cli.merge_driver import report_refusal, run_merge_driver
from feedbackd.cli.output import print_json
from feedbackd.core.errors import ConfigError, FeedbackdError


def register(app: typer.Typer) -> None:
    """Add `merge-driver` and `sync` to the feedbackd command line."""
    app.command("merge-driver")(merge_driver)
    app.command("sync")(sync)


def merge_driver(
    base: Annotated[Path, typer.Argument(help="The common ancestor's version (git's %O).")],
    ours: Annotated[Path, typer.Argument(help="Our version; the result goes here (%A).")],
    theirs: Annotated[Path, typer.Argument(help="Their version (%B).")],
    path: Annotated[
        str | None, typer.Argument(help="The file's path in the repository (%P).")
    ] = None,
    cap: Annotated[
        int | None,
        typer.Option("--cap", min=1, help="Entries kept in feedback.json (default: config)."),
    ] = None,
) -> None:
    """Merge feedback.json / *.jsonl for git: exit 0 merged, 1 left as a conflict."""
    try:
        run_merge_driver(base, ours, theirs, path, cap)
    except FeedbackdError as error:
        report_refusal(path, error)
        raise typer.Exit(1) from None


@command
def sync(as_json: JsonOption = False) -> None:
    """Pull (rebase) and push now; retries a sync that stopped at a conflict."""
    from feedbackd.app.remotesync import Syncer

    runtime = GLOBALS.runtime()
    syncer = Syncer(runtime)
    result = syncer.sync()
    if result.outcome == "disabled":
        raise ConfigError(
            "no remote to sync with: git.remote is not set (or git.enabled is false)",
            hint="add one (`git remote add origin URL`), then set `remote: origin` under `git:`"
            " in feedbackd.yaml",
        )
    if as_json:
        print_json({"outcome": result.outcome, "message": result.message, **syncer.status()})
    else:
        report_out(result.report, False, runtime.workspace.root)
        if not GLOBALS.quiet or not result.ok:
            typer.echo(result.message, err=not result.ok)
        if result.conflict is not None:
            typer.echo(f"to resolve: {result.conflict.resolve}", err=True)
    if result.outcome != "synced":
        raise typer.Exit(1)
