"""How commands speak: JSON for scripts, plain lines or rich tables for people, errors on stderr."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from rich.console import Console

from feedbackd.errors import FeedbackdError


def console(stderr: bool = False) -> Console:
    return Console(
        stderr=stderr,
        no_color=bool(os.environ.get("NO_COLOR")),
        highlight=False,
        soft_wrap=True,
    )


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def print_error(error: FeedbackdError, as_json: bool) -> None:
    if as_json:
        sys.stderr.write(json.dumps({"error": error.code, "message": str(error)}) + "\n")
    else:
        sys.stderr.write(f"error: {error.code}: {error}\n")


def is_terminal() -> bool:
    return sys.stdout.isatty()
