"""Benchmark: `approve` and `feedback submit` while the daemon works through a burst.

Run: `python -m tests.bench.bench_commands_under_burst [--burst 1000] [--repeat 3]
[--target-s 15]`.

One workspace (made by `feedbackd init`, daemon.settle_ms 100) holds `--burst` drafts of one
agent plus `--repeat` more. `feedbackd run` is started on it, the burst's drafts are moved to
approved/ at once, and as soon as the daemon has recorded the first of them the real command
line runs, `--repeat` times each, `feedbackd approve` of one of the extra drafts and
`feedbackd feedback submit` of a new rating. Each is timed from start to exit, with the number
of the burst's approvals still waiting when it returned. The baseline, in the same run on the
same workspace: the same commands once the daemon is idle again. Prints medians, maxima and
ratios; exits 1 when a command took longer than `--target-s`, failed, or named an item of the
burst, or when an approval was recorded twice.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

AGENT = "w"
TIMEOUT_S = 600.0


@dataclass
class Timings:
    """Seconds per command, and the burst's approvals still waiting after each."""

    seconds: dict[str, list[float]] = field(default_factory=dict)
    waiting: list[int] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)

    def add(self, name: str, elapsed: float) -> None:
        self.seconds.setdefault(name, []).append(elapsed)


def feedbackd(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "feedbackd", "-w", str(root), *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def make_workspace(root: Path, burst: int, extra: int) -> tuple[list[str], list[str]]:
    """The workspace with the burst's drafts and the extra ones, committed as a daemon would."""
    done = feedbackd(root.parent, "init", str(root))
    if done.returncode != 0:
        raise SystemExit(f"feedbackd init failed: {done.stderr}")
    (root / "feedbackd.yaml").write_text("daemon:\n  settle_ms: 100\n")
    git(root, "add", "feedbackd.yaml")
    git(root, "commit", "-q", "-m", "settle in 100 ms")
    queue = root / "_data" / "agents" / AGENT / "queue"
    queue.mkdir(parents=True)
    names = [f"b{number:05d}" for number in range(burst)]
    extras = [f"own{number:03d}" for number in range(extra)]
    for name in names + extras:
        text = {"contentData": {"title": f"Draft {name}", "excerpt": "Same."}}
        (queue / f"{name}.json").write_text(json.dumps(text))
    done = feedbackd(root, "run", "--once")
    if done.returncode != 0:
        raise SystemExit(f"feedbackd run --once failed: {done.stderr}")
    return names, extras


def approvals(root: Path) -> list[str]:
    ledger = root / "_data" / "agents" / AGENT / "decisions.jsonl"
    if not ledger.exists():
        return []
    lines = [json.loads(line) for line in ledger.read_text().splitlines() if line.strip()]
    return [line["item"] for line in lines if line["state"] == "approved"]


def wait_until(predicate: object, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


def a_rating() -> str:
    return json.dumps(
        {
            "transaction_id": str(uuid.uuid4()),
            "provider_agent": "provider-1",
            "skill_id": "summarise",
            "rating": 4,
            "result_quality": "good",
            "would_reuse": True,
            "cost_value_ratio": "fair",
            "requester_agent": "buyer-1",
        }
    )


def run_commands(root: Path, own: str, burst: set[str], timings: Timings) -> None:
    """One approve and one submit, each timed; the burst's items they name are faults."""
    for name, args in (
        ("approve", ["approve", AGENT, own]),
        ("feedback submit", ["feedback", "submit", "--json", a_rating()]),
    ):
        started = time.perf_counter()
        done = feedbackd(root, *args)
        timings.add(name, time.perf_counter() - started)
        named = [word for word in (done.stdout + done.stderr).split() if word.strip(":,") in burst]
        if done.returncode != 0:
            timings.faults.append(f"{name} exited {done.returncode}: {done.stderr.strip()}")
        elif named:
            timings.faults.append(f"{name} named {len(named)} items of the burst")
    timings.waiting.append(len(burst - set(approvals(root))))


def start_daemon(root: Path, log_path: Path) -> subprocess.Popen[bytes]:
    with open(log_path, "ab") as log:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "feedbackd", "-w", str(root), "run"],
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    wait_until(lambda: "ready; watching" in log_path.read_text(), "the daemon to be ready")
    return daemon


def measure(root: Path, log_path: Path, burst: int, repeat: int) -> tuple[Timings, Timings]:
    names, extras = make_workspace(root, burst, 2 * repeat)
    daemon = start_daemon(root, log_path)
    try:
        agent = root / "_data" / "agents" / AGENT
        (agent / "approved").mkdir(exist_ok=True)
        for name in names:
            os.replace(agent / "queue" / f"{name}.json", agent / "approved" / f"{name}.json")
        wait_until(lambda: approvals(root), "the burst's first decision")
        during, idle = Timings(), Timings()
        for own in extras[:repeat]:
            run_commands(root, own, set(names), during)
        everything = set(names) | set(extras[:repeat])
        wait_until(lambda: set(approvals(root)) >= everything, "the end of the burst")
        for own in extras[repeat:]:
            run_commands(root, own, set(names), idle)
        twice = len(approvals(root)) - len(set(approvals(root)))
        if twice:
            during.faults.append(f"{twice} approvals recorded twice")
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)
    if "busy" in log_path.read_text():
        during.faults.append("the daemon logged a pass that found the workspace busy")
    return during, idle


def report(during: Timings, idle: Timings, target_s: float) -> bool:
    print(f"{'command':18}{'burst median':>14}{'burst max':>11}{'idle median':>13}{'ratio':>8}")
    met = True
    for name, seconds in during.seconds.items():
        quiet = statistics.median(idle.seconds.get(name, [float("nan")]))
        median = statistics.median(seconds)
        print(f"{name:18}{median:13.2f}s{max(seconds):10.2f}s{quiet:12.2f}s{median / quiet:7.1f}x")
        met = met and max(seconds) <= target_s
    print(f"burst approvals still waiting after each pair of commands: {during.waiting}")
    for fault in during.faults + idle.faults:
        print(f"FAULT: {fault}")
    verdict = "met" if met else "MISSED"
    print(f"target: each command during the burst in {target_s:g} s or less: {verdict}")
    return met and not during.faults and not idle.faults


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--target-s", type=float, default=15.0)
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="feedbackd-bench-") as folder:
        root = Path(folder) / "ws"
        during, idle = measure(root, Path(folder) / "daemon.log", options.burst, options.repeat)
    print(f"{options.burst:,} approvals in one burst; {options.repeat} of each command")
    return 0 if report(during, idle, options.target_s) else 1


if __name__ == "__main__":
    raise SystemExit(main())
