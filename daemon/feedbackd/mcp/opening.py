"""The workspace an MCP server answers for, read again whenever its configuration file changes
(or appears, or goes), so an edited feedbackd.yaml counts at the next call, as it does for the
daemon, the commands and the HTTP API; an unchanged one is not parsed again."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from feedbackd.app.workspace.configfile import config_path
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.edges.files import FileState, file_state

Seen = tuple[str | None, FileState | None]


class Opener:
    """Calls to the server run in worker threads: one opens the settings at a time. `adjust`
    is applied to each runtime opened (over HTTP: how long a write waits for the lock)."""

    def __init__(
        self, runtime: Runtime, config: str | None, adjust: Callable[[Runtime], Runtime]
    ) -> None:
        self.config = config
        self._adjust = adjust
        self._lock = threading.Lock()
        self._root = runtime.workspace.root
        self._seen: Seen = self._config_state()
        self._runtime = adjust(runtime)

    def __call__(self) -> Runtime:
        with self._lock:
            seen = self._config_state()
            if seen != self._seen:
                self._runtime = self._adjust(Runtime.open(str(self._root), self.config))
                self._seen = seen
            return self._runtime

    def _config_state(self) -> Seen:
        path: Path | None = config_path(self.config, self._root)
        return (None, None) if path is None else (str(path), file_state(path))
