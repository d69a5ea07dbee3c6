"""The units in systemd/: what SPEC §11 promises of them, checked by systemd-analyze itself.

`systemd-analyze verify` exits 0 on some bad values and only prints a warning, so its output is
read, not its exit code. feedbackd is not installed at the unit's ExecStart path on a test
machine, so verify runs on a copy whose ExecStart binary is replaced by `true` (the only line
changed); the unit as shipped is checked too, allowing only the missing-binary complaint.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from feedbackd.core.config import HttpSettings
from feedbackd.web.server import GRACE_S
from tests.repo_kit import ROOT

UNITS = ROOT / "systemd"
SYSTEM_UNIT = UNITS / "feedbackd.service"
USER_UNIT = UNITS / "feedbackd-user.service"
WEB_UNIT = UNITS / "feedbackd-web.service"
EXEC_START = {
    SYSTEM_UNIT: "/usr/local/bin/feedbackd run",
    USER_UNIT: "%h/.local/bin/feedbackd run",
    WEB_UNIT: "/usr/local/bin/feedbackd serve",
}
MAX_EXPOSURE = 2.5
HARDENING = {
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "ProtectKernelTunables": "yes",
    "ProtectKernelModules": "yes",
    "ProtectKernelLogs": "yes",
    "ProtectControlGroups": "yes",
    "ProtectClock": "yes",
    "ProtectHostname": "yes",
    "RestrictNamespaces": "yes",
    "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
    "RestrictRealtime": "yes",
    "RestrictSUIDSGID": "yes",
    "LockPersonality": "yes",
    "MemoryDenyWriteExecute": "yes",
    "SystemCallArchitectures": "native",
    "CapabilityBoundingSet": "",
    "UMask": "0027",
}

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_systemd_analyze = pytest.mark.skipif(
    SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed"
)


def parse_unit(path: Path) -> dict[str, dict[str, list[str]]]:
    """Sections → key → every value given (a unit file may repeat a key)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        key, _, value = line.partition("=")
        current.setdefault(key, []).append(value)
    return sections


def service(path: Path) -> dict[str, str]:
    """The [Service] section, each key's last value."""
    return {key: values[-1] for key, values in parse_unit(path)["Service"].items()}


def runnable_copy(unit: Path, folder: Path, *, extra: str = "") -> Path:
    """The unit with its ExecStart binary replaced by `true` (and `extra` appended to [Service])."""
    true = shutil.which("true") or "/bin/true"
    text = unit.read_text()
    line = f"\nExecStart={EXEC_START[unit]}\n"
    assert text.count(line) == 1
    text = text.replace(line, f"\nExecStart={true} run\n")
    if extra:
        text = text.replace("\n[Install]", f"\n{extra}\n\n[Install]")
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / unit.name  # the file name is the unit name
    copy.write_text(text)
    return copy


def analyze(*args: str, tmp_path: Path, user: bool = False) -> subprocess.CompletedProcess[str]:
    assert SYSTEMD_ANALYZE is not None
    command = [SYSTEMD_ANALYZE, *(["--user"] if user else []), *args]
    # The user manager's lookup paths need a runtime folder, which a CI machine may lack. It
    # holds sockets (gpg-agent's), whose paths must stay within a socket address's 108 bytes
    # wherever the tests' temporary folders are: a short name of its own, not one in tmp_path.
    with tempfile.TemporaryDirectory(prefix="run-") as runtime:
        env = {**os.environ, "XDG_RUNTIME_DIR": runtime, "HOME": str(tmp_path / "home")}
        return subprocess.run(
            command, capture_output=True, text=True, timeout=60, env=env if user else None
        )


def verify_output(unit: Path, tmp_path: Path, *, user: bool = False) -> str:
    done = analyze("verify", "--man=no", str(unit), tmp_path=tmp_path, user=user)
    return (done.stdout + done.stderr).strip()


def exposure(unit: Path, tmp_path: Path) -> float:
    done = analyze("security", "--offline=yes", str(unit), tmp_path=tmp_path)
    match = re.search(r"Overall exposure level for \S+: (\d+(?:\.\d+)?)", done.stdout)
    assert match, f"no exposure level in:\n{done.stdout}{done.stderr}"
    return float(match.group(1))


@needs_systemd_analyze
def test_system_unit_verifies_without_a_word(tmp_path: Path) -> None:
    copy = runnable_copy(SYSTEM_UNIT, tmp_path / "units")
    assert verify_output(copy, tmp_path) == ""


@needs_systemd_analyze
def test_system_unit_as_shipped_only_misses_the_binary(tmp_path: Path) -> None:
    output = verify_output(SYSTEM_UNIT, tmp_path)
    missing = re.compile(r"Command /usr/local/bin/feedbackd is not executable")
    assert [line for line in output.splitlines() if not missing.search(line)] == []


@needs_systemd_analyze
def test_user_unit_verifies_without_a_word(tmp_path: Path) -> None:
    copy = runnable_copy(USER_UNIT, tmp_path / "units")
    assert verify_output(copy, tmp_path, user=True) == ""


