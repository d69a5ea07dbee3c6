"""The `feedbackd` command line: parse options, call one function, map errors to exit codes.

Exit codes: 0 success, 1 refused input or failed operation, 2 bad usage, 3 internal error.

Every command pays at start-up for what the process imports, so a command imports what it runs
(app/, and through it pydantic, git and SQLite) in its body, and the commands of the other
command modules (ratings, stats, export...) are imported only when one of them runs or `--help`
lists them all (`CommandLine`).
"""

from __future__ import annotations

import functools
import importlib
import logging
import sys
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from feedbackd import __version__
from feedbackd.cli import logsetup
from feedbackd.cli.common import GLOBALS, AgentArg, JsonOption, command, report_out
from feedbackd.cli.output import (
    READER_GONE_EXIT,
    print_error,
    print_json,
    progress_bar,
    stdout_has_no_reader,
)
from feedbackd.core.errors import Aborted, UsageError

if TYPE_CHECKING:
    from feedbackd.app.workspace.runtime import Runtime

# The commands of the other command modules, each module with a `register(app)` that adds its
# commands to a typer app, in the order `feedbackd --help` lists them (after this module's own).
ELSEWHERE = {
    "reputation": "feedbackd.cli.ratings",
    "memory": "feedbackd.cli.ratings",
    "optimize": "feedbackd.cli.optimize",
    "merge-driver": "feedbackd.cli.sync",
    "sync": "feedbackd.cli.sync",
    "export": "feedbackd.cli.export",
    "stats": "feedbackd.cli.stats",
    "agreement": "feedbackd.cli.stats",
    "eval": "feedbackd.cli.evaluation",
    "bisect": "feedbackd.cli.evaluation",
    "feedback": "feedbackd.cli.ratings",
    "events": "feedbackd.cli.events",
}


class _Commands(MutableMapping[str, Any]):
    """The command line's commands by name: this module's, built by typer, then those of
    ELSEWHERE, whose module is imported the first time one of its commands is looked up. The
    names are all known from the start, so a typo's "Did you mean" names every command."""

    def __init__(self, own: MutableMapping[str, Any]) -> None:
        self._built = dict(own)

    def __getitem__(self, name: str) -> Any:
        if name not in self._built and name in ELSEWHERE:
            self._built.update(_commands_of(ELSEWHERE[name]))
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        yield from self._built
        yield from (name for name in ELSEWHERE if name not in self._built)

    def __len__(self) -> int:
        return len(self._built.keys() | ELSEWHERE.keys())


def _commands_of(module: str) -> dict[str, Any]:
    """The commands `module` registers, built as typer builds those of the command line."""
    registry = typer.Typer(add_completion=False, rich_markup_mode=None)
    importlib.import_module(module).register(registry)
    return dict(typer.main.get_group(registry).commands)


