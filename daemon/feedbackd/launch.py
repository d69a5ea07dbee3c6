"""Where `feedbackd` and `python -m feedbackd` start.

git runs the merge driver once for every file it merges, so `feedbackd merge-driver ...` goes
straight to the driver, which imports only the merge and the configuration; `feedbackd --version`
is answered here, before any of the command line is imported; `feedbackd mcp` as a host starts it
goes straight to the MCP face (a host waits for its first answer); every other command goes to
the command line, which imports a command's machinery only when that command runs.

This module sits above the faces (cli/, web/, mcp/), which never import each other: it hands the
command line the HTTP face for `feedbackd serve` (with the MCP face's `/mcp` mounted in it) and
the MCP face for `feedbackd mcp`.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from feedbackd import __version__

if TYPE_CHECKING:
    from feedbackd.app.workspace.runtime import Runtime

# `feedbackd [OPTIONS] mcp [-w DIR]` with these options alone goes straight to the MCP face.
_VALUED = {"-w": "workspace", "--workspace": "workspace", "--config": "config"}
_FLAGS = {"-q": "quiet", "--quiet": "quiet", "-v": "verbose", "--verbose": "verbose"}
McpOptions = dict[str, str | bool]


def main(argv: list[str] | None = None, prog_name: str | None = None) -> int:
    """Run `feedbackd` on `argv` (default: this process's arguments); the exit code. `prog_name`:
    the program's name in usage lines and hints (default: as the process was started)."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:  # as the command line's --version says it, without loading it
        sys.stdout.write(f"feedbackd {__version__}\n")
        return 0
    if args[:1] == ["merge-driver"] and not {"--help", "-h"} & set(args):
        from feedbackd.cli.merge_driver import main as merge_driver

        return merge_driver(args[1:])
    options = mcp_options(args)
    served = None if options is None else _serve_mcp_directly(options)
    return _command_line(args, prog_name) if served is None else served


def _command_line(args: list[str], prog_name: str | None) -> int:
    from feedbackd.cli.common import GLOBALS
    from feedbackd.cli.main import main as command_line
    from feedbackd.cli.output import READER_GONE_EXIT, reader_gone, stop_writing

    GLOBALS.serve_http = _serve_http
    GLOBALS.serve_mcp = _serve_mcp
    try:
        return command_line(args, prog_name)
    except BrokenPipeError as error:  # outside a command (its help): as a command stops
        if not reader_gone(error):
            raise
        stop_writing()
        return READER_GONE_EXIT


def mcp_options(args: list[str]) -> McpOptions | None:
    """The options of `feedbackd [-w DIR] [--config FILE] [-q] [-v] mcp [-w DIR]` (each also as
    `--workspace=DIR`, `--config=FILE`); None for any other command line, which the command line
    reads. A -w after `mcp` counts over one before it, as for every command."""
    if "mcp" not in args:
        return None
    at = args.index("mcp")
    before, after = _options(args[:at]), _options(args[at + 1 :])
    if before is None or after is None or set(after) - {"workspace"}:
        return None
    return before | after


def _options(words: list[str]) -> McpOptions | None:
    found: McpOptions = {}
    words = [part for word in words for part in _split(word)]
    while words:
        word = words.pop(0)
        if word in _FLAGS:
            found[_FLAGS[word]] = True
        elif word in _VALUED and words and not words[0].startswith("-"):
            found[_VALUED[word]] = words.pop(0)
        else:
            return None
    return found


def _split(word: str) -> list[str]:
    name, equals, value = word.partition("=")
    return [name, value] if equals and name in ("--workspace", "--config") else [word]


def _serve_mcp_directly(options: McpOptions) -> int | None:
    """`feedbackd mcp` without the command line (typer, click, every command's options), which
    a host would wait for: the exit code; None where the workspace cannot be opened, for the
    command line to say why, as it says it for every command."""
    from feedbackd.cli import logsetup
    from feedbackd.core.errors import FeedbackdError

    try:
        runtime = _open(options.get("workspace"), options.get("config"))
    except FeedbackdError:
        return None
    logsetup.configure(verbose=options.get("verbose") is True, quiet=options.get("quiet") is True)
    config = options.get("config")
    return _as_a_command(lambda: _serve_mcp(runtime, config if isinstance(config, str) else None))


def _open(workspace: str | bool | None, config: str | bool | None) -> Runtime:
    """The workspace as the command line opens it for a command (GLOBALS.runtime)."""
    from feedbackd.app.workspace.runtime import Runtime
    from feedbackd.core.timeutil import git_date

    runtime = Runtime.open(
        workspace if isinstance(workspace, str) else None,
        config if isinstance(config, str) else None,
    )
    moment = git_date(os.environ)  # past decisions imported with git's dates set
    return runtime if moment is None else replace(runtime, clock=lambda: moment)


def _as_a_command(run: Callable[[], int]) -> int:
    """run's exit code, and a failure said and coded as the command line says one: a refusal
    exits 1 (2 for a usage), an interrupt 130, a bug 3 with its traceback in the log."""
    from feedbackd.cli.output import print_error
    from feedbackd.core.errors import FeedbackdError, InternalError, UsageError

    try:
        return run()
    except FeedbackdError as error:
        print_error(error, False)
        return 2 if isinstance(error, UsageError) else 1
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        logging.getLogger("feedbackd").exception("internal error")
        print_error(InternalError(f"internal error: {error}"), False)
        return 3


def _serve_http(runtime: Runtime, config: str | None, listen: str | None) -> int:
    """`feedbackd serve`: the HTTP face, imported only by this command (Starlette and uvicorn
    would slow every other command's start)."""
    from feedbackd.mcp.mounted import PATH, LazyMcp
    from feedbackd.web.server import serve

    return serve(runtime, config, listen, {PATH: LazyMcp(runtime, config)})


def _serve_mcp(runtime: Runtime, config: str | None) -> int:
    """`feedbackd mcp`: the MCP face over standard input and output, imported only by this
    command (the SDK takes most of a second to import)."""
    from feedbackd.mcp.stdio import serve_stdio

    return serve_stdio(runtime, config)
