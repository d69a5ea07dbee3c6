"""Running feedbackd as the long-running daemon (`run`; `run --once` is runonce.py)."""

from __future__ import annotations

from feedbackd.app.daemon.eventful import EventfulDaemon
from feedbackd.app.workspace.runtime import Runtime


def run_daemon(runtime: Runtime) -> int:
    exit_code: int = EventfulDaemon(runtime).run()
    return exit_code
