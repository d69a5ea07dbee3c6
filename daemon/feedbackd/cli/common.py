"""What every command shares: the global options, the error-to-exit-code wrapper, the option
types and the way a pass's report is printed. Command modules import this, never the app that
registers them."""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from feedbackd.cli.output import (
    READER_GONE_EXIT,
    print_error,
    print_json,
    reader_gone,
    stop_writing,
)
from feedbackd.core.errors import DiskFull, FeedbackdError, InternalError, UsageError
from feedbackd.core.timeutil import git_date
from feedbackd.edges.files import NO_SPACE

if TYPE_CHECKING:
    from feedbackd.app.report import Report
    from feedbackd.app.workspace.runtime import Runtime

log = logging.getLogger("feedbackd")
F = TypeVar("F", bound=Callable[..., Any])
# The HTTP face's server: (the workspace, --config, --listen) → the exit code
ServeHttp = Callable[["Runtime", str | None, str | None], int]
# The MCP face's server over standard input and output: (the workspace, --config) → the exit code
ServeMcp = Callable[["Runtime", str | None], int]

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
AgentArg = Annotated[str, typer.Argument(help="Agent id (a folder under _data/agents/).")]
WorkspaceOption = Annotated[
    str | None,
    typer.Option(
        "--workspace", "-w", metavar="DIR", help="Workspace folder (before or after the command)."
    ),
]
# The parameter `command` gives every command, so that -w may follow the command as --json may.
_WORKSPACE = "workspace_option"


@dataclass
class Globals:
    workspace: str | None = None
    config: str | None = None
    quiet: bool = False
    verbose: bool = False
    json: bool = False  # `feedbackd --json COMMAND`: as `COMMAND --json`
    # `feedbackd serve` runs the HTTP face (feedbackd/web/), a room beside this one: the
    # launcher above both hands it over, so that neither face imports the other.
    serve_http: ServeHttp | None = None
    serve_mcp: ServeMcp | None = None  # `feedbackd mcp`: the MCP face (feedbackd/mcp/), as above

    def runtime(self) -> Runtime:
        # Imported here, as a command starts: the settings behind it load pydantic, which
        # `--help` and a bad usage do without.
        from feedbackd.app.workspace.runtime import Runtime

        runtime = Runtime.open(self.workspace, self.config)
        # Past decisions imported with git's dates set are recorded at those times.
        moment = git_date(os.environ)
        return runtime if moment is None else replace(runtime, clock=lambda: moment)


GLOBALS = Globals()


def command(func: F) -> F:
    """Turn FeedbackdError into `error: code: message` and exit 1 (2 for usage, 3 for bugs)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        workspace = kwargs.pop(_WORKSPACE, None)
        if workspace is not None:  # after the command: it counts over one given before
            GLOBALS.workspace = workspace
        if GLOBALS.json and "as_json" in kwargs:
            kwargs["as_json"] = True
        as_json = bool(kwargs.get("as_json")) or GLOBALS.json
        try:
            return func(*args, **kwargs)
        except typer.Exit:
            raise
        except FeedbackdError as error:
            print_error(error, as_json)
            raise typer.Exit(2 if isinstance(error, UsageError) else 1) from None
        except KeyboardInterrupt:
            raise typer.Exit(130) from None
        except OSError as error:
            raise _os_error(error, as_json) from None
        except Exception as error:  # a bug: say so, keep the traceback in the log
            raise _internal_error(error, as_json) from None

    wrapper.__signature__ = _with_workspace_option(func)  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


def group_options(workspace: WorkspaceOption = None) -> None:
    """The callback of a command group (`feedback`): -w after the group's name counts over one
    given before it, and one after the command over both, as everywhere else."""
    if workspace is not None:
        GLOBALS.workspace = workspace


def _with_workspace_option(func: Callable[..., Any]) -> inspect.Signature:
    """func's parameters and -w/--workspace: the signature typer reads options from."""
    signature = inspect.signature(func, eval_str=True)
    option = inspect.Parameter(
        _WORKSPACE, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=WorkspaceOption
    )
    return signature.replace(parameters=[*signature.parameters.values(), option])


def _os_error(error: OSError, as_json: bool) -> typer.Exit:
    """The exit for an OSError: a reader that has gone (`| head`) stops the command quietly, a
    full disk is the user's to fix, anything else is a bug."""
    if reader_gone(error):  # the reader has what it wanted
        stop_writing()
        return typer.Exit(READER_GONE_EXIT)
    if error.errno not in NO_SPACE:
        return _internal_error(error, as_json)
    print_error(_disk_full(error), as_json)
    return typer.Exit(1)


def _internal_error(error: Exception, as_json: bool) -> typer.Exit:
    """A bug: say so, keep the traceback in the log; the exit to raise."""
    log.exception("internal error")
    print_error(InternalError(f"internal error: {error}"), as_json)
    return typer.Exit(3)


def _disk_full(error: OSError) -> DiskFull:
    """A full disk is the user's to fix, not a bug. Every write is whole or absent (files are
    replaced atomically, log lines appended whole), so the command can simply be run again."""
    where = f" writing {error.filename}" if error.filename else ""
    return DiskFull(
        f"the disk is full ({error.strerror}){where}; nothing of this command was kept",
        hint="free some space on the workspace's disk and run the command again",
    )


def report_out(report: Report, as_json: bool, root: Path) -> None:
    """A pass's report; files are named relative to the workspace `root`."""
    if as_json:
        print_json(
            {
                "events": [event.to_json() for event in report.events],
                "problems": [problem.line(root) for problem in report.problems],
                "warnings": report.warnings,
            }
        )
        return
    if GLOBALS.quiet:
        return
    for event in report.events:
        commit = f" [{event.commit[:8]}]" if event.commit else ""
        typer.echo(f"{event.event}({event.agent}): {event.summary}{commit}")
    for problem in report.problems:
        state = "" if problem.settled else " (waiting for the writer to finish)"
        typer.echo(f"problem: {problem.line(root)}{state}", err=True)
