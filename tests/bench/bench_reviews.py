"""Benchmark: what a review by several curators costs against a decision by one (SPEC section 15).

Run: `python -m tests.bench.bench_reviews [--files 22000] [--samples 15] [--keep DIR]`.

The site is bench_daemon's (made by `feedbackd init`, its agents' drafts and a catch-up of
decisions in history, among `--files` tracked files), with `review.required: 2` for every agent
but the first (`review.agents: {writer-000: 1}`) and `daemon.settle_ms: 0`. `feedbackd run` is
started on it; then, `--samples` times and in turn, end to end (a `mv`, then the time until the
daemon's commit moves the branch):
- a decision by one curator: a draft of writer-000 moved from queue/ to approved/;
- a first review: a draft of writer-001 moved from queue/ to approved/ (a `review` commit that
  puts the draft back in review/ as first drafted);
- the deciding review: that draft, named for a second curator, moved from review/ to approved/
  (the decision, which reads the item's reviews and its draft as first drafted).
Each move waits until the daemon is quiet (no pass for 0.3 s), so that none lands in a pass the
previous move's own writes started. Prints the medians and their ratios to the decision by one
curator.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from tests.bench.bench_daemon import (
    RunningDaemon,
    Site,
    build_workspace,
    git,
    read_branch,
    site_of,
    status_mark,
    wait_for,
    wait_until_quiet,
    write_json,
)
from tests.bench.workfolder import in_work_folder

SOLO, REVIEWED = 0, 1  # the agents: one curator decides writer-000's drafts, two writer-001's
SECOND = "Bo Reviewer <bo@example.org>"


def configure(root: Path) -> None:
    config = "daemon:\n  settle_ms: 0\nreview:\n  required: 2\n  agents:\n    writer-000: 1\n"
    (root / "feedbackd.yaml").write_text(config)
    git(root, "add", "feedbackd.yaml")
    git(root, "commit", "-q", "-m", "two curators review each draft, but writer-000's")


def moved(root: Path, source: Path, to: str) -> float:
    """Move `source` to the agent's `to` folder; seconds until the daemon's commit is in."""
    target = source.parent.parent / to / source.name
    target.parent.mkdir(exist_ok=True)
    wait_until_quiet(root, 0.3)  # the passes the last move's own writes started are over
    before, mark = read_branch(root), status_mark(root)
    started = time.perf_counter()
    os.rename(source, target)
    wait_for(lambda: read_branch(root) != before, f"the commit of {source.name}")
    elapsed = time.perf_counter() - started
    wait_for(lambda: status_mark(root) != mark, "the end of the pass")
    return elapsed


def sample(root: Path, site: Site, number: int, times: dict[str, list[float]]) -> None:
    agents = root / "_data" / "agents"
    solo, item = site.queued(SOLO, number)
    times["one curator decides"].append(
        moved(root, agents / solo / "queue" / f"{item}.json", "approved")
    )
    reviewed, item = site.queued(REVIEWED, number)
    draft = agents / reviewed / "queue" / f"{item}.json"
    times["a first review"].append(moved(root, draft, "approved"))
    waiting = agents / reviewed / "review" / f"{item}.json"
    doc = json.loads(waiting.read_text(encoding="utf-8"))
    write_json(waiting, {**doc, "curator": SECOND})  # the next curator names themselves
    times["the deciding review"].append(moved(root, waiting, "approved"))


def run(args: argparse.Namespace, work: Path) -> bool:
    site = site_of(args.files, argparse.Namespace(agents=0, drafts=args.samples + 5, decided=10))
    root = work / "workspace"
    print(f"building a workspace of {site.files:,} tracked files, {site.agents} agents", flush=True)
    build_workspace(root, site)
    configure(root)
    times: dict[str, list[float]] = {
        "one curator decides": [],
        "a first review": [],
        "the deciding review": [],
    }
    daemon = RunningDaemon(root)
    try:
        for number in range(args.samples):
            sample(root, site, number, times)
    finally:
        errors = daemon.stop()
    if any(word in errors for word in ("ERROR", "Traceback")):
        print(f"the daemon logged errors:\n{errors}", file=sys.stderr)
        return False
    base = statistics.median(times["one curator decides"])
    print(f"mv → commit, median of {args.samples} each (end to end, {site.files:,} files):")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:22} {median * 1000:7.1f} ms  ×{median / base:.2f}")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--files", type=int, default=22000)
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args(argv)
    return in_work_folder(lambda work: run(args, work), args.keep, "feedbackd-bench-reviews-")


if __name__ == "__main__":
    sys.exit(main())