class CommandLine(TyperGroup):
    """typer's group of commands, with those of the other command modules loaded lazily."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _Commands(self.commands)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # the names only: listing them loads no module


app = typer.Typer(
    name="feedbackd",
    cls=CommandLine,
    help="Git-backed feedback loop for AI agents: curator decisions and buyer ratings in files.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help, as click writes it: typer's panels show `<bool>` after flags that take no
    # value (--json, --quiet, --help), which reads as if they needed one.
    rich_markup_mode=None,
)
log = logging.getLogger("feedbackd")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"feedbackd {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    workspace: Annotated[
        str | None, typer.Option("--workspace", "-w", help="Workspace folder (holds _data/).")
    ] = None,
    config: Annotated[str | None, typer.Option("--config", help="Configuration file.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only errors.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON for scripts (before or after the command).")
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show version.")
    ] = False,
) -> None:
    GLOBALS.workspace, GLOBALS.config = workspace, config
    GLOBALS.quiet, GLOBALS.verbose, GLOBALS.json = quiet, verbose, as_json
    logsetup.configure(verbose=verbose, quiet=quiet)


@app.command()
@command
def approve(
    agent: AgentArg,
    item: Annotated[str, typer.Argument(help="Item id (file name without extension).")],
    curator: Annotated[str | None, typer.Option(help='Who decided: "Name <email>".')] = None,
    as_json: JsonOption = False,
) -> None:
    """Move queue/ITEM to approved/ and record the corrections.

    An import of past decisions sets GIT_AUTHOR_DATE and GIT_COMMITTER_DATE: the decision is
    recorded and committed at that time (docs/learning.md, Importing past decisions)."""
    from feedbackd.app.commands import actions

    runtime = GLOBALS.runtime().with_curator(curator)
    report_out(actions.approve(runtime, agent, item), as_json, runtime.workspace.root)


@app.command()
@command
def reject(
    agent: AgentArg,
    item: Annotated[str, typer.Argument(help="Item id (file name without extension).")],
    notes: Annotated[str, typer.Option("--notes", help="Why it was rejected.")],
    curator: Annotated[str | None, typer.Option(help='Who decided: "Name <email>".')] = None,
    as_json: JsonOption = False,
) -> None:
    """Write the note into the item, move it to rejected/ and record the rejection.

    GIT_AUTHOR_DATE and GIT_COMMITTER_DATE, when set, date the decision (as for approve)."""
    from feedbackd.app.commands import actions

    runtime = GLOBALS.runtime().with_curator(curator)
    report_out(actions.reject(runtime, agent, item, notes), as_json, runtime.workspace.root)


@app.command()
@command
def record(
    agent: AgentArg,
    payload: Annotated[
        str,
        typer.Option("--json", help="{type, queueItemId?, field?, original?, corrected?, notes?}"),
    ],
    curator: Annotated[str | None, typer.Option(help='Who recorded it: "Name <email>".')] = None,
) -> None:
    """Record one feedback entry programmatically."""
    from feedbackd.app.commands import actions

    runtime = GLOBALS.runtime().with_curator(curator)
    entry = actions.record(runtime, agent, actions.parse_record(payload))  # warnings are logged
    print_json(entry.to_json())


@app.command()
@command
def forget(
    agent: AgentArg,
    entry: Annotated[
        str | None,
        typer.Argument(help="The entry's id (`recent AGENT --json` lists them)."),
    ] = None,
    everything: Annotated[
        bool, typer.Option("--all", help="Every lesson of the agent, in one commit.")
    ] = False,
    reason: Annotated[
        str, typer.Option(help="Why it is taken back (in the commit and forgotten.jsonl).")
    ] = "",
    curator: Annotated[str | None, typer.Option(help='Who took it back: "Name <email>".')] = None,
    as_json: JsonOption = False,
) -> None:
    """Take back one lesson (a curator's slip), or with --all every lesson of the agent, without
    undoing any decision: `forget AGENT ENTRY_ID [--reason TEXT]`,
    `forget AGENT --all [--reason TEXT]`."""
    if (entry is None) == (not everything):
        raise UsageError(
            "forget takes either an entry id or --all" + (", not both" if everything else ""),
            hint="`feedbackd forget AGENT ENTRY_ID` takes one lesson back;"
            " `feedbackd forget AGENT --all` wipes them all",
        )
    from feedbackd.app.commands import actions

    runtime = GLOBALS.runtime().with_curator(curator)
    if entry is None:
        report = actions.forget_all(runtime, agent, reason)
    else:
        report = actions.forget(runtime, agent, entry, reason)
    report_out(report, as_json, runtime.workspace.root)


@app.command()
@command
def recent(
    agent: AgentArg,
    limit: Annotated[int, typer.Option(min=1, help="How many entries.")] = 5,
    as_json: JsonOption = False,
) -> None:
    """Recent feedback of an agent, newest first."""
    from feedbackd.cli.views import show_recent

    show_recent(GLOBALS.runtime(), agent, limit, as_json)


@app.command()
@command
def prompt(
    agent: AgentArg,
    at: Annotated[
        str | None,
        typer.Option(
            help="The snippet as it was then: a revision (HEAD~3, a sha), a time or a date"
            " (2026-11-30: the end of that day, UTC)."
        ),
    ] = None,
    for_task: Annotated[
        str | None,
        typer.Option(
            "--for",
            metavar="FILE|-",
            help="With the examples most relevant to this task or draft (- reads stdin).",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help='Print {"agent", "text", "examples"}.')
    ] = False,
) -> None:
    """Print the agent's prompt snippet (prompt/feedback.md), now or as it was `--at` a time;
    with `--for`, the examples (and notes) chosen for a task or a draft instead of the last."""
    if for_task is not None:
        _prompt_for(agent, for_task, at, as_json)
        return
    from feedbackd.app.commands.queries import prompt_text
    from feedbackd.app.commands.snippet import prompt_json

    if as_json:
        print_json(prompt_json(GLOBALS.runtime(), agent, at))
    else:
        sys.stdout.write(prompt_text(GLOBALS.runtime(), agent, at))


def _prompt_for(agent: str, argument: str, at: str | None, as_json: bool) -> None:
    if at is not None:
        raise UsageError(
            "--for and --at do not go together",
            hint="--for ranks the lessons the agent has now; --at shows a past snippet as it was",
        )
    # Ranking loads numpy: only this path pays for it.
    from feedbackd.app.commands.promptfor import snippet_for, task_of
    from feedbackd.app.commands.snippet import snippet_json

    runtime = GLOBALS.runtime()
    task = task_of(argument, sys.stdin.buffer.read)
    text, chosen = snippet_for(runtime, agent, task)
    if as_json:
        print_json(snippet_json(agent, text, chosen))
    else:
        sys.stdout.write(text)


@app.command("log")
@command
def log_command(
    agent: Annotated[str | None, typer.Argument(help="Only this agent.")] = None,
    since: Annotated[str | None, typer.Option(help="Only this recent, e.g. 7d.")] = None,
    as_json: JsonOption = False,
) -> None:
    """The learning history, from git commits, newest first."""
    from feedbackd.cli.views import show_log

    show_log(GLOBALS.runtime(), agent, since, as_json)


@app.command()
@command
def why(agent: AgentArg, as_json: JsonOption = False) -> None:
    """Where each example and note of the snippet came from: its decision commit."""
    from feedbackd.cli.why import show_why

    show_why(GLOBALS.runtime(), agent, as_json)


@app.command()
@command
def init(
    directory: Annotated[
        Path | None, typer.Argument(help="Folder to set up (default: here).")
    ] = None,
    sample: Annotated[bool, typer.Option("--sample", help="Add example agents.")] = False,
    webhouse: Annotated[
        bool,
        typer.Option(
            "--webhouse",
            help="A webhouse CMS site: decide its _data/curation-queue.json items by status.",
        ),
    ] = False,
) -> None:
    """Create or update a workspace: git repo, _data/agents/, config, ignores, merge driver."""
    from feedbackd.app.workspace.init import init_workspace

    root = (directory or Path(GLOBALS.workspace or ".")).absolute()
    for line in init_workspace(root, sample=sample, webhouse=webhouse):
        if not GLOBALS.quiet:
            typer.echo(line)


@app.command()
@command
def run(
    once: Annotated[
        bool, typer.Option("--once", help="Process everything pending, then exit.")
    ] = False,
    log_format: Annotated[str, typer.Option("--log-format", help="text or json")] = "text",
    as_json: JsonOption = False,
) -> None:
    """Run the daemon in the foreground (or one pass with --once)."""
    if log_format not in ("text", "json"):
        raise UsageError(f"--log-format {log_format!r}", hint="use text or json")
    logsetup.configure(
        verbose=GLOBALS.verbose, quiet=GLOBALS.quiet, json_lines=log_format == "json"
    )
    runtime = GLOBALS.runtime()
    if once:
        from feedbackd.app.daemon.runonce import run_once

        show = not (as_json or GLOBALS.quiet)
        with progress_bar("reconciling agents", show, stderr=True) as progress:
            report = run_once(runtime, progress=progress)
        report_out(report, as_json, runtime.workspace.root)
        return
    from feedbackd.app.daemon.service import run_daemon

    raise typer.Exit(run_daemon(runtime))


@app.command()
@command
def serve(
    listen: Annotated[
        str | None,
        typer.Option("--listen", help="HOST:PORT to listen on (default: http.listen)."),
    ] = None,
) -> None:
    """Serve the HTTP API and the web panel (loopback only, unless a token is set)."""
    if GLOBALS.serve_http is None:  # the command line run without its launcher (launch.py)
        raise UsageError("serve needs the HTTP face", hint="run it as `feedbackd serve`")
    raise typer.Exit(GLOBALS.serve_http(GLOBALS.runtime(), GLOBALS.config, listen))


@app.command()
@command
def mcp() -> None:
    """Serve the Model Context Protocol over standard input and output, as MCP hosts start a
    server: agents ask for lessons and ratings with tools (docs/mcp.md)."""
    if GLOBALS.serve_mcp is None:  # the command line run without its launcher (launch.py)
        raise UsageError("mcp needs the MCP face", hint="run it as `feedbackd mcp`")
    raise typer.Exit(GLOBALS.serve_mcp(GLOBALS.runtime(), GLOBALS.config))


@app.command()
@command
def doctor(as_json: JsonOption = False) -> None:
    """Validate every file of the workspace; exit 1 if a problem is found."""
    from feedbackd.cli.doctor import run_doctor

    raise typer.Exit(run_doctor(GLOBALS.runtime(), as_json))


@app.command()
@command
def status(as_json: JsonOption = False) -> None:
    """Is the daemon running? Its pid, uptime, last event, counts, pending files and problems."""
    from feedbackd.app.commands.queries import workspace_status
    from feedbackd.app.daemon.statusfile import daemon_progress
    from feedbackd.cli.views import show_status

    runtime, config_problems = _status_runtime()
    state = workspace_status(runtime, config_problems)
    if as_json:
        print_json(state)
    else:
        show_status(state, daemon_progress(runtime.workspace.state_dir))


def _status_runtime() -> tuple[Runtime, list[str]]:
    """The runtime for `status`, which must work with a broken configuration too: that is
    when a user asks why the daemon ignored a SIGHUP. Defaults then stand in, and the broken
    file is the first problem shown."""
    from feedbackd.app.workspace.runtime import Runtime, discover_root
    from feedbackd.core.config import Settings
    from feedbackd.core.errors import ConfigError
    from feedbackd.core.workspacepaths import Workspace

    try:
        return GLOBALS.runtime(), []
    except ConfigError as error:
        root = discover_root(GLOBALS.workspace)
        problem = f"configuration: {error}; other commands refuse to run until it is fixed"
        return Runtime(Workspace(root), Settings()), [problem]


def main(argv: list[str] | None = None, prog_name: str | None = None) -> int:
    """Run the command line on `argv` (default: this process's arguments); the exit code.

    `prog_name` is the name usage lines and hints give the program (default: as click tells it
    from how the process was started)."""
    args = sys.argv[1:] if argv is None else argv
    try:
        result = _click_group().main(args=args, prog_name=prog_name, standalone_mode=False)
    except typer.Abort:
        print_error(Aborted("aborted"), "--json" in args)
        return 1
    except SystemExit as exit_:
        if exit_.code == 1 and stdout_has_no_reader():  # click's or rich's quiet stop at EPIPE
            return READER_GONE_EXIT
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except Exception as error:
        # Bad usage caught by the option parser: click's errors (vendored by typer or not) carry
        # format_message and an exit code; anything else is a bug and keeps its traceback.
        if not callable(getattr(error, "format_message", None)):
            raise
        return _usage_error(error, "--json" in args)
    return result if isinstance(result, int) else 0


@functools.cache
def _click_group() -> CommandLine:
    """The command line as click runs it, built once per process: calling `app` has typer
    build it anew, reading every command's signature again (16 ms a call), which a caller that
    runs `main` again and again in one process (a tool driving feedbackd in-process, the tests'
    command-line kit) would pay on each command."""
    built = typer.main.get_command(app)
    assert isinstance(built, CommandLine)
    return built


def _usage_error(error: Exception, as_json: bool) -> int:
    """Usage errors speak like every other error: `error: usage: ...`, or JSON with --json."""
    code = getattr(error, "exit_code", 2)
    if type(error).__name__ == "NoArgsIsHelpError":  # bare `feedbackd`: show the help
        error.show()  # type: ignore[attr-defined]
        return int(code)
    context = getattr(error, "ctx", None)
    where = getattr(context, "command_path", "feedbackd")
    hint = f"see `{where} --help`"
    message = str(error.format_message())  # type: ignore[attr-defined]
    print_error(UsageError(message, hint=hint), as_json)
    return int(code)
