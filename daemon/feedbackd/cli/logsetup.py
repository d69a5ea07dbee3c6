"""Logging: one event per line on stderr, as text or as JSON lines (`--log-format json`)."""

from __future__ import annotations

import json
import logging
import sys

from feedbackd.core.timeutil import iso_ms
from feedbackd.edges.clock import utcnow


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": iso_ms(utcnow()),
            "level": record.levelname.lower(),
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


class OneLine(logging.Formatter):
    """Text lines; a traceback is folded so that each event stays on one line."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"{record.levelname.lower()}: {record.getMessage()}"
        if record.exc_info:
            text += " | " + self.formatException(record.exc_info).replace("\n", " | ")
        return text


def configure(*, verbose: bool = False, quiet: bool = False, json_lines: bool = False) -> None:
    logger = logging.getLogger("feedbackd")
    logger.setLevel(logging.DEBUG if verbose else logging.ERROR if quiet else logging.INFO)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines() if json_lines else OneLine())
    logger.addHandler(handler)
    logger.propagate = False
