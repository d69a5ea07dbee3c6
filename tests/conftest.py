"""Shared test set-up: every test runs with a known git identity and no stray feedbackd settings."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon_kit import DaemonProcess, NotifyListener, SlowMark
from tests.inspector_kit import start_installing
from tests.web_kit import Client, Server, serving
from tests.workspace_kit import Site

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Ada Curator",
    "GIT_AUTHOR_EMAIL": "ada@example.org",
    "GIT_COMMITTER_NAME": "Ada Curator",
    "GIT_COMMITTER_EMAIL": "ada@example.org",
}


# `make test` measures coverage in each Python process started with this variable in its
# environment (pyproject.toml: [tool.coverage.run] patch = ["subprocess"]).
COVERAGE_CHILDREN = "COVERAGE_PROCESS_CONFIG"
SYSTEM_RING = Path(__file__).parent / "system"


@pytest.fixture(autouse=True)
def clean_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[None]:
    home = tmp_path / "home"
    home.mkdir()
    set_known_environment(monkeypatch, home)
    if not follows_children(request.path):
        monkeypatch.delenv(COVERAGE_CHILDREN, raising=False)
    yield


def follows_children(test_file: Path) -> bool:
    """Whether coverage measures the processes a test in `test_file` starts. In the system ring
    (tests/system/), where the daemon, `serve` and `mcp` as processes are the point, it does;
    elsewhere it measures the test's own process. Each process followed pays coverage's
    start-up and has every line it runs traced: following every one, git's merge driver and
    the tests' helper scripts included, cost a fifth of the suite's time for 0.5 % of lines."""
    return SYSTEM_RING in test_file.parents


@contextlib.contextmanager
def known_environment(home: Path) -> Iterator[None]:
    """The environment every test runs in, for fixtures made once for many tests."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        set_known_environment(monkeypatch, home)
        yield


def set_known_environment(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """A known git identity, no stray feedbackd settings, and `home` as HOME."""
    for key in list(os.environ):
        if key.startswith(("FEEDBACKD_", "GIT_", "NOTIFY_SOCKET", "WATCHDOG_")):
            monkeypatch.delenv(key)
    for key, value in GIT_IDENTITY.items():
        monkeypatch.setenv(key, value)
    # Keep the user's ~/.gitconfig (signing, hooks, templates) out of the tests.
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("NO_COLOR", "1")


def pytest_sessionstart(session: pytest.Session) -> None:
    """The MCP Inspector's install (half a minute on a fresh machine) starts with the run that
    includes its test, in the run's own process (not in each worker), while other tests run."""
    config = session.config
    if not hasattr(config, "workerinput") and "not slow" not in (config.option.markexpr or ""):
        start_installing(list(config.args), config.invocation_params.dir)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules of the slow ring first, each whole. The workers take the tests a module at
    a time (`--dist loadscope`, the Makefile), so that a fixture a module's tests share (a soak,
    a browser, a demo site) is made once, not once in each worker; handing out the long
    modules first keeps the run from ending on one of them while the other workers stand idle."""
    slow = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Tell the kits whether this test is marked slow (daemon_kit.SlowMark), before any of its
    fixtures, a module's included, can start a process."""
    SlowMark.carried = item.get_closest_marker("slow") is not None


def git(root: Path, *args: str) -> str:
    """Run git in root and return its stdout; fail the test on a non-zero exit."""
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """An empty git repository with one initial commit, on branch main."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("workspace\n")
    git(root, "add", "README.md")
    git(root, "commit", "-q", "-m", "initial")
    return root


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[NotifyListener]:
    """A stand-in for systemd's notify socket."""
    notify = NotifyListener(tmp_path)
    yield notify
    notify.close()


@pytest.fixture
def start(listener: NotifyListener) -> Iterator[type[DaemonProcess]]:
    """Start daemons with `start(site, listener, *args)`; whatever still runs is killed after."""
    started: list[DaemonProcess] = []

    class Tracked(DaemonProcess):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            started.append(self)

    yield Tracked
    for daemon in started:
        daemon.close()


@pytest.fixture
def server(site: Site) -> Iterator[Server]:
    """`feedbackd serve` on the workspace of the test module's own `site` fixture."""
    running = Server(site.root)
    yield running
    running.close()


@pytest.fixture
def served(site: Site) -> Iterator[Client]:
    """What `feedbackd serve` answers with on the module's `site`, served from a thread of the
    test process (web_kit.serving): for the routes and rules, when the command is not the point."""
    with serving(site.root) as client:
        yield client
