"""Where `feedbackd` and `python -m feedbackd` start.

git runs the merge driver once for every file it merges, so `feedbackd merge-driver ...` goes
straight to the driver, which imports only the merge and the configuration; `feedbackd --version`
is answered here, before any of the command line is imported; every other command goes to the
command line, which imports a command's machinery only when that command runs.

This module sits above the faces (cli/, web/, mcp/), which never import each other: it hands the
command line the HTTP face for `feedbackd serve` (with the MCP face's `/mcp` mounted in it) and
the MCP face for `feedbackd mcp`.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from feedbackd import __version__

if TYPE_CHECKING:
    from feedbackd.app.workspace.runtime import Runtime


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
