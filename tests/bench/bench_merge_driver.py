"""Benchmark of the merge driver's start-to-exit time, the cost git pays for every merged file.

Run: `python -m tests.bench.bench_merge_driver [--entries 200] [--added 10] [--repeat 20]`.

A workspace made by `feedbackd init`, whose feedbackd.yaml sets `feedback.max_entries`, holds the
three versions git hands the driver: a feedback.json of `--entries` entries, and two sides that
each appended `--added` of their own. Each round runs, as git does, `python -m feedbackd
merge-driver %O %A %B %P` in the workspace (ours restored before each run), and, in the same
round, `python -c pass`: the floor of starting the interpreter at all. Prints medians, the ratio
and whether the driver's median is within the target; exits 1 when it is not. One more run with
`-X importtime` says how much of the time is the driver's imports.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from feedbackd.app.workspace.init import init_workspace

TARGET_S = 0.15
FEEDBACK_PATH = "_data/agents/writer/feedback.json"


def entry(n: int) -> dict[str, Any]:
    return {
        "id": f"fb-17756352{n:05d}-k3j9x2",
        "type": "correction",
        "queueItemId": f"qi-{n}",
        "field": "title",
        "original": f"Why TypeScript Generics Matter, draft {n}",
        "corrected": f"How TypeScript Generics Save You From Refactoring Hell, take {n}",
        "createdAt": f"2026-04-{1 + n // 1440 % 28:02d}T{n // 60 % 24:02d}:{n % 60:02d}:00.000Z",
    }


def feedback(numbers: range | list[int]) -> bytes:
    return (json.dumps([entry(n) for n in numbers], indent=2) + "\n").encode()


def prepare(root: Path, entries: int, added: int) -> tuple[list[str], bytes]:
    """The driver's command line (run in root) and the bytes of ours to restore before each run."""
    init_workspace(root)
    with open(root / "feedbackd.yaml", "a", encoding="utf-8") as config:
        config.write(f"feedback:\n  max_entries: {entries}\n")
    common = list(range(entries))
    versions = {
        ".merge_file_O": feedback(common),
        ".merge_file_A": feedback([*common, *range(entries, entries + 2 * added, 2)]),
        ".merge_file_B": feedback([*common, *range(entries + 1, entries + 2 * added, 2)]),
    }
    for name, data in versions.items():
        (root / name).write_bytes(data)
    driver = [sys.executable, "-m", "feedbackd", "merge-driver", *versions, FEEDBACK_PATH]
    return driver, versions[".merge_file_A"]


def timed(argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr}")
    return elapsed


def import_time_s(driver: list[str], cwd: Path) -> float:
    """The driver's own imports (feedbackd.cli.merge_driver and all it pulls in), seconds."""
    argv = [driver[0], "-X", "importtime", *driver[1:]]
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=True)
    for line in done.stderr.splitlines():
        if line.rstrip().endswith("| feedbackd.cli.merge_driver"):
            return int(line.split("|")[1]) / 1e6
    return float("nan")


def measure(root: Path, args: argparse.Namespace) -> tuple[list[float], list[float], float]:
    driver, ours = prepare(root, args.entries, args.added)
    floor_argv = [sys.executable, "-c", "pass"]
    timed(driver, root)  # warm the file cache and the bytecode of both
    floors, drivers = [], []
    for _ in range(args.repeat):
        (root / ".merge_file_A").write_bytes(ours)
        floors.append(timed(floor_argv, root))
        drivers.append(timed(driver, root))
    merged = json.loads((root / ".merge_file_A").read_bytes())
    if len(merged) != args.entries:
        raise SystemExit(f"the merge kept {len(merged)} entries, not the cap of {args.entries}")
    (root / ".merge_file_A").write_bytes(ours)
    return floors, drivers, import_time_s(driver, root)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.bench_merge_driver")
    parser.add_argument("--entries", type=int, default=200, help="entries in the common version")
    parser.add_argument("--added", type=int, default=10, help="entries each side appended")
    parser.add_argument("--repeat", type=int, default=20, help="runs of the driver (and floor)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="feedbackd-bench-"))
    try:
        floors, drivers, imports = measure(work / "ws", args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    driver, floor = statistics.median(drivers), statistics.median(floors)
    met = driver <= TARGET_S
    print(f"merge driver on feedback.json: {args.entries} entries + {args.added} per side,")
    print(f"{args.repeat} runs each, medians (max)")
    print(f"{'python -c pass (floor)':34}{floor * 1000:7.0f} ms ({max(floors) * 1000:.0f})")
    print(f"{'merge-driver, start to exit':34}{driver * 1000:7.0f} ms ({max(drivers) * 1000:.0f})")
    print(f"{'  of which its imports':34}{imports * 1000:7.0f} ms")
    print(f"{'driver / floor':34}{driver / floor:7.1f} ×")
    print(f"target: median ≤ {TARGET_S * 1000:.0f} ms: {'met' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
