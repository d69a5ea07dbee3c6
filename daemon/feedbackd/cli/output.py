"""How commands speak: JSON for scripts, plain lines or rich tables for people, errors on stderr.

rich is imported where a console, a bar or a table is made, not at the top: a command that
prints JSON (a rating submit, any command with --json) starts without it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import select
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from feedbackd.core.errors import FeedbackdError
from feedbackd.core.wording import Progress

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text


def console(stderr: bool = False) -> Console:
    from rich.console import Console

    # NO_COLOR asks for plain text: rich's own no_color keeps bold and italics, so drop every style.
    plain = bool(os.environ.get("NO_COLOR"))
    return (Console if stderr else _output_console())(
        stderr=stderr,
        color_system=None if plain else "auto",
        no_color=plain,
        highlight=False,
        soft_wrap=True,
    )


def _output_console() -> type[Console]:
    """rich's Console, except that a broken pipe on standard output raises BrokenPipeError
    as every other write does (rich exits 1 at once), so a command stops as below."""
    from rich.console import Console

    class OutputConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "the reader of standard output has gone")

    return OutputConsole


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
    from rich.progress import Progress as RichProgress

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


# --- tables that fit the terminal ---------------------------------------------------------------
# A table of names, numbers and prose is fitted to the terminal's width without cutting anything
# a reader copies into another command: names (ids, numbers) are shown whole on one line, prose
# is wrapped between its words (the summary first, then the other text columns), and where even
# that does not fit, the columns a reader misses least are left out, one by one, before a word
# or a name would be broken.
NAME, TEXT, FLEX = "name", "text", "flex"
FLEX_MIN = 24  # the fewest cells of the column that takes the room left (a summary, a change)
FLEX_WORD = 40  # a longer word in it (a URL) is broken rather than widen the column further
_MEASURE_WIDTH = 100_000  # rich clamps a measurement to the width it is given: give it room


@dataclass(frozen=True)
class Column:
    """A column of `fitted_table`. kind NAME: shown whole on one line (broken over lines, never
    cut, only when no column is left to drop); TEXT: wrapped between words where needed; FLEX:
    text that is narrowed first, down to FLEX_MIN. `drop`: 0 for a column always shown, else
    the order in which columns are left out (1 first) and TEXT ones narrowed."""

    header: str
    kind: str = TEXT
    drop: int = 0


def fitted_table(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int, **options: Any
) -> Table:
    """A rich Table of `rows` (markup strings, one per column) for a terminal `width` wide,
    with the fewest of the droppable columns left out; `options` are Table's (title, box...)."""
    from rich.table import Table
    from rich.text import Text

    cells = [[Text.from_markup(row[n]) for row in rows] for n in range(len(columns))]
    kept = list(range(len(columns)))
    while True:
        room = width - _frame_width(len(kept), options)
        widths = _widths([columns[n] for n in kept], [cells[n] for n in kept], room)
        droppable = [n for n in kept if columns[n].drop]
        if widths is not None or not droppable:
            break
        kept.remove(min(droppable, key=lambda n: columns[n].drop))
    table = Table(**options)
    for at, n in enumerate(kept):
        fixed = widths[at] if widths is not None else None
        table.add_column(columns[n].header, width=fixed, overflow="fold")
    for row in rows:
        table.add_row(*(row[n] for n in kept))
    return table


def _widths(columns: Sequence[Column], cells: Sequence[list[Text]], room: int) -> list[int] | None:
    """Each column's width within `room` cells, narrowing the FLEX column, then the TEXT ones
    (the most droppable first), never below their longest word; None when they cannot fit."""
    from rich.text import Text

    texts = [
        [*column_cells, Text(column.header)]
        for column, column_cells in zip(columns, cells, strict=True)
    ]
    widths = [_longest(lines) for lines in texts]
    least = [
        _least(column, lines, whole)
        for column, lines, whole in zip(columns, texts, widths, strict=True)
    ]
    order = sorted(
        (n for n, column in enumerate(columns) if column.kind != NAME),
        key=lambda n: (columns[n].kind != FLEX, columns[n].drop or len(columns) + 1),
    )
    for n in order:
        over = sum(widths) - room
        if over <= 0:
            break
        widths[n] = _wrapped_width(texts[n], max(least[n], widths[n] - over))
    flex = [n for n in order if columns[n].kind == FLEX]
    for n in flex:  # what a wrapped column left unused goes to the column that takes the rest
        widths[n] = min(_longest(texts[n]), widths[n] + max(0, room - sum(widths)))
    return widths if sum(widths) <= room else None


def _wrapped_width(cells: Sequence[Text], width: int) -> int:
    """The width `cells` take once wrapped between words at `width` (often a little less)."""
    from rich.cells import cell_len
    from rich.console import Console

    wide = Console(width=_MEASURE_WIDTH, color_system=None)
    lines = [line.plain.rstrip() for cell in cells for line in cell.wrap(wide, width)]
    return max((cell_len(line) for line in lines), default=width)


def _least(column: Column, cells: Sequence[Text], whole: int) -> int:
    """The fewest cells a column may have: a name's whole width, a text's longest word."""
    from rich.cells import cell_len

    if column.kind == NAME:
        return whole
    word = max((cell_len(w) for cell in cells for w in cell.plain.split()), default=0)
    if column.kind == FLEX:
        return min(whole, max(FLEX_MIN, min(word, FLEX_WORD)))
    return word


def _longest(cells: Sequence[Text]) -> int:
    return max((line.cell_len for cell in cells for line in cell.split("\n")), default=0)


def _frame_width(count: int, options: dict[str, Any]) -> int:
    """The cells a table of `count` columns takes besides their text: borders and padding."""
    from rich.console import Console
    from rich.table import Table

    frame = Table(**{key: value for key, value in options.items() if key != "title"})
    for _ in range(count):
        frame.add_column(width=1)
    wide = Console(width=_MEASURE_WIDTH, color_system=None)
    return wide.measure(frame).minimum - count


# --- standard output whose reader has gone --------------------------------------------------------
# `feedbackd export ... | head -1`: `head` closes the pipe once it has its line, and the next write
# fails with EPIPE. That is no error of the command: it stops where it is, quietly (no traceback,
# no error line), with the exit status a shell reports for a command that SIGPIPE stopped, as
# `seq 1 100000 | head -1` does. Python ignores SIGPIPE, so the write raises BrokenPipeError
# instead of ending the process; only one on standard output is the reader's doing (a pipe to a
# child, such as git, that died is not).
# 128 + SIGPIPE: what a shell shows for a command stopped by its reader (`set -o pipefail`).
READER_GONE_EXIT = 141


def reader_gone(error: BaseException) -> bool:
    """True when `error` is a write that failed because standard output's reader has gone."""
    return isinstance(error, BrokenPipeError) and stdout_has_no_reader()


def stdout_has_no_reader() -> bool:
    """True when standard output is a pipe whose reader has gone. click and rich meet a broken
    pipe themselves (printing help, a table) and exit 1 quietly: this tells that exit apart."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by something that is not a file
        return False
    poller = select.poll()
    poller.register(descriptor, 0)  # POLLERR is always reported: a pipe with no reader left
    return any(events & select.POLLERR for _, events in poller.poll(0))


def stop_writing() -> None:
    """Send whatever standard output still holds to /dev/null: Python flushes it at exit, and a
    second BrokenPipeError there would print "Exception ignored" on stderr."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
