"""`make run`: a fresh demo workspace in .demo/ from the sample `_data/`, then the daemon on it."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from feedbackd.app.workspace.init import init_workspace, sample_data_dir
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.cli.demo import weeks
from feedbackd.cli.main import main as cli_main
from feedbackd.core.people import FEEDBACKD_PERSON
from feedbackd.edges.files import atomic_write_text, read_file_text
from feedbackd.edges.git.repo import GitRepo
from feedbackd.edges.instance import daemon_running, holder_pid

TRY = """
feedbackd demo workspace: {root}
In a second terminal (from the project folder), try:

  source .venv/bin/activate; cd {root}
  $EDITOR _data/agents/content-writer/queue/qi-101.json   # change the title
  mv _data/agents/content-writer/queue/qi-101.json _data/agents/content-writer/approved/
  feedbackd recent content-writer        # the corrections just recorded
  feedbackd prompt content-writer        # what the agent reads on its next run
  feedbackd reject content-writer qi-102 --notes "Too generic, name a real project"
  feedbackd log                          # the learning history from git
  feedbackd stats                        # eight weeks of decisions: is each agent learning?
  feedbackd status                       # what this daemon is doing
  feedbackd serve                        # the web panel: http://127.0.0.1:8787/
  git log -3 --format='%an: %s%n%b'

Stop the daemon with Ctrl-C. `make run` starts again from a fresh copy.
"""

# `feedbackd eval` and `bisect` on the demo, without a model (docs/learning.md).
EVAL_CONFIG = """
# The demo's agent command: each draft with its snippet's examples applied, no model needed.
eval:
  command: builtin:apply-lessons
"""


def build(root: Path) -> None:
    if root.exists():
        refuse_while_in_use(root)
        shutil.rmtree(root)
    root.mkdir(parents=True)
    # The queued drafts wait outside until the history is played: they are this week's.
    shutil.copytree(sample_data_dir(), root / "_data", ignore=_queued)
    start = weeks.history_start(datetime.now(UTC))
    with weeks.git_dates():
        weeks.date_git(start)
        for line in init_workspace(root):
            print(line)
        config = root / "feedbackd.yaml"
        atomic_write_text(config, read_file_text(config) + EVAL_CONFIG)
        sample = sorted(
            path.relative_to(root).as_posix()
            for path in (root / "_data").rglob("*")
            if path.is_file()
        )
        with GitRepo(root) as repo:
            author = repo.user_identity() or FEEDBACKD_PERSON
            repo.commit_paths(
                [*sample, "feedbackd.yaml"], "Add the sample agents and ratings", author
            )
        decided = weeks.play(Runtime.open(str(root), None), start)
    print(f"eight weeks of history: {decided} decisions of two curators, from {start:%Y-%m-%d}")
    # This week's drafts stay for the daemon to find, as an agent's new drafts are: its first
    # pass commits them, and the tour decides them.
    shutil.copytree(sample_data_dir(), root / "_data", dirs_exist_ok=True, ignore=_not_queued)


def _queued(folder: str, names: list[str]) -> list[str]:
    return names if Path(folder).name == "queue" else []


def _not_queued(folder: str, names: list[str]) -> list[str]:
    """Everything but the queued drafts (and the folders that lead to them)."""
    return [
        name for name in names if Path(folder).name != "queue" and (Path(folder) / name).is_file()
    ]


def refuse_while_in_use(root: Path) -> None:
    """A daemon still running in the demo holds the curator's decisions: never delete them."""
    state_dir = root / ".feedbackd"
    if daemon_running(state_dir):
        pid = holder_pid(state_dir)
        running = f"pid {pid}" if pid is not None else "its pid unknown"
        raise SystemExit(
            f"error: locked: a feedbackd daemon ({running}) is running in {root}; stop it first"
            " (Ctrl-C in its terminal), then run `make run` again"
        )


def main(argv: list[str]) -> int:
    root = Path(argv[0] if argv else ".demo").absolute()
    build(root)
    print(TRY.format(root=root), flush=True)
    return cli_main(["-w", str(root), "run"], "feedbackd")
