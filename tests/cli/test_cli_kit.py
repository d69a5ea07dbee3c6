"""The command line run in the test process shows a test what the real process shows it."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_kit import as_text, run_cli, run_main, run_process
from tests.workspace_kit import Site, draft


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "site")
    site.write("w", "qi-1.json", draft({"title": "Old"}))
    site.reconcile()
    return site


def same_as_the_process(site: Site, *args: str, env: dict[str, str] | None = None) -> None:
    argv = ["-w", str(site.root), *args]
    here, there = run_cli(argv, env=env), run_process(argv, env=env)
    assert (here.returncode, here.stdout, here.stderr) == (
        there.returncode,
        there.stdout,
        there.stderr,
    ), f"feedbackd {' '.join(args)}"


@pytest.mark.parametrize(
    "args",
    [
        ("approve",),  # bad usage: exit 2, `error: usage: ...` with a hint naming the program
        ("--json", "approve"),  # ... as JSON
        ("no-such-command",),
        ("log", "--since", "7 parsecs"),
        ("recent", "bad id", "--json"),  # refused input, as JSON
        ("approve", "w", "qi-404"),  # not found: exit 1
        ("feedback", "submit", "--help"),  # help, wrapped as click wraps it off a terminal
        (),  # bare: the help, exit 2
        ("--version",),
        ("status",),  # a rich console's lines
        ("recent", "w"),  # a rich table, 80 columns wide off a terminal
        ("doctor", "--json"),
        ("run", "--once"),  # log lines on stderr
    ],
    ids=lambda args: " ".join(args) or "feedbackd",
)
def test_output_and_exit_code_are_the_process_s(site: Site, args: tuple[str, ...]) -> None:
    same_as_the_process(site, *args)


def test_the_environment_is_the_one_given_whole(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.write("w", "qi-1.json", draft({"title": "New"}))
    assert site.cli("approve", "w", "qi-1").returncode == 0
    narrow = {**os.environ, "COLUMNS": "50"}
    same_as_the_process(site, "log", env=narrow)
    assert max(map(len, site.cli("log").stdout.splitlines())) > 50  # and it was put back
    # FEEDBACKD_WORKSPACE, left out of the environment given, is not seen
    monkeypatch.setenv("FEEDBACKD_WORKSPACE", str(site.root))
    assert run_cli(["status"], cwd=site.root.parent).returncode == 0
    without = {k: v for k, v in os.environ.items() if k != "FEEDBACKD_WORKSPACE"}
    lost = run_cli(["status"], env=without, cwd=site.root.parent)
    assert lost.returncode == 1 and "no feedbackd workspace here" in lost.stderr
    assert os.environ["FEEDBACKD_WORKSPACE"] == str(site.root)


def test_a_warning_logged_goes_to_that_run_s_stderr_and_the_logger_is_given_back(
    site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    entry = json.dumps({"type": "edit", "field": "alt", "original": "a", "corrected": "b"})
    first = site.cli("-v", "record", "w", "--json", entry)
    assert first.returncode == 0 and "already recorded" not in first.stderr
    again = site.cli("record", "w", "--json", entry)
    assert again.returncode == 0
    assert again.stderr == "warning: the same entry is already recorded; nothing changed\n"
    # The test's own logging reaches pytest again, at the level it had.
    with caplog.at_level(logging.INFO, logger="feedbackd"):
        logging.getLogger("feedbackd.test").info("after the command")
    assert [record.getMessage() for record in caplog.records] == ["after the command"]


def test_each_run_starts_with_the_options_of_a_new_process(site: Site) -> None:
    hook = sys.excepthook
    as_json = site.cli("--json", "-q", "recent", "nobody")
    assert as_json.returncode == 1 and json.loads(as_json.stderr)["error"] == "not_found"
    plain = site.cli("recent", "nobody")
    assert plain.returncode == 1 and plain.stderr.startswith("error: not_found: no agent nobody")
    site.write("w", "qi-1.json", draft({"title": "New"}))
    assert site.cli("-q", "approve", "w", "qi-1").stdout == ""
    site.write("w", "qi-2.json", draft({"title": "A"}))
    assert site.cli("run", "--once").stdout.startswith("draft(w): 1 new draft (qi-2)")
    assert sys.excepthook is hook  # typer's, set by each run, is taken back


def echo(argv: list[str]) -> int:
    """A program that shows what it was given: stdin on stdout, the rest on stderr."""
    sys.stdout.write(sys.stdin.read())
    sys.stderr.write(f"{argv} {os.environ.get('PROBE')} {Path.cwd().name}\n")
    subprocess.run(["sh", "-c", "echo from a child >&2"], check=True)
    return 7


def test_stdin_arguments_environment_folder_and_a_child_s_output(tmp_path: Path) -> None:
    cwd = Path.cwd()
    done = as_text(run_main(echo, ["a b"], "grüße\n", {**os.environ, "PROBE": "yes"}, tmp_path))
    assert done.returncode == 7
    assert done.stdout == "grüße\n"
    assert done.stderr == f"['a b'] yes {tmp_path.name}\nfrom a child\n"
    assert Path.cwd() == cwd and "PROBE" not in os.environ


def crash(argv: list[str]) -> int:
    raise RuntimeError("a bug")


def test_a_bug_ends_the_run_as_it_ends_python() -> None:
    done = as_text(run_main(crash, []))
    assert done.returncode == 1
    assert done.stderr.startswith("Traceback (most recent call last):\n")
    assert done.stderr.endswith("RuntimeError: a bug\n")
