"""End to end: the rating commands as a provider runs them, on a million stored ratings.

Times `feedback submit`, `feedback list --since 7d` and `reputation` through the real command
line (new process each time, index already built), against `feedbackd --help` (the cost of
loading the whole command line, which a command no longer pays in full) in the same run.

    python -m tests.bench.bench_ratings_cli [--ratings 1000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from feedbackd.app.workspace.init import init_workspace
from feedbackd.core.workspacepaths import Workspace
from tests.bench import bench_ratings

SKILL = next(iter(bench_ratings.SKILLS))


def feedbackd(root: Path, *args: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "feedbackd", "-w", str(root), *args], capture_output=True, text=True
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"feedbackd {' '.join(args)} failed: {done.stderr}")
    return elapsed


def a_rating() -> str:
    return json.dumps(
        {
            "transaction_id": str(uuid.uuid4()),
            "provider_agent": bench_ratings.PROVIDER,
            "skill_id": SKILL,
            "rating": 4,
            "result_quality": "good",
            "would_reuse": True,
            "cost_value_ratio": "fair",
        }
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--ratings", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args(argv)
    bench_ratings.NOW = datetime.now(UTC)  # the history ends today, so 7d holds ratings
    with tempfile.TemporaryDirectory(prefix="feedbackd-bench-") as folder:
        root = Path(folder) / "ws"
        init_workspace(root)
        bench_ratings.generate(Workspace(root), options.ratings)
        index_build = feedbackd(root, "reputation", bench_ratings.PROVIDER, "--json")
        commands = {
            "feedbackd --help (command line)": ["--help"],
            "feedback submit": None,
            "feedback list --since 7d": ["feedback", "list", "--skill", SKILL, "--since", "7d"],
            "reputation": ["reputation", bench_ratings.PROVIDER],
        }
        print(f"{options.ratings:,} ratings; first command (builds the index): {index_build:.1f} s")
        print(f"{'command':34}{'median':>9}{'max':>9}")
        for name, args in commands.items():
            times = [
                feedbackd(
                    root, *(args or ["feedback", "submit", "--as", "b", "--json", a_rating()])
                )
                for _ in range(options.repeat)
            ]
            print(f"{name:34}{statistics.median(times):8.2f}s{max(times):8.2f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
