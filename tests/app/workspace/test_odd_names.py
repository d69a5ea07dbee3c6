"""File names a curator's tools may leave in the workspace (spaces, quotes, tabs, line breaks,
non-ASCII, bytes that are not UTF-8): every command answers, reporting invalid ids as problems,
and none stops with an internal error (exit 3)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from feedbackd.core.workspacepaths import ITEM_FOLDERS
from tests.cli_kit import run_cli_bytes
from tests.daemon_kit import DaemonProcess, NotifyListener, wait_for
from tests.workspace_kit import Site, draft, settling_in

ODD_NAMES = [
    b"bad id",
    b'say "hi"',
    b"tab\there",
    b"line\nbreak",
    b"caf\xc3\xa9 \xe2\x80\x94 n\xc3\xa4me",
    b"latin1 \xe9t\xe9",  # not UTF-8
]


def put(folder: Path, name: bytes, text: str) -> None:
    """Write a file whose name is given as bytes, as a tool on a Linux disk may name it."""
    os.makedirs(os.fsencode(folder), exist_ok=True)
    with open(os.path.join(os.fsencode(folder), name), "w", encoding="utf-8") as handle:
        handle.write(text)


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = settling_in(tmp_path / "ws", 50)
    site.write("writer", "qi-1.json", draft({"title": "Fine"}))
    site.reconcile()
    body = json.dumps(draft({"title": "Odd"}))
    for name in ODD_NAMES:
        for folder in ITEM_FOLDERS:  # a name of its own in each folder (not decided twice)
            put(site.agent("writer") / folder, folder.encode() + b"-" + name + b".json", body)
        put(site.data / "agents" / os.fsdecode(name) / "queue", b"qi-9.json", body)
    site.git("add", "-A")
    site.git("commit", "-q", "-m", "odd names, as a user's tool committed them")
    for name in ODD_NAMES:  # and more, not committed yet
        for folder in ITEM_FOLDERS:
            put(site.agent("writer") / folder, b"new " + folder.encode() + name + b".json", body)
            put(site.agent("writer") / folder, name + b".json", body)
    return site


def cli(site: Site, *args: str) -> subprocess.CompletedProcess[bytes]:
    """The command line; its output as bytes (a file name it prints may not be UTF-8)."""
    return run_cli_bytes(["-w", str(site.root), *args])


def answered(done: subprocess.CompletedProcess[bytes]) -> str:
    """What a command printed, once it is known to have answered (exit 0 or 1, not 3)."""
    err = done.stderr.decode("utf-8", "backslashreplace")
    assert done.returncode in (0, 1), f"exit {done.returncode}: {err}"
    assert "internal" not in err, err
    if "--json" in done.args:
        json.loads(done.stdout.decode("utf-8"))  # JSON output stays valid UTF-8 JSON
    return done.stdout.decode("utf-8", "backslashreplace") + err


@pytest.mark.parametrize(
    "command",
    [("doctor",), ("doctor", "--json"), ("run", "--once"), ("status", "--json"), ("log",)],
)
def test_every_command_answers_with_odd_file_names(site: Site, command: tuple[str, ...]) -> None:
    answered(cli(site, *command))


def test_status_shows_each_problem_on_one_line(site: Site) -> None:
    answered(cli(site, "run", "--once"))
    done = cli(site, "status", "--json")
    answered(done)
    problems = json.loads(done.stdout)["problems"]
    assert any("bad id" in line for line in problems)
    assert not any("\n" in line or "\t" in line for line in problems), problems


@pytest.mark.slow
def test_the_daemon_reports_odd_names_and_goes_on(
    site: Site, start: type[DaemonProcess], listener: NotifyListener
) -> None:
    daemon = start(site, listener)
    daemon.wait_ready()
    site.move("writer", "qi-1.json", "approved")
    wait_for(lambda: "approve(writer): qi-1" in site.git("log", "--format=%s"), what="a commit")
    problems = json.loads(cli(site, "status", "--json").stdout)["problems"]
    assert any("bad id" in line for line in problems)
    assert "internal error" not in daemon.log()
    assert daemon.proc.poll() is None


def test_doctor_names_each_invalid_id_as_a_problem(site: Site) -> None:
    done = cli(site, "doctor", "--json")
    report = answered(done)
    assert done.returncode == 1
    assert "bad id" in report
    assert "is not a valid item id" in report and "is not a valid agent id" in report
