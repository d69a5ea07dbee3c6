"""Benchmark of the watcher alone: from a move in an agent folder to its batch, and its wake-ups.

Run: `python -m tests.bench.bench_watcher [--samples 30] [--start-files 100000]`.

In one process, on a folder in /tmp, each way of watching in turn runs watch_agents in a thread:
feedbackd's own (inotify, the thread asleep until an event comes) and, as the baseline,
watchfiles' loop looking for events every 1 ms and every 10 ms (the two paces the watcher had
before: 1 ms for ten seconds after a change, 10 ms otherwise). For each: the time from
`os.rename` of a draft queue/ → approved/ until the batch naming the agent is handed over,
`--samples` times (each move 0.2 s after the draft was written); and the watching thread's
wake-ups a second (voluntary context switches in /proc) over a second with nothing happening.
Then, on a tree of `--start-files` files (200 agents, five folders each), how long each watch
takes to be in place (best of 3). Prints medians, p90 and the ratio against each baseline;
exits 1 unless feedbackd's watcher is at least as quick as the 1 ms loop and wakes at most a
fifth as often as the 10 ms one.
"""

from __future__ import annotations

import argparse
import os
import queue
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from watchfiles._rust_notify import RustNotify

from feedbackd.edges import inotify, watcher
from feedbackd.edges.inotify import TreeWatch
from feedbackd.edges.watcher import Changes, watch_agents

PAUSE_S = 0.2  # between a draft's save and its move, as a curator's edit then approval
IDLE_S = 1.0
START_AGENTS, START_FOLDERS = 200, ("queue", "approved", "rejected", "revised", "ratings")


@dataclass(frozen=True)
class Measured:
    name: str
    latency_ms: list[float]
    wakeups_per_s: float


class Running:
    """watch_agents in a thread; batches handed over with the moment they came."""

    def __init__(self, data_dir: Path, step_ms: int) -> None:
        self.stop = threading.Event()
        self.batches: queue.Queue[tuple[float, Changes]] = queue.Queue()
        self.thread_id = 0
        self._started = threading.Event()
        self._args = (data_dir, step_ms)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self.batches.get(timeout=10)  # the first batch: the watch is in place

    def _run(self) -> None:
        self.thread_id = threading.get_native_id()
        data_dir, step_ms = self._args
        for changes in watch_agents(data_dir, self.stop, debounce_ms=50, step_ms=step_ms):
            self.batches.put((time.perf_counter(), changes))

    def close(self) -> None:
        self.stop.set()
        self._thread.join(10)


@contextmanager
def watching(data_dir: Path, step_ms: int | None) -> Iterator[Running]:
    """feedbackd's watcher (step_ms None), or watchfiles' loop at that step."""
    if step_ms is None:
        running = Running(data_dir, watcher.DEFAULT_STEP_MS)
    else:
        with mock.patch.object(inotify, "available", return_value=False):
            running = Running(data_dir, step_ms)
    try:
        yield running
    finally:
        running.close()


def move_to_batch(running: Running, agent: Path, number: int) -> float:
    draft = agent / "queue" / f"qi-{number}.json"
    draft.write_text('{"contentData": {"title": "Draft"}}\n')
    time.sleep(PAUSE_S)  # the measurement's own pace: the curator's move comes after the save
    while not running.batches.empty():
        running.batches.get()
    began = time.perf_counter()
    os.rename(draft, agent / "approved" / draft.name)
    while True:
        at, changes = running.batches.get(timeout=10)
        if agent.name in changes.agents:
            return (at - began) * 1000


def sleeps(thread_id: int) -> int:
    status = Path(f"/proc/self/task/{thread_id}/status").read_text()
    return int(status.split("voluntary_ctxt_switches:")[1].split()[0])


def measure(name: str, step_ms: int | None, samples: int, work: Path) -> Measured:
    data_dir = work / name.replace(" ", "-") / "_data"
    agent = data_dir / "agents" / "writer"
    for folder in ("queue", "approved"):
        (agent / folder).mkdir(parents=True)
    with watching(data_dir, step_ms) as running:
        latency = [move_to_batch(running, agent, number) for number in range(samples)]
        before, began = sleeps(running.thread_id), time.monotonic()
        time.sleep(IDLE_S)  # the measurement itself: a second with nothing happening
        woke = (sleeps(running.thread_id) - before) / (time.monotonic() - began)
    return Measured(name, latency, woke)


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def report(results: list[Measured]) -> bool:
    print(f"\nwatcher: move → batch ({len(results[0].latency_ms)} moves), {os.cpu_count()} CPUs")
    print(f"{'watcher':<34} {'median':>8} {'p90':>8} {'wake-ups/s idle':>16}")
    for result in results:
        median, high = statistics.median(result.latency_ms), p90(result.latency_ms)
        print(f"{result.name:<34} {median:>6.2f} ms {high:>5.2f} ms {result.wakeups_per_s:>16.0f}")
    ours, every_1, every_10 = results
    quick = statistics.median(ours.latency_ms) / statistics.median(every_1.latency_ms)
    quiet = ours.wakeups_per_s / every_10.wakeups_per_s
    print(f"feedbackd / 1 ms loop, latency: {quick:.2f}× (target ≤ 1×)")
    print(f"feedbackd / 10 ms loop, wake-ups: {quiet:.2f}× (target ≤ 0.2×)")
    return quick <= 1.0 and quiet <= 0.2


def build_tree(root: Path, files: int) -> int:
    """`files` files spread over START_AGENTS agents' folders; returns how many folders."""
    folders = [
        root / "agents" / f"agent-{number:03d}" / name
        for number in range(START_AGENTS)
        for name in START_FOLDERS
    ]
    for index, folder in enumerate(folders):
        folder.mkdir(parents=True)
        for number in range(index, files, len(folders)):
            (folder / f"qi-{number}.json").write_text("{}\n")
    return len(folders) + START_AGENTS + 2  # and the agents' own, agents/ and the root


def measure_start(root: Path) -> tuple[float, float]:
    """Best of 3 seconds until each watch is in place: feedbackd's, watchfiles' RustNotify."""
    ours, theirs = [], []
    for _ in range(3):
        began = time.perf_counter()
        TreeWatch(str(root)).close()
        ours.append(time.perf_counter() - began)
        began = time.perf_counter()
        RustNotify([str(root)], False, False, 300, True, True).close()
        theirs.append(time.perf_counter() - began)
    return min(ours), min(theirs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.bench.bench_watcher", description=__doc__
    )
    parser.add_argument("--samples", type=int, default=30, help="moves timed for each watcher")
    parser.add_argument("--start-files", type=int, default=100_000, help="files of the tree")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="feedbackd-watcher-") as folder:
        work = Path(folder)
        results = [
            measure("feedbackd (inotify, asleep)", None, args.samples, work),
            measure("watchfiles loop, 1 ms step", 1, args.samples, work),
            measure("watchfiles loop, 10 ms step", 10, args.samples, work),
        ]
        met = report(results)
        folders = build_tree(work / "tree", args.start_files)
        ours, theirs = measure_start(work / "tree")
    print(f"watch in place on {args.start_files:,} files in {folders:,} folders: feedbackd", end="")
    print(f" {ours * 1000:.0f} ms, watchfiles' RustNotify {theirs * 1000:.0f} ms")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
