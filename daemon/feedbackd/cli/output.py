"""How commands speak: JSON for scripts, plain lines or rich tables for people, errors on stderr."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import Progress as RichProgress

from feedbackd.core.errors import FeedbackdError

Progress = Callable[[int, int], None]


def console(stderr: bool = False) -> Console:
    # NO_COLOR asks for plain text: rich's own no_color keeps bold and italics, so drop every style.
    plain = bool(os.environ.get("NO_COLOR"))
    return Console(
        stderr=stderr,
        color_system=None if plain else "auto",
        no_color=plain,
        highlight=False,
        soft_wrap=True,
    )


def print_json(value: Any) -> None:
    text = json.dumps(value, indent=2, ensure_ascii=False)
    sys.stdout.write(_UNDECODABLE.sub(_shown_byte, text) + "\n")


# A file name that is not UTF-8 is read with surrogateescape: each byte that is not UTF-8 stands
# as one of these characters, which written out would make the JSON invalid UTF-8. It is shown
# as the text `\xe9` instead, as doctor's plain output shows it.
_UNDECODABLE = re.compile("[\udc80-\udcff]")


def _shown_byte(found: re.Match[str]) -> str:
    return f"\\\\x{ord(found.group()) - 0xDC00:02x}"


def print_error(error: FeedbackdError, as_json: bool) -> None:
    if as_json:
        sys.stderr.write(json.dumps({"error": error.code, "message": str(error)}) + "\n")
    else:
        sys.stderr.write(f"error: {error.code}: {error}\n")


def is_terminal() -> bool:
    return sys.stdout.isatty()


@contextmanager
def progress_bar(
    description: str, enabled: bool = True, *, stderr: bool = False
) -> Iterator[Progress | None]:
    """A progress callback `(done, total)` for long work on a terminal; None elsewhere.

    The bar is drawn on stdout, or with stderr=True on stderr (for a command whose stdout is
    its report), then only when both are terminals. Log lines go above it while it is shown."""
    if not enabled or not is_terminal() or (stderr and not sys.stderr.isatty()):
        yield None
        return
    with RichProgress(transient=True, console=console(stderr=stderr)) as bar, _logs_above_bar():
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


@contextmanager
def _logs_above_bar() -> Iterator[None]:
    """Point feedbackd's log handlers at rich's stand-in for stderr while a bar is shown, so a
    log line is printed above the bar instead of through it."""
    handlers = [
        handler
        for handler in logging.getLogger("feedbackd").handlers
        if isinstance(handler, logging.StreamHandler) and handler.stream is sys.__stderr__
    ]
    for handler in handlers:
        handler.setStream(sys.stderr)
    try:
        yield
    finally:
        for handler in handlers:
            handler.setStream(sys.__stderr__)
