"""Benchmark of a catch-up: many decisions waiting on a big site, recorded by one `run --once`.

Run: `python -m tests.bench.bench_catchup [--files 5000] [--drafts 1000] [--agents 20]
[--pending 200] [--repeat 3] [--keep DIR]`. The size of issue #25 (its target is for this one):
`python -m tests.bench.bench_catchup --files 100000 --drafts 4000 --agents 200 --pending 2000`.

An origin workspace (made by `feedbackd init`) gets one commit holding `--files` tracked files,
written with `git fast-import` as in bench_startup: `--drafts` queued drafts spread over
`--agents` agents, the rest other files of the site. It is cloned afresh, then on the clone:
- `feedbackd run --once`: the start-up of a fresh clone (each draft's first version is git's);
- the catch-up: `--pending` drafts, the same number from each agent, edited (their title) and
  moved to approved/ while no daemon runs, then `feedbackd run --once`, timed; afterwards each
  decision is checked to be recorded once, with its correction, in a commit of its own;
- the floors, on the same clone in the same run (medians of `--repeat`): `git add` + `git
  commit` of one changed file (what committing one change costs git itself here) and
  `git status`.
Prints a table (measure, value, target, met) with the ratios to the floors; exits 1 when the
target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.bench.bench_startup import (
    approve_while_stopped,
    bench_env,
    build_origin,
    feedbackd_command,
    fresh_clone,
    git,
    git_version,
    timed,
)
from tests.bench.workfolder import in_work_folder

TARGET_CATCH_UP_S = 60.0


@dataclass
class Results:
    start_up_s: float = 0.0
    catch_up_s: float = 0.0
    commit_floor_s: list[float] = field(default_factory=list)
    status_floor_s: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


# --- the pending decisions -------------------------------------------------------------------
def pending_items(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(agent, item) of the drafts to approve: the first ones of each agent, as bench_startup
    spreads drafts over agents (draft n belongs to agent n mod agents)."""
    chosen = range(min(args.pending, args.drafts))
    return [(f"writer-{n % args.agents:03d}", f"qi-{n:06d}") for n in chosen]


def check_catch_up(clone: Path, head: str, pending: list[tuple[str, str]]) -> list[str]:
    """Each pending approval recorded once, with its correction, in a commit of its own."""
    problems = []
    subjects = git(clone, "log", "--format=%s", f"{head}..HEAD").splitlines()
    approvals = [s for s in subjects if s.startswith("approve(")]
    if len(approvals) != len(pending):
        problems.append(f"{len(approvals)} approve commits for {len(pending)} approvals")
    for agent in sorted({agent for agent, _ in pending}):
        folder = clone / "_data" / "agents" / agent
        wanted = sorted(item for a, item in pending if a == agent)
        lines = (folder / "decisions.jsonl").read_text().splitlines()
        ledger = sorted(json.loads(line)["item"] for line in lines if line.strip())
        feedback = json.loads((folder / "feedback.json").read_text())
        corrected = sorted(e["queueItemId"] for e in feedback if e["type"] == "correction")
        if ledger != wanted or corrected != wanted:
            problems.append(f"{agent}: ledger {ledger}, corrections {corrected}, wanted {wanted}")
    if git(clone, "status", "--porcelain", "--", "_data"):
        problems.append("_data has uncommitted changes after the catch-up")
    return problems


