"""Benchmark of the rating store at scale: one provider with a million ratings over two years.

Run: `python -m tests.bench.bench_ratings [--ratings N] [--repeat R] [--keep DIR] [--rebuild]`.
The history is written straight into the month files (as other machines' pulls would leave it),
then `feedback list --since 7d`, `reputation` and the duplicate check are timed cold (no index:
the first run builds it) and warm, against a baseline that reads and validates every line of the
same files, as a store without an index would. The last row submits a new rating each run, so
its warm time includes re-reading the month file that just grew (only its new line is parsed).
Prints median times and the speed-up ratios.

Then (or alone, with `--rebuild`) the first command after a fresh clone: the index deleted, a
reputation that rebuilds it from every month file, with worker processes (as commands run) and
in this one process, against the floor of merely listing and reading the same files. The three
are measured in turn, `--rebuild-repeat` times, so that other work on the machine weighs on all
of them alike; the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from feedbackd.core.config import ReputationSettings
from feedbackd.core.ratings.records import QUALITIES, Rating, rating_line
from feedbackd.core.ratings.reputation import feedback_list_report, reputation_report
from feedbackd.core.timeutil import iso_ms
from feedbackd.core.workspacepaths import Workspace
from feedbackd.edges import monthfiles
from feedbackd.edges.ratingstore import RatingStore

PROVIDER = "heavylift-chengwen"
SKILLS = {"claude-code-run": 0.5, "web-research": 0.25, "translate": 0.15, "summarise": 0.10}
NOW = datetime(2026, 4, 8, 12, 0, tzinfo=UTC)
HISTORY = timedelta(days=730)
LINE = (
    '{{"transaction_id": "{tx}", "provider_agent": "' + PROVIDER + '", "skill_id": "{skill}", '
    '"requester_agent": "requester-{requester}", "rating": {rating}, "latency_ms": {latency}, '
    '"result_quality": "{quality}", "would_reuse": {reuse}, "cost_value_ratio": "{cost}", '
    '"timestamp": "{timestamp}"}}\n'
)


def generate(workspace: Workspace, count: int, seed: int = 7) -> list[str]:
    """Write `count` ratings into month files; return a sample of their transaction ids."""
    rng = random.Random(seed)
    start = NOW - HISTORY
    files: dict[tuple[str, str], list[tuple[float, str]]] = {}
    skills, weights = list(SKILLS), list(SKILLS.values())
    sample = []
    for number in range(count):
        moment = start + timedelta(seconds=rng.random() * HISTORY.total_seconds())
        stamp = iso_ms(moment)
        skill = rng.choices(skills, weights)[0]
        tx = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        if number % max(1, count // 100) == 0:
            sample.append(tx)
        line = LINE.format(
            tx=tx, skill=skill, requester=rng.randrange(50), rating=rng.randint(1, 5),
            latency=rng.randrange(100, 60_000), quality=rng.choice(QUALITIES),
            reuse=rng.choice(("true", "false")), cost=rng.choice(("great", "fair", "overpriced")),
            timestamp=stamp,
        )  # fmt: skip
        files.setdefault((skill, stamp[:7]), []).append((moment.timestamp(), line))
    ratings_dir = workspace.agent(PROVIDER).ratings
    for (skill, month), lines in files.items():
        lines.sort()
        path = ratings_dir / skill / f"{month}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line for _, line in lines), encoding="utf-8")
    return sample


def naive_ratings(workspace: Workspace) -> Iterator[Rating]:
    """Every stored rating, read and validated line by line (no index, no month pruning)."""
    for path in sorted(workspace.agents_dir.glob("*/ratings/*/*.jsonl")):
        with path.open("rb") as handle:
            for line in handle:
                if line.strip():
                    yield Rating.model_validate_json(line)


def naive_list(workspace: Workspace, settings: ReputationSettings) -> dict[str, Any]:
    since = iso_ms(NOW - timedelta(days=7))
    chosen = [
        r
        for r in naive_ratings(workspace)
        if r.skill_id == "claude-code-run" and r.timestamp >= since
    ]
    return feedback_list_report("claude-code-run", PROVIDER, "7d", chosen, settings, NOW, 20)


def naive_duplicate(workspace: Workspace, tx: str) -> bool:
    return any(r.transaction_id == tx for r in naive_ratings(workspace))


def new_rating() -> Rating:
    """A new rating of the busiest skill, as `feedback submit` would store it."""
    return Rating(
        transaction_id=str(uuid.uuid4()), provider_agent=PROVIDER, skill_id="claude-code-run",
        requester_agent="requester-1", rating=4, result_quality="good", would_reuse=True,
        cost_value_ratio="fair", timestamp=iso_ms(NOW - timedelta(minutes=1)),
    )  # fmt: skip


def append_line_naively(store: RatingStore) -> bool:
    rating = new_rating()
    with store.path_for(rating).open("a", encoding="utf-8") as handle:
        handle.write(rating_line(rating) + "\n")
    return False


def timed(action: Callable[[], object], repeat: int) -> tuple[float, list[float]]:
    """(seconds of the first run, seconds of each later run)."""
    times = []
    for _ in range(repeat + 1):
        began = time.perf_counter()
        action()
        times.append(time.perf_counter() - began)
    return times[0], times[1:]


def run(root: Path, count: int, repeat: int, baseline_repeat: int) -> Iterator[str]:
    """Generate the history, then yield one line of results per operation as it is measured."""
    workspace = Workspace(root)
    began = time.perf_counter()
    sample = generate(workspace, count)
    yield f"generated {count:,} ratings in {time.perf_counter() - began:.1f} s under {root}"
    settings = ReputationSettings()
    store = RatingStore(workspace)
    since = NOW - timedelta(days=7)
    missing = str(uuid.uuid4())

    def fast_list() -> object:
        ratings = store.ratings(PROVIDER, "claude-code-run", since)
        return feedback_list_report("claude-code-run", PROVIDER, "7d", ratings, settings, NOW, 20)

    cases: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
        ("feedback list --since 7d", fast_list, lambda: naive_list(workspace, settings)),
        (
            "reputation",
            lambda: store.reputation_report(PROVIDER, settings, NOW),
            lambda: reputation_report(PROVIDER, naive_ratings(workspace), settings, NOW),
        ),
        (
            "duplicate check (new id)",
            lambda: store.has_transaction(missing),
            lambda: naive_duplicate(workspace, missing),
        ),
        (
            "duplicate check (known id)",
            lambda: store.has_transaction(sample[-1]),
            lambda: naive_duplicate(workspace, sample[-1]),
        ),
    ]
    cases.append(
        (
            "submit (check + append)",
            lambda: store.append(new_rating()),
            lambda: naive_duplicate(workspace, missing) or append_line_naively(store),
        )
    )
    yield f"{'operation':28} {'cold':>9} {'warm':>9} {'naive':>9} {'naive/warm':>11}"
    for name, fast, naive in cases:
        store.index_path.unlink(missing_ok=True)  # cold: the index is built by the first run
        cold, warm = timed(fast, repeat)
        first, rest = timed(naive, baseline_repeat - 1)
        naive_median = statistics.median([first, *rest])
        warm_median = statistics.median(warm)
        yield (
            f"{name:28} {cold:8.3f}s {warm_median:8.3f}s {naive_median:8.3f}s"
            f" {naive_median / warm_median:10.0f}x"
        )


def read_every_file(workspace: Workspace) -> int:
    """The floor of a rebuild: list the month files and read each of them once."""
    return sum(len(path.read_bytes()) for path in workspace.agents_dir.glob("*/ratings/*/*.jsonl"))


def rebuild(store: RatingStore, settings: ReputationSettings, in_workers: bool) -> object:
    """The first command after a fresh clone: no index yet, so it is built from every file."""
    for leftover in store.index_path.parent.glob(store.index_path.name + "*"):
        leftover.unlink()
    threshold = monthfiles.PARALLEL_MIN_BYTES
    monthfiles.PARALLEL_MIN_BYTES = threshold if in_workers else sys.maxsize
    try:
        return store.reputation_report(PROVIDER, settings, NOW)
    finally:
        monthfiles.PARALLEL_MIN_BYTES = threshold


def run_rebuild(workspace: Workspace, repeat: int) -> Iterator[str]:
    """Yield lines of results of the rebuild after a fresh clone, against the floor."""
    settings = ReputationSettings()
    store = RatingStore(workspace)
    cases: dict[str, Callable[[], object]] = {
        "list + read every file (floor)": lambda: read_every_file(workspace),
        "rebuild (worker processes)": lambda: rebuild(store, settings, in_workers=True),
        "rebuild (one process)": lambda: rebuild(store, settings, in_workers=False),
    }
    yield f"rebuild after a fresh clone, {repeat} runs; load average {_load()}"
    times: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeat):
        for name, action in cases.items():
            before = cpu_seconds()
            times[name].append(timed(action, 0)[0])
            cpu[name].append(cpu_seconds() - before)
    floor = statistics.median(times["list + read every file (floor)"])
    yield f"{'':32} {'median':>8} {'min':>8} {'max':>8} {'/ floor':>8} {'CPU':>8}"
    for name, measured in times.items():
        median = statistics.median(measured)
        yield (
            f"{name:32} {median:7.2f}s {min(measured):7.2f}s {max(measured):7.2f}s"
            f" {median / floor:7.1f}x {statistics.median(cpu[name]):7.2f}s"
        )
    yield f"load average after: {_load()}"
    yield "CPU: seconds of processor time, worker processes included (steadier than the wall"
    yield "clock on a machine shared with other work)"


def cpu_seconds() -> float:
    """Processor time of this process and of its children that ended."""
    mine, theirs = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return mine.ru_utime + mine.ru_stime + theirs.ru_utime + theirs.ru_stime


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--ratings", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5, help="warm runs (median shown)")
    parser.add_argument("--baseline-repeat", type=int, default=1, help="naive runs (slow)")
    parser.add_argument("--rebuild", action="store_true", help="measure only the rebuild")
    parser.add_argument("--rebuild-repeat", type=int, default=5, help="rebuilds (median shown)")
    parser.add_argument("--keep", type=Path, help="build the workspace here and keep it")
    args = parser.parse_args(argv)
    root = args.keep or Path(tempfile.mkdtemp(prefix="feedbackd-bench-"))
    try:
        if args.rebuild:
            began = time.perf_counter()
            generate(Workspace(root), args.ratings)
            print(f"generated {args.ratings:,} ratings in {time.perf_counter() - began:.1f} s")
        else:
            for line in run(root, args.ratings, max(1, args.repeat), max(1, args.baseline_repeat)):
                print(line, flush=True)
        for line in run_rebuild(Workspace(root), max(1, args.rebuild_repeat)):
            print(line, flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
