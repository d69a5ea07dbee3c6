"""`feedbackd init`: make a folder a workspace (idempotent; safe in an existing clone)."""

from __future__ import annotations

import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from feedbackd.core.curation.merging import ATTRIBUTES, DRIVER_NAME, MERGE_SETTINGS
from feedbackd.core.curation.webhouseitems import DEFAULT_QUEUE_FILE
from feedbackd.core.errors import ConfigError, WorkspaceError
from feedbackd.core.formats import yamlio
from feedbackd.core.people import FEEDBACKD_PERSON, Person
from feedbackd.core.workspacepaths import ERROR_SUFFIX, STATE_DIR
from feedbackd.edges.files import (
    TMP_SUFFIX,
    atomic_write_text,
    read_file_text,
)
from feedbackd.edges.git.repo import GitRepo

IGNORED = [f"/{STATE_DIR}/", f"*{ERROR_SUFFIX}", f"*{TMP_SUFFIX}"]
CONFIG_TEMPLATE = """\
# feedbackd workspace configuration: uncomment a key to change it.
# Every key, its default and what it does: config/feedbackd.yaml in the feedbackd sources.
#
# feedback:
#   max_entries: 200
# prompt:
#   max_examples: 5
#   show_field: false
#   include_rejections: false
# git:
#   committer: "feedbackd <feedbackd@localhost>"
#   remote: origin
# daemon:
#   settle_ms: 2000
"""


WEBHOUSE_QUEUE = f"_data/{DEFAULT_QUEUE_FILE}"
WEBHOUSE_SECTION = f"""\
# A webhouse CMS site: decide the items of its curation queue by their status.
webhouse:
  queue_file: {WEBHOUSE_QUEUE}
"""


def init_workspace(root: Path, *, sample: bool = False, webhouse: bool = False) -> list[str]:
    """Set up root and return what was done, one line each."""
    done: list[str] = []
    if webhouse:
        _check_webhouse_site(root)
    _make_folder(root)
    if not GitRepo.is_repo(root):
        GitRepo.init(root)
        done.append(f"created git repository in {root}")
    (root / "_data" / "agents").mkdir(parents=True, exist_ok=True)
    (root / "_data" / "inbox" / "ratings").mkdir(parents=True, exist_ok=True)
    created = [
        *_write_if_missing(root / "feedbackd.yaml", CONFIG_TEMPLATE),
        *_ensure_lines(root / ".gitignore", IGNORED),
        *_ensure_lines(root / ".gitattributes", ATTRIBUTES),
    ]
    if sample:
        created += _copy_sample(root)
    if webhouse:
        created += _turn_on_webhouse(root / "feedbackd.yaml")
    register_merge_driver(root)
    created = list(dict.fromkeys(created))  # feedbackd.yaml may be written, then extended
    done += [f"wrote {path.relative_to(root)}" for path in created]
    done.append("registered the feedbackd merge driver in .git/config")
    if created:
        _commit_setup(root, created)
    done.append(f"workspace ready: {root}")
    return done


def _check_webhouse_site(root: Path) -> None:
    if not (root / WEBHOUSE_QUEUE).is_file():
        raise WorkspaceError(
            f"{root} holds no {WEBHOUSE_QUEUE}: not a webhouse CMS site, or its agents have"
            " not written a draft yet",
            hint="run `feedbackd init --webhouse` in the site's folder (the one holding"
            f" {WEBHOUSE_QUEUE}); webhouse writes that file when an agent first generates",
        )


def _turn_on_webhouse(config: Path) -> list[Path]:
    """Set webhouse.queue_file in feedbackd.yaml, keeping every other line as it is."""
    text = read_file_text(config)
    tree = yamlio.load(text)
    section = tree.get("webhouse") if isinstance(tree, dict) else None
    if isinstance(section, dict) and section.get("queue_file") == WEBHOUSE_QUEUE:
        return []
    if isinstance(tree, dict) and "webhouse" in tree:
        raise ConfigError(
            f"{config}: a webhouse section is there already; init does not rewrite it",
            hint=f"set `queue_file: {WEBHOUSE_QUEUE}` under `webhouse:` yourself",
        )
    lead = "" if not text or text.endswith("\n") else "\n"
    atomic_write_text(config, f"{text}{lead}\n{WEBHOUSE_SECTION}")
    return [config]


def merge_driver_command(cap: int | None = None) -> str:
    """The one command git runs to merge a feedback file: `feedbackd merge-driver`, by this
    Python (a service's PATH may not hold `feedbackd`). Sync passes the cap of the settings it
    runs with, which a temporary worktree's files may not hold."""
    cap_option = f" --cap {cap}" if cap is not None else ""
    return f"{shlex.quote(sys.executable)} -m feedbackd merge-driver{cap_option} %O %A %B %P"


def register_merge_driver(root: Path) -> None:
    """The driver, and the merge settings that let a user's `git revert` of a decision undo it."""
    with GitRepo(root) as repo:
        repo.set_config("merge.feedbackd.name", DRIVER_NAME)
        repo.set_config("merge.feedbackd.driver", merge_driver_command())
        for key, value in MERGE_SETTINGS:
            repo.set_config(key, value)


def _make_folder(root: Path) -> None:
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:  # a file of that name, no permission, a read-only disk
        raise WorkspaceError(
            f"cannot make {root} a workspace folder: {error.strerror}",
            hint="pass a folder that exists or can be created",
        ) from None


def _write_if_missing(path: Path, text: str) -> list[Path]:
    if path.exists():
        return []
    atomic_write_text(path, text)
    return [path]


def _ensure_lines(path: Path, lines: Sequence[str]) -> list[Path]:
    existing = read_file_text(path).splitlines() if path.exists() else []
    missing = [line for line in lines if line not in existing]
    if not missing:
        return []
    atomic_write_text(path, "\n".join([*existing, *missing]))
    return [path]


def _copy_sample(root: Path) -> list[Path]:
    source = sample_data_dir()
    created: list[Path] = []
    for agent in sorted((source / "agents").iterdir()):
        target = root / "_data" / "agents" / agent.name
        if agent.is_dir() and not target.exists():
            shutil.copytree(agent, target)
            created.extend(path for path in sorted(target.rglob("*")) if path.is_file())
    return created


def sample_data_dir() -> Path:
    """The sample `_data/` shipped beside the package sources."""
    candidate = Path(__file__).resolve().parents[4] / "_data"
    if not (candidate / "agents").is_dir():
        raise WorkspaceError(
            "the sample data is not part of this installation",
            hint="install feedbackd from its source checkout (pip install -e .)",
        )
    return candidate


def _commit_setup(root: Path, created: list[Path]) -> None:
    with GitRepo(root) as repo:
        author = repo.user_identity() or FEEDBACKD_PERSON
        paths = [path.relative_to(root).as_posix() for path in created]
        repo.commit_paths(paths, "Set up feedbackd workspace", Person(author.name, author.email))