# --- measurements ----------------------------------------------------------------------------
def commit_floor(clone: Path, number: int) -> float:
    """`git add` + `git commit` of one changed file, as subprocesses."""
    path = clone / "docs" / "floor.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"n": number}) + "\n")
    env = bench_env(clone.parent)
    started = time.perf_counter()
    subprocess.run(["git", "add", "docs/floor.json"], cwd=clone, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", "floor"], cwd=clone, check=True, env=env)
    return time.perf_counter() - started


def measure(origin: Path, clone: Path, args: argparse.Namespace, results: Results) -> None:
    env = bench_env(clone.parent)
    seconds = fresh_clone(origin, clone)
    print(f"cloned in {seconds:.1f} s; start-up of the fresh clone", flush=True)
    results.start_up_s = timed(feedbackd_command(clone, "run", "--once"), clone, env)
    for number in range(args.repeat):
        results.commit_floor_s.append(commit_floor(clone, number))
        results.status_floor_s.append(timed(["git", "status", "--porcelain"], clone, env))
    pending = pending_items(args)
    approve_while_stopped(clone, pending)
    head = git(clone, "rev-parse", "HEAD").strip()
    print(f"catch-up of {len(pending):,} approvals", flush=True)
    results.catch_up_s = timed(feedbackd_command(clone, "run", "--once"), clone, env)
    results.problems += check_catch_up(clone, head, pending)


# --- report ----------------------------------------------------------------------------------
Row = tuple[str, str, str, bool | None]  # measure, value, target, met (None: no target)


def rows(results: Results, pending: int) -> list[Row]:
    commit = statistics.median(results.commit_floor_s)
    status = statistics.median(results.status_floor_s)
    catch_up, each = results.catch_up_s, results.catch_up_s / max(pending, 1)
    return [
        ("git add + commit (floor)", f"{commit:.3f} s", "", None),
        ("git status (floor)", f"{status:.3f} s", "", None),
        ("start-up of the fresh clone", f"{results.start_up_s:.1f} s", "", None),
        (f"catch-up of {pending:,} approvals", f"{catch_up:.1f} s",
         f"≤ {TARGET_CATCH_UP_S:g} s", catch_up <= TARGET_CATCH_UP_S),
        ("  per approval", f"{each:.3f} s, {each / commit:.2f}× git add + commit", "", None),
        ("recorded once, each alone", "yes" if not results.problems
         else f"{len(results.problems)} problems", "", not results.problems),
    ]  # fmt: skip


def report(results: Results, args: argparse.Namespace) -> bool:
    """Print the table; True when every target is met."""
    pending = len(pending_items(args))
    table = rows(results, pending)
    print(f"\nfeedbackd catch-up: {args.files:,} tracked files, {args.drafts:,} drafts in")
    print(f"{args.agents} agents; floors: medians of {args.repeat};", end=" ")
    print(f"{os.cpu_count()} CPUs, git {git_version()}")
    print(f"{'measure':<30} {'value':<36} {'target':<10} met")
    for name, value, target, met in table:
        mark = "" if met is None else ("yes" if met else "NO")
        print(f"{name:<30} {value:<36} {target:<10} {mark}")
    for problem in results.problems[:20]:
        print(f"problem: {problem}")
    return all(met for *_, met in table if met is not None)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tests.bench.bench_catchup", description=__doc__
    )
    parser.add_argument("--files", type=int, default=5000, help="tracked files in the workspace")
    parser.add_argument("--drafts", type=int, default=1000, help="queued drafts among them")
    parser.add_argument("--agents", type=int, default=20, help="agents the drafts belong to")
    parser.add_argument("--pending", type=int, default=200, help="approvals to catch up on")
    parser.add_argument("--repeat", type=int, default=3, help="floors measured")
    parser.add_argument("--keep", type=Path, help="build the workspaces here and keep them")
    args = parser.parse_args(argv)
    if args.agents < 1 or args.pending < 1 or args.repeat < 1:
        parser.error("--agents, --pending and --repeat must be at least 1")
    return args


def run(args: argparse.Namespace, work: Path) -> bool:
    origin, clone = work / "origin", work / "clone"
    print(f"building a workspace of {args.files:,} tracked files in {origin}", flush=True)
    build_origin(origin, args)
    results = Results()
    measure(origin, clone, args, results)
    return report(results, args)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    return in_work_folder(lambda work: run(args, work), args.keep, "feedbackd-bench-")


if __name__ == "__main__":
    sys.exit(main())
