"""Benchmark of the command line's start-up: what a command costs before it does its work.

Run: `python -m tests.bench.bench_cli_startup [--repeat 15] [--keep DIR]`.

On a small workspace made by `feedbackd init` (one agent, one draft), each a new process as a
user or a script starts it, `--repeat` times in turns, medians:
- `python -c pass`: starting Python alone, the floor;
- `feedbackd --version`: Python and feedbackd's package, answered before the command line loads;
- `feedbackd status`: the command line, the settings (pydantic) and the workspace's status;
- `feedbackd feedback submit`: a rating recorded, its commit included (a new one each time).
With the ratio of each to the floor, and the modules each imported (`python -X importtime`).
feedbackd's bytecode is kept in a folder of the run, as an installed feedbackd has it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

from tests.bench.bench_startup import bench_env, feedbackd_command, git_version, timed
from tests.bench.workfolder import in_work_folder

TARGET_VERSION_S = 0.15
RATING = {
    "provider_agent": "provider-1", "skill_id": "summarise", "rating": 4,
    "result_quality": "good", "would_reuse": True, "cost_value_ratio": "fair",
}  # fmt: skip


def commands(root: Path) -> dict[str, Callable[[int], list[str]]]:
    """Each measure's command line, given the run's number (a submit needs a new rating)."""

    def submit(number: int) -> list[str]:
        rating = {"transaction_id": str(uuid.UUID(int=number + 1)), **RATING}
        return feedbackd_command(root, "feedback", "submit", "--as", "buyer-1", "--json",
                                 json.dumps(rating))  # fmt: skip

    return {
        "python -c pass (floor)": lambda _: [sys.executable, "-c", "pass"],
        "feedbackd --version": lambda _: [sys.executable, "-m", "feedbackd", "--version"],
        "feedbackd status": lambda _: feedbackd_command(root, "status"),
        "feedbackd feedback submit": submit,
    }


def modules_imported(command: list[str], cwd: Path, env: dict[str, str]) -> int:
    """How many modules `command` (a Python one) imports: one `import time:` line each."""
    probe = [command[0], "-X", "importtime", *command[1:]]
    done = subprocess.run(probe, cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return sum(1 for line in done.stderr.splitlines() if line.startswith("import time:")) - 1


def measure(root: Path, repeat: int) -> dict[str, tuple[float, int]]:
    """Each command's median seconds and modules imported; the commands run in turns, so that
    the machine's other work weighs on each alike."""
    env = bench_env(root.parent)
    lines = commands(root)
    for line in lines.values():  # a first run of each writes its bytecode
        timed(line(repeat + len(lines)), root, env)
    times: dict[str, list[float]] = {name: [] for name in lines}
    for number in range(repeat):
        for name, line in lines.items():
            times[name].append(timed(line(number), root, env))
    counts = {name: modules_imported(line(repeat + 100), root, env) for name, line in lines.items()}
    return {name: (statistics.median(times[name]), counts[name]) for name in lines}


def report(results: dict[str, tuple[float, int]], repeat: int) -> bool:
    """Print the table; True when `--version` meets its target."""
    floor = results["python -c pass (floor)"][0]
    print(f"\nfeedbackd's start-up: medians of {repeat} runs, {os.cpu_count()} CPUs,", end=" ")
    print(f"Python {platform.python_version()}, git {git_version()}")
    print(f"{'command':28}{'median':>9}{'× floor':>9}{'modules':>9}")
    for name, (seconds, count) in results.items():
        print(f"{name:28}{seconds:8.3f}s{seconds / floor:8.1f}×{count:9d}")
    version = results["feedbackd --version"][0]
    met = version <= TARGET_VERSION_S
    print(f"target: --version in {TARGET_VERSION_S} s or less: {'met' if met else 'MISSED'}")
    return met


def run(work: Path, repeat: int) -> bool:
    root = work / "ws"
    env = bench_env(work)
    subprocess.run(feedbackd_command(root, "init", str(root)), check=True, env=env)
    (root / "_data" / "agents" / "writer" / "queue").mkdir(parents=True)
    draft = {"id": "qi-1", "contentData": {"title": "A draft"}}
    (root / "_data" / "agents" / "writer" / "queue" / "qi-1.json").write_text(json.dumps(draft))
    subprocess.run(feedbackd_command(root, "run", "--once"), check=True, env=env)
    return report(measure(root, repeat), repeat)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.bench_cli_startup",
                                     description=__doc__)  # fmt: skip
    parser.add_argument("--repeat", type=int, default=15, help="runs of each command")
    parser.add_argument("--keep", type=Path, help="build the workspace here and keep it")
    args = parser.parse_args(argv)
    return in_work_folder(lambda work: run(work, max(args.repeat, 1)), args.keep,
                          "feedbackd-bench-")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
