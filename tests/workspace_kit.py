"""Test helpers: a real workspace in tmp_path, items written like a curator's editor would."""

from __future__ import annotations

import atexit
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from feedbackd.app.reconcile import Report, reconcile_all
from feedbackd.app.workspace.init import init_workspace
from feedbackd.app.workspace.runtime import Runtime
from tests.cli_kit import run_cli, run_process

SAVED_AGO_S = 30 * 24 * 3600  # long past daemon.settle_ms, whatever a test sets
_SAVES = itertools.count()


class Site:
    """A workspace made by `feedbackd init`, driven through the real pipeline and real git."""

    def __init__(self, root: Path, *, made: bool = False) -> None:
        """`made`: root already is a workspace (a copy of one, say); else init makes it."""
        self.root = root
        if not made:
            new_workspace(root)

    def copy_to(self, root: Path) -> Site:
        """A copy of this workspace (its git history included) at `root`."""
        shutil.copytree(self.root, root, symlinks=True)
        return Site(root, made=True)

    @property
    def data(self) -> Path:
        return self.root / "_data"

    def agent(self, agent: str) -> Path:
        return self.data / "agents" / agent

    def runtime(self, curator: str | None = None) -> Runtime:
        return Runtime.open(str(self.root), None).with_curator(curator)

    def configure(self, text: str) -> None:
        (self.root / "feedbackd.yaml").write_text(text)

    def reconcile(self) -> Report:
        return reconcile_all(self.runtime())

    def write(
        self, agent: str, name: str, doc: Any, folder: str = "queue", *, fresh: bool = False
    ) -> Path:
        """Write an item as an editor saved it a while ago (a decision waits for a file to be
        unchanged for daemon.settle_ms); `fresh`: saved just now, maybe still being written."""
        path = self.agent(agent) / folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(doc, bytes):
            path.write_bytes(doc)
        elif isinstance(doc, str):
            path.write_text(doc, encoding="utf-8")
        else:
            path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        if not fresh:
            # Each write gets a second of its own: git, which compares times in whole seconds,
            # still sees a file rewritten with the same size as changed.
            saved = time.time() - SAVED_AGO_S + next(_SAVES)
            os.utime(path, (saved, saved))
        return path

    def move(self, agent: str, name: str, to: str, source: str = "queue") -> Path:
        target = self.agent(agent) / to / name
        target.parent.mkdir(parents=True, exist_ok=True)
        (self.agent(agent) / source / name).rename(target)
        return target

    def feedback(self, agent: str) -> list[dict[str, Any]]:
        path = self.agent(agent) / "feedback.json"
        return json.loads(path.read_text()) if path.exists() else []

    def prompt(self, agent: str) -> str:
        path = self.agent(agent) / "prompt" / "feedback.md"
        return path.read_text() if path.exists() else ""

    def git(self, *args: str) -> str:
        done = subprocess.run(["git", *args], cwd=self.root, capture_output=True, text=True)
        assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
        return done.stdout

    def commit_count(self) -> int:
        return int(self.git("rev-list", "--count", "HEAD").strip())

    def trailers(self, commit: str = "HEAD") -> dict[str, list[str]]:
        message = self.git("log", "-1", "--format=%B", commit)
        parsed = subprocess.run(
            ["git", "interpret-trailers", "--parse"], input=message, capture_output=True, text=True
        ).stdout
        found: dict[str, list[str]] = {}
        for line in parsed.splitlines():
            key, _, value = line.partition(":")
            found.setdefault(key.strip(), []).append(value.strip())
        return found

    def cli(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """`feedbackd -w ROOT ARGS` as a user runs it, run in the test's process (cli_kit)."""
        return run_cli(["-w", str(self.root), *args], stdin=stdin)

    def cli_process(
        self, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`feedbackd -w ROOT ARGS` in a process of its own, for a test of the process itself
        (a signal, a terminal, the time it takes, what another process sees of it)."""
        return run_process(["-w", str(self.root), *args], stdin=stdin, env=env)


# A workspace fresh from `feedbackd init`, made once per test process and per git identity, then
# copied: init starts a dozen git processes, and hundreds of tests start from the same workspace.
# Nothing in it names its folder, and git refreshes the copied index's file times on first use.
_NEW_WORKSPACES: dict[tuple[tuple[str, str], ...], Path] = {}


def new_workspace(root: Path) -> None:
    """`feedbackd init root`, from a copy of the workspace init made for this environment (or
    init itself, in a folder that already holds something)."""
    if root.exists() and any(root.iterdir()):
        init_workspace(root)
        return
    made_with = tuple(
        sorted((k, v) for k, v in os.environ.items() if k.startswith(("GIT_", "FEEDBACKD_")))
    )
    template = _NEW_WORKSPACES.get(made_with)
    if template is None:
        holder = Path(tempfile.mkdtemp(prefix="feedbackd-new-workspace-"))
        atexit.register(shutil.rmtree, holder, ignore_errors=True)
        template = _NEW_WORKSPACES[made_with] = holder / "workspace"
        init_workspace(template)
    shutil.copytree(template, root, symlinks=True, dirs_exist_ok=True)  # dirs: an empty root


def settling_in(root: Path, settle_ms: int) -> Site:
    """A workspace whose committed feedbackd.yaml decides a file settle_ms after its last change
    (a daemon test need not wait the default two seconds)."""
    site = Site(root)
    site.configure(f"daemon:\n  settle_ms: {settle_ms}\n")
    site.git("add", "feedbackd.yaml")
    site.git("commit", "-q", "-m", f"settle in {settle_ms} ms")
    return site


def draft(content: dict[str, Any], original: dict[str, Any] | None = None, **extra: Any) -> dict:
    doc: dict[str, Any] = dict(extra)
    doc["contentData"] = content
    if original is not None:
        doc["originalContentData"] = original
    return doc
