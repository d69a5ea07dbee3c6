"""The chaos ring of git's own maintenance: a user's `git gc`, `git repack -a -d` and
`git maintenance run`, each in a loop, while the daemon records bursts of approvals. Every
round ends with `git fsck --strict` finding the repository whole and every decision recorded
exactly once: no repack ever meets a decision's pack before HEAD names its commit.

`FEEDBACKD_MAINTENANCE_ROUNDS` sets the rounds (12), `FEEDBACKD_MAINTENANCE_BURST` the
approvals in each (25).
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections import Counter
from pathlib import Path

import pytest

from tests.daemon_kit import DaemonProcess, NotifyListener, decided, wait_for
from tests.workspace_kit import Site, draft

pytestmark = pytest.mark.slow

ROUNDS = int(os.environ.get("FEEDBACKD_MAINTENANCE_ROUNDS", "12"))
BURST = int(os.environ.get("FEEDBACKD_MAINTENANCE_BURST", "25"))
MAINTENANCE = (
    ("gc", "--quiet"),
    ("repack", "-a", "-d", "-q"),
    ("maintenance", "run", "--quiet"),
)


class UsersMaintenance:
    """git's maintenance commands run one after the other, over and over, until paused."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.runs: Counter[str] = Counter()
        self.failures: list[str] = []
        self._go = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._idle.set()
            if not self._go.wait(0.05):
                continue
            self._idle.clear()
            for args in MAINTENANCE:
                done = subprocess.run(["git", *args], cwd=self.root, capture_output=True)
                self.runs[args[0]] += 1
                # another of git's own commands holding a lock is git's ordinary refusal
                if done.returncode != 0 and b"lock" not in done.stderr:
                    self.failures.append(f"git {' '.join(args)}: {done.stderr.decode()}")

    def resume(self) -> None:
        self._go.set()

    def pause(self) -> None:
        """Wait until the command running now has ended."""
        self._go.clear()
        self._idle.clear()
        assert self._idle.wait(120), "git's maintenance did not end"

    def stop(self) -> None:
        self._go.clear()
        self._stop.set()
        self._thread.join(120)


def test_gc_repack_and_maintenance_in_loops_never_lose_a_decision(
    tmp_path: Path, listener: NotifyListener, start: type[DaemonProcess]
) -> None:
    site = Site(tmp_path / "ws")
    names = [f"qi-{number:04d}" for number in range(ROUNDS * BURST)]
    for name in names:
        site.write("w", f"{name}.json", draft({"title": f"Draft {name}", "excerpt": "Same."}))
    site.reconcile()
    daemon = start(site, listener)
    daemon.wait_ready()
    users = UsersMaintenance(site.root)
    try:
        for round_ in range(ROUNDS):
            users.resume()
            burst = names[round_ * BURST : (round_ + 1) * BURST]
            for name in burst:
                site.move("w", f"{name}.json", "approved")
            done = (round_ + 1) * BURST
            wait_for(lambda done=done: len(decided(site, "w")) >= done, what=f"round {round_ + 1}")
            users.pause()
            fsck = subprocess.run(
                ["git", "fsck", "--strict", "--no-dangling"],
                cwd=site.root,
                capture_output=True,
                text=True,
            )
            assert (fsck.returncode, fsck.stdout, fsck.stderr) == (0, "", ""), round_ + 1
            assert users.failures == [], users.failures
    finally:
        users.stop()
    assert sorted(decided(site, "w")) == names  # each exactly once
    subjects = Counter(site.git("log", "--format=%s").splitlines())
    assert all(subjects[f"approve(w): {name}, no corrections"] == 1 for name in names), subjects
    assert min(users.runs.values()) >= ROUNDS // 2, users.runs
    assert site.git("status", "--porcelain", "--", "_data") == ""
