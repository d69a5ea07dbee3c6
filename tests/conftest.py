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
MEASURED_PROCESSES = "measured_processes"


class CoverageRequest:
    """coverage's request to measure child processes, taken out of the environment before the
    first test (and a module's fixtures) of a process that runs tests: only a test that
    follows its children (follows_children) puts it back."""

    held: str | None = None


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    # Here, not at start-up: under xdist, the run's own process starts the workers with the
    # request in their environment (coverage measures them through it) before its test loop.
    CoverageRequest.held = os.environ.pop(COVERAGE_CHILDREN, None)


@pytest.fixture(autouse=True)
def clean_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[None]:
    home = tmp_path / "home"
    home.mkdir()
    set_known_environment(monkeypatch, home)
    if CoverageRequest.held is not None and follows_children(request.node):
        monkeypatch.setenv(COVERAGE_CHILDREN, CoverageRequest.held)
    yield


def follows_children(test: pytest.Item) -> bool:
    """Whether coverage measures the feedbackd processes `test` starts: where its module is
    marked `measured_processes`, because what it runs there runs in no test's own process (the
    launch, the daemon's loop and signals, the sync thread, webhook delivery, `mcp` on stdio).
    Elsewhere coverage measures the test's own process alone. A process followed has every line
    it runs traced, uvicorn's and the watcher's included, at two to three times the cost:
    following every one cost a sixth of the suite's time for 0.9 % of lines."""
    return test.get_closest_marker(MEASURED_PROCESSES) is not None


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
