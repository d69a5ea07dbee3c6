"""What every command and the daemon share: the workspace, its settings and who is acting."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from feedbackd.core.commitmsg import Person, parse_person
from feedbackd.core.config import Settings, parse_settings
from feedbackd.core.errors import ConfigError, WorkspaceError
from feedbackd.core.workspace import Workspace
from feedbackd.edges.files import read_file_bytes

FALLBACK_AUTHOR = Person("feedbackd", "feedbackd@localhost")


@dataclass(frozen=True)
class Runtime:
    workspace: Workspace
    settings: Settings
    config_file: Path | None = None
    curator: str | None = None  # --curator for this command

    @classmethod
    def open(cls, workspace: str | None, config: str | None) -> Runtime:
        root = discover_root(workspace)
        path = config_path(config, root)
        settings = load_settings(path)
        return cls(Workspace(root, settings.data_dir), settings, path)

    def with_curator(self, curator: str | None) -> Runtime:
        if curator is not None:
            parse_person(curator, "--curator")
        return replace(self, curator=curator)

    def reload(self) -> Runtime:
        # A workspace feedbackd.yaml written since start-up is found, as a fresh start finds it.
        path = self.config_file or config_path(None, self.workspace.root)
        settings = load_settings(path)
        return replace(
            self,
            settings=settings,
            config_file=path,
            workspace=Workspace(self.workspace.root, settings.data_dir),
        )

    @property
    def git_enabled(self) -> bool:
        return self.settings.git.enabled

    @property
    def committer(self) -> Person:
        return parse_person(self.settings.git.committer, "git.committer")


def choose_author(
    item_curator: str | None, runtime: Runtime, workspace_user: Person | None
) -> Person:
    """The curator: the item's `curator`, else --curator, else $FEEDBACKD_CURATOR, else git's."""
    for source, value in (
        ("curator", item_curator),
        ("--curator", runtime.curator),
        ("FEEDBACKD_CURATOR", os.environ.get("FEEDBACKD_CURATOR")),
    ):
        if value:
            return parse_person(value, source)
    return workspace_user or FALLBACK_AUTHOR


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


def load_settings(path: Path | None) -> Settings:
    if path is None:
        return Settings()
    try:
        text = read_file_bytes(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    return parse_settings(text, str(path))


def discover_root(explicit: str | None, cwd: Path | None = None) -> Path:
    """--workspace, else $FEEDBACKD_WORKSPACE, else the nearest ancestor holding `_data/`."""
    chosen = explicit or os.environ.get("FEEDBACKD_WORKSPACE")
    if chosen:
        root = Path(chosen).expanduser().absolute()
        if not root.is_dir():
            raise WorkspaceError(
                f"workspace {root} does not exist",
                hint="create it with `feedbackd init DIR` or pass an existing folder to -w",
            )
        return root
    start = (cwd or Path.cwd()).absolute()
    for folder in (start, *start.parents):
        if (folder / "_data").is_dir():
            return folder
    raise WorkspaceError(
        f"no workspace found in {start} or its parents (no _data/ folder)",
        hint="run inside a workspace, pass -w DIR, or create one with `feedbackd init`",
    )
