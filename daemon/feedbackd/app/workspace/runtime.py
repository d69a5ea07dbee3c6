"""What every command and the daemon share: the workspace, its settings and who is acting."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from feedbackd.app.workspace.configfile import config_path, read_config
from feedbackd.app.workspace.told import Told
from feedbackd.core.config import Settings, parse_settings
from feedbackd.core.errors import WorkspaceError
from feedbackd.core.people import FEEDBACKD_PERSON, Person, parse_person
from feedbackd.core.workspacepaths import Workspace
from feedbackd.edges.files import read_file_bytes
from feedbackd.edges.git.batch import GitBatchKeeper
from feedbackd.edges.ratingcache import RatingCache


@dataclass(frozen=True)
class Runtime:
    workspace: Workspace
    settings: Settings
    config_file: Path | None = None
    curator: str | None = None  # --curator for this command
    # The curator signed in (a token of http.users_file): their write is theirs, whatever
    # `curator` the draft itself names.
    signed_in: bool = False
    # git's long-lived helpers, kept from one pass (or request) to the next
    git_helpers: GitBatchKeeper = field(default_factory=GitBatchKeeper, compare=False, repr=False)
    # the ratings windows read so far, so that each new rating reads only what was appended
    rating_cache: RatingCache = field(default_factory=RatingCache, compare=False, repr=False)
    # what the passes logged about files they cannot use: told once per change of the file
    told: Told = field(default_factory=Told, compare=False, repr=False)
    # How long a write waits for another writer before it gives up, having changed nothing: for
    # the workspace's write lock, and for git's index lock that a git command holds. A command
    # waits long (a curator at a terminal sees it wait); the web server, http.write_wait_s.
    write_wait_s: float = 60.0
    index_wait_s: float = 30.0
    # The time a pass records its decisions at (None: the system's), told for the demo's
    # history, made through the same passes at its own times (git's from GIT_*_DATE then).
    clock: Callable[[], datetime] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def open(cls, workspace: str | None, config: str | None) -> Runtime:
        root = discover_root(workspace)
        path = config_path(config, root)
        settings = load_settings(path)
        return cls(Workspace(root, settings.data_dir), settings, path)

    def with_curator(self, curator: str | None, *, signed_in: bool = False) -> Runtime:
        if curator is not None:
            parse_person(curator, "--curator")
        return replace(self, curator=curator, signed_in=signed_in and curator is not None)

    def waiting_at_most(self, seconds: float) -> Runtime:
        """This runtime for writes that wait `seconds` at most for each lock (a web request)."""
        return replace(self, write_wait_s=seconds, index_wait_s=seconds)

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
    """The curator: the item's `curator`, else --curator, else $FEEDBACKD_CURATOR, else git's;
    a curator signed in over HTTP before all."""
    if runtime.signed_in and runtime.curator:
        return parse_person(runtime.curator, "--curator")
    for source, value in (
        ("curator", item_curator),
        ("--curator", runtime.curator),
        ("FEEDBACKD_CURATOR", os.environ.get("FEEDBACKD_CURATOR")),
    ):
        if value:
            return parse_person(value, source)
    return workspace_user or FEEDBACKD_PERSON


def load_settings(path: Path | None) -> Settings:
    if path is None:
        return Settings()
    return parse_settings(read_config(path), str(path), secret_reader(path.parent))


def secret_reader(folder: Path) -> Callable[[str], str]:
    """Reads a webhook's secret file, named relative to the configuration file's folder."""

    def read(name: str) -> str:
        return read_secret_file(folder / Path(name).expanduser())

    return read


def read_secret_file(path: Path) -> str:
    """A secret file's text: a few hundred bytes at most, never a whole large file."""
    return read_file_bytes(path, limit=4096).decode("utf-8", errors="replace")


WORKSPACE_MARK = "feedbackd.yaml"  # what makes a folder a workspace for discovery


def discover_root(explicit: str | None, cwd: Path | None = None) -> Path:
    """--workspace, else $FEEDBACKD_WORKSPACE, else the nearest ancestor holding
    `feedbackd.yaml`, which `init` always writes and commits (so every clone is found). A
    folder that merely holds `_data/`, such as feedbackd's own source checkout, is not a
    workspace: a command run there by mistake must not commit into it."""
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
        if (folder / WORKSPACE_MARK).is_file():
            return folder
    raise WorkspaceError("no feedbackd workspace here", hint="run feedbackd init, or pass -w")
