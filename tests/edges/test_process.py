"""The one runner for outside processes: real processes, their input, output and deadlines."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from feedbackd.edges.process import run_command, run_process
from tests.daemon_kit import wait_for

# A child that starts a grandchild (which inherits its output pipes), notes the grandchild's pid
# and then waits for it: only stopping the whole process group ends both.
SPAWNS_A_GRANDCHILD = """
import subprocess, sys
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
open(sys.argv[1], "w").write(str(grandchild.pid))
grandchild.wait()
"""


def gone(pid: int) -> bool:
    """True once `pid` has ended (a zombie not yet collected by its new parent counts too)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def test_a_timeout_stops_the_child_and_the_grandchild_it_started(tmp_path: Path) -> None:
    noted = tmp_path / "grandchild.pid"
    argv = [sys.executable, "-c", SPAWNS_A_GRANDCHILD, str(noted)]
    started = time.monotonic()
    done = run_process(argv, cwd=tmp_path, timeout=1.0)
    # Returning at all means the grandchild no longer holds the output pipes open.
    assert time.monotonic() - started < 10
    assert not done.ok
    assert done.reason == "timed out after 1s"
    assert done.status is None
    assert done.timed_out
    grandchild = int(noted.read_text())
    wait_for(lambda: gone(grandchild), what="the grandchild to be stopped")


def test_stdin_bytes_come_back_byte_for_byte(tmp_path: Path) -> None:
    data = bytes(range(256)) * 4096 + b"\0\xff no newline at the end"  # 1 MB, not UTF-8
    done = run_process(["cat"], cwd=tmp_path, stdin=data)
    assert done.ok
    assert done.status == 0
    assert done.stdout == data
    assert done.stderr == b""


def test_without_input_the_process_reads_an_empty_stdin(tmp_path: Path) -> None:
    done = run_process(["cat"], cwd=tmp_path, timeout=10)
    assert done.ok
    assert done.stdout == b""


def test_a_missing_executable_gives_a_clear_reason(tmp_path: Path) -> None:
    done = run_process([str(tmp_path / "no-such-program")], cwd=tmp_path)
    assert not done.ok
    assert done.status is None
    assert not done.timed_out
    assert "cannot start" in done.reason
    assert "no-such-program" in done.reason
    assert "No such file or directory" in done.reason


def test_a_missing_folder_is_named_as_what_is_missing(tmp_path: Path) -> None:
    done = run_process(["true"], cwd=tmp_path / "gone")
    assert done.reason == f"cannot start 'true': No such file or directory ({tmp_path / 'gone'})"


def test_a_failing_command_keeps_its_exit_status_and_output(tmp_path: Path) -> None:
    script = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    done = run_process([sys.executable, "-c", script], cwd=tmp_path)
    assert (done.reason, done.status) == ("exit status 3", 3)
    assert (done.stdout, done.stderr) == (b"out\n", b"err\n")


def test_the_environment_and_folder_are_the_ones_given(tmp_path: Path) -> None:
    script = "import os; print(os.getcwd()); print(os.environ['FEEDBACKD_PROBE'])"
    done = run_process(
        [sys.executable, "-c", script], cwd=tmp_path, env={"FEEDBACKD_PROBE": "a b;$(no shell)"}
    )
    assert done.stdout.decode().splitlines() == [os.path.realpath(tmp_path), "a b;$(no shell)"]


def test_only_a_process_with_a_deadline_gets_its_own_process_group(tmp_path: Path) -> None:
    script = "import os; print(os.getpgid(0))"
    ours = run_process([sys.executable, "-c", script], cwd=tmp_path)
    own = run_process([sys.executable, "-c", script], cwd=tmp_path, timeout=10)
    assert int(ours.stdout) == os.getpgid(0)
    assert int(own.stdout) != os.getpgid(0)


def test_run_command_is_the_text_face_of_the_same_runner(tmp_path: Path) -> None:
    script = "import sys; sys.stdout.write(sys.stdin.read().upper())"
    done = run_command(
        [sys.executable, "-c", script], stdin="grüße", timeout=10, cwd=tmp_path, env={}
    )
    assert done.ok
    assert done.stdout == "GRÜSSE"
    slow = run_command(["sleep", "30"], stdin="", timeout=0.2, cwd=tmp_path, env={})
    assert slow.reason == "timed out after 0.2s"
