"""Which file configures a run, and its text: `--config FILE`, else `$FEEDBACKD_CONFIG`, else
`<workspace>/feedbackd.yaml`, else none (the built-in defaults).

Apart from the settings model (core/config.py) so that a process that needs one key, the merge
driver, finds and reads the file without building the whole model.
"""

from __future__ import annotations

import os
from pathlib import Path

from feedbackd.core.errors import ConfigError
from feedbackd.edges.files import file_state, read_file_bytes


def config_path(explicit: str | None, workspace_root: Path | None) -> Path | None:
    """The file that configures this run, or None for built-in defaults."""
    chosen = explicit or os.environ.get("FEEDBACKD_CONFIG")
    if chosen:
        path = Path(chosen).expanduser()
        if not path.is_file():
            origin = "--config" if explicit else "$FEEDBACKD_CONFIG"
            raise ConfigError(
                f"config file {path} does not exist", hint=f"check {origin} or create the file"
            )
        return path
    if workspace_root is not None and (workspace_root / "feedbackd.yaml").is_file():
        return workspace_root / "feedbackd.yaml"
    return None


def read_config(path: Path) -> str:
    """The text of a configuration file; ConfigError when it cannot be read as UTF-8."""
    try:
        return read_file_bytes(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None


class SettingsFile:
    """The file the daemon's settings come from, watched by its size, time and inode: an edit
    is picked up as a SIGHUP would be, so the daemon and the commands never work to different
    settings."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen = file_state(path)

    def changed(self) -> bool:
        now = file_state(self.path)
        if now == self.seen:
            return False
        self.seen = now
        return True
