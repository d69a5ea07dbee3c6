"""Benchmark of the daemon left alone after a change: CPU and wake-ups 1 s and 15 s after it.

Run: `python -m tests.bench.bench_idle_cpu [--files 2000] [--rounds 5] [--window 4] [--burst 1]
[--keep DIR]`.

One workspace of `--files` tracked files (bench_daemon's site) and `feedbackd run` on it. Each
round approves `--burst` drafts at once (moves queue/ → approved/), waits for their commits,
then measures the daemon over `--window` seconds starting 1 s after the last commit and again
starting 15 s after it: CPU (each thread's run time from /proc schedstat, in nanoseconds, plus
the git commands it waited for; as a share of one core) and wake-ups (voluntary context
switches of all its threads, per second). A curator going through a queue changes something
every few seconds, so the first window is what a working day mostly costs.
Prints each round and the medians; exits 1 when the median CPU of either window is 1 % or more.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.bench.bench_daemon import (
    RunningDaemon,
    build_workspace,
    edit_drafts,
    queue,
    wait_for,
    wait_until_quiet,
)
from tests.bench.workfolder import in_work_folder

SINGLE_AGENT = "bench-single"
AFTER_S = (1.0, 15.0)  # where each window starts, counted from the change
TARGET_CPU_PCT = 1.0


@dataclass(frozen=True)
class Window:
    cpu_pct: float
    wakeups_per_s: float


def per_thread(pid: int, name: str) -> list[str]:
    """The file `name` of each of the process's threads (a thread that ended meanwhile: none)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            found.append((task / name).read_text())
    return found


def wakeups(pid: int) -> int:
    """Voluntary context switches of every thread: each is one time the thread went to sleep."""
    total = 0
    for status in per_thread(pid, "status"):
        total += int(status.split("voluntary_ctxt_switches:")[1].split()[0])
    return total


def cpu_seconds(pid: int) -> float:
    """Run time of every thread (schedstat: nanoseconds, where utime counts 10 ms ticks) and of
    the children it waited for (cutime + cstime, ticks)."""
    threads = sum(int(stat.split()[0]) for stat in per_thread(pid, "schedstat")) / 1e9
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return threads + (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def measure(pid: int, seconds: float) -> Window:
    cpu, woke, started = cpu_seconds(pid), wakeups(pid), time.monotonic()
    time.sleep(seconds)  # the measurement itself: the daemon is left alone for this long
    elapsed = time.monotonic() - started
    spent = cpu_seconds(pid) - cpu
    return Window(100 * spent / elapsed, (wakeups(pid) - woke) / elapsed)


def one_round(root: Path, pid: int, first: int, args: argparse.Namespace) -> list[Window]:
    """Approve `--burst` drafts at once, then measure a window at each of AFTER_S after the
    last of their commits is in (the daemon's own last change)."""
    burst: int = args.burst
    reflog = root / ".git" / "logs" / "HEAD"
    offset = reflog.stat().st_size
    for number in range(first, first + burst):
        source = queue(root, SINGLE_AGENT, f"single-{number:04d}")
        target = source.parent.parent / "approved" / source.name
        target.parent.mkdir(exist_ok=True)
        os.rename(source, target)

    def all_in() -> bool:
        with reflog.open("rb") as handle:
            handle.seek(offset)
            return handle.read().count(b": approve(") >= burst

    wait_for(all_in, f"{burst} approve commits")
    changed = time.monotonic()
    found = []
    for after in AFTER_S:
        time.sleep(max(0.0, changed + after - time.monotonic()))  # until the window's start
        found.append(measure(pid, args.window))
    return found


def run(args: argparse.Namespace, work: Path) -> bool:
    root = work / "workspace"
    print(f"building a workspace of {args.files:,} tracked files in {root}", flush=True)
    build_workspace(root, args.files, args.rounds * args.burst, 0)
    daemon = RunningDaemon(root)
    rounds: list[list[Window]] = []
    try:
        edit_drafts(root, args.rounds * args.burst)
        wait_until_quiet(root)
        for number in range(args.rounds):
            rounds.append(one_round(root, daemon.pid, number * args.burst, args))
            shown = "   ".join(
                f"{after:g} s after: {w.cpu_pct:.2f} % CPU, {w.wakeups_per_s:.0f} wake-ups/s"
                for after, w in zip(AFTER_S, rounds[-1], strict=True)
            )
            print(f"round {number + 1}: {shown}", flush=True)
    finally:
        errors = daemon.stop()
    if any(word in errors for word in ("ERROR", "Traceback")):
        print(f"the daemon logged errors:\n{errors}", file=sys.stderr)
    return report(rounds, args)


def report(rounds: list[list[Window]], args: argparse.Namespace) -> bool:
    change = "an approval" if args.burst == 1 else f"a burst of {args.burst} approvals"
    print(f"\nfeedbackd idle after {change}: {args.files:,} tracked files, {len(rounds)} rounds,")
    print(f"{args.window:g} s windows, {os.cpu_count()} CPUs (medians)")
    met = True
    for index, after in enumerate(AFTER_S):
        cpu = statistics.median(r[index].cpu_pct for r in rounds)
        woke = statistics.median(r[index].wakeups_per_s for r in rounds)
        ok = cpu < TARGET_CPU_PCT
        met = met and ok
        mark = "yes" if ok else "NO"
        print(
            f"{after:>4g} s after: {cpu:.2f} % CPU (target < {TARGET_CPU_PCT:g} %: {mark}),", end=""
        )
        print(f" {woke:.0f} wake-ups/s")
    return met


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tests.bench.bench_idle_cpu", description=__doc__
    )
    parser.add_argument("--files", type=int, default=2000, help="tracked files")
    parser.add_argument("--rounds", type=int, default=5, help="changes, each measured twice")
    parser.add_argument("--window", type=float, default=4.0, help="seconds each window lasts")
    parser.add_argument("--burst", type=int, default=1, help="approvals moved at once a round")
    parser.add_argument("--keep", type=Path, help="build the workspace here and keep it")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    return in_work_folder(lambda work: run(args, work), args.keep, "feedbackd-idle-")


if __name__ == "__main__":
    sys.exit(main())
