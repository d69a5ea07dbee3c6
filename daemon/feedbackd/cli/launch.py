"""Where `feedbackd` and `python -m feedbackd` start.

git runs the merge driver once for every file it merges, so `feedbackd merge-driver ...` goes
straight to the driver, which imports only the merge and the configuration; every other command
goes to the full command line.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["merge-driver"] and not {"--help", "-h"} & set(args):
        from feedbackd.cli.merge_driver import main as merge_driver

        return merge_driver(args[1:])
    from feedbackd.cli.app import main as command_line

    return command_line()