@needs_systemd_analyze
@pytest.mark.parametrize("bad", ["UMask=bogus", "WatchdogSec=soon", "ProtectSytem=strict"])
def test_verify_output_catches_what_the_exit_code_does_not(tmp_path: Path, bad: str) -> None:
    """The check above has teeth: a bad value is only a warning, and it is seen."""
    copy = runnable_copy(SYSTEM_UNIT, tmp_path / "units", extra=bad)
    output = verify_output(copy, tmp_path)
    assert f"{copy}:" in output and "ignoring" in output


@needs_systemd_analyze
@pytest.mark.parametrize("unit", [SYSTEM_UNIT, USER_UNIT, WEB_UNIT], ids=lambda unit: unit.name)
def test_units_are_rated_safe_enough(unit: Path, tmp_path: Path) -> None:
    assert exposure(unit, tmp_path) <= MAX_EXPOSURE


@needs_systemd_analyze
def test_weakened_unit_is_rated_worse(tmp_path: Path) -> None:
    """The rating check has teeth: dropping the hardening fails it."""
    text = SYSTEM_UNIT.read_text()
    marker = "# Hardening:"
    weak = tmp_path / "units" / "feedbackd.service"
    weak.parent.mkdir()
    weak.write_text(text[: text.index(marker)] + "\n[Install]\nWantedBy=multi-user.target\n")
    assert exposure(weak, tmp_path) > MAX_EXPOSURE


@pytest.mark.parametrize("unit", [SYSTEM_UNIT, USER_UNIT], ids=lambda unit: unit.name)
def test_units_speak_notify_and_restart(unit: Path) -> None:
    settings = service(unit)
    assert settings["Type"] == "notify"
    assert settings["NotifyAccess"] == "main"
    assert settings["WatchdogSec"] == "30"
    assert settings["Restart"] == "on-failure"
    assert settings["RestartSec"]
    assert settings["ExecStart"] == EXEC_START[unit]
    assert settings["ExecReload"] == "/bin/kill -HUP $MAINPID"
    assert settings["KillSignal"] == "SIGTERM"
    assert settings["TimeoutStopSec"]
    for key, value in HARDENING.items():
        assert settings.get(key) == value, key
    assert parse_unit(unit)["Service"]["SystemCallFilter"][0] == "@system-service"


@pytest.mark.parametrize("unit", [SYSTEM_UNIT, USER_UNIT, WEB_UNIT], ids=lambda unit: unit.name)
def test_workspace_is_the_only_writable_path(unit: Path) -> None:
    settings = service(unit)
    workspace = settings["WorkingDirectory"]
    assert settings["ReadWritePaths"] == workspace
    assert settings["Environment"] == f"FEEDBACKD_WORKSPACE={workspace}"


def test_system_unit_runs_as_its_own_user() -> None:
    settings = service(SYSTEM_UNIT)
    assert (settings["User"], settings["Group"]) == ("feedbackd", "feedbackd")
    assert settings["WorkingDirectory"] == "/srv/feedbackd"
    assert settings["ProtectHome"] == "yes"


def test_user_unit_lives_in_the_home_folder() -> None:
    settings = service(USER_UNIT)
    assert "User" not in settings  # a user manager runs units as its own user
    assert settings["WorkingDirectory"] == "%h/feedbackd"
    assert parse_unit(USER_UNIT)["Install"]["WantedBy"] == ["default.target"]


@needs_systemd_analyze
def test_web_unit_verifies_without_a_word(tmp_path: Path) -> None:
    copy = runnable_copy(WEB_UNIT, tmp_path / "units")
    assert verify_output(copy, tmp_path) == ""


def test_web_unit_is_hardened_like_the_daemon_and_stops_on_sigterm() -> None:
    settings = service(WEB_UNIT)
    assert settings["ExecStart"] == EXEC_START[WEB_UNIT]
    assert (settings["User"], settings["KillSignal"], settings["Restart"]) == (
        "feedbackd",
        "SIGTERM",
        "on-failure",
    )
    for key, value in HARDENING.items():
        assert settings.get(key) == value, key
    assert "After" in parse_unit(WEB_UNIT)["Unit"]


def test_web_unit_leaves_room_for_every_connection() -> None:
    """http.max_connections (512 by default, 65536 at most) open connections need a file each,
    besides git's and the workspace's: the unit raises systemd's default limit of 1,024."""
    assert int(service(WEB_UNIT)["LimitNOFILE"]) >= 65536 + 1024


def test_web_unit_lets_a_write_in_flight_finish_before_sigkill() -> None:
    """At SIGTERM a write may wait http.write_wait_s for the workspace lock and then commit; the
    server waits for it, so systemd must too (reads are cut after GRACE_S)."""
    stop_s = int(service(WEB_UNIT)["TimeoutStopSec"])
    assert stop_s >= HttpSettings().write_wait_s + 60 and stop_s > GRACE_S
