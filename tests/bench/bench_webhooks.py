"""Benchmark: does a webhook receiver that is down slow a decision? (SPEC section 17)

Run: `python -m tests.bench.bench_webhooks [--samples 10] [--rounds 6] [--drafts 60]`.

Three workspaces made alike by `feedbackd init`, each with `--drafts` queued drafts of one agent
recorded by `run --once`: one with no webhook, one whose webhook is down (nothing listens on its
port: each attempt is refused), one whose webhook hangs (a socket that takes the connection and
never answers, so every attempt runs to its 10 s timeout). Then, for each of `--rounds` rounds,
each workspace in turn gets its daemon started and `--samples` approvals, one at a time: the
draft moved from queue/ to approved/, and the time until the daemon's commit moves the branch
(end to end, as tests/bench/bench_daemon.py measures it). Only one daemon runs at a time, and
each round takes the workspaces in the other order, so that a busy machine's drift falls on
all three alike.
Prints the medians and the ratios to the workspace without a webhook; the target is a ratio of
at most 1.10 for both, and the exit status is 1 when one is missed.
"""

from __future__ import annotations

import argparse
import base64
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tests.bench.bench_daemon import (
    RunningDaemon,
    bench_env,
    feedbackd,
    git,
    read_branch,
    status_mark,
    wait_for,
    write_json,
)
from tests.bench.workfolder import in_work_folder

AGENT = "writer"
TARGET_RATIO = 1.10
SECRET = "whsec_" + base64.b64encode(bytes(range(32))).decode()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def build(root: Path, drafts: int, url: str | None) -> None:
    """A workspace with `drafts` recorded drafts and, if `url`, one webhook to it."""
    root.mkdir(parents=True)
    command = [sys.executable, "-m", "feedbackd", "-q", "init", str(root)]
    subprocess.run(command, check=True, env=bench_env(root), capture_output=True)
    git(root, "config", "user.name", "Ada Curator")
    git(root, "config", "user.email", "ada@example.org")
    git(root, "config", "gc.auto", "0")  # no background repacking in the middle of a sample
    config = "daemon:\n  settle_ms: 0\n"
    if url is not None:
        (root / "hook.secret").write_text(SECRET + "\n")
        config += f"events:\n  webhooks:\n    - url: {url}\n      secret_file: hook.secret\n"
    (root / "feedbackd.yaml").write_text(config)
    queue = root / "_data" / "agents" / AGENT / "queue"
    queue.mkdir(parents=True)
    for n in range(drafts):
        write_json(queue / f"qi-{n}.json", {"contentData": {"title": f"Draft {n}"}})
    feedbackd(root, "run", "--once")


def approve(root: Path, n: int) -> float:
    """Move draft n to approved/; seconds until the daemon's commit is on the branch."""
    source = root / "_data" / "agents" / AGENT / "queue" / f"qi-{n}.json"
    target = source.parent.parent / "approved" / source.name
    target.parent.mkdir(exist_ok=True)
    before, mark = read_branch(root), status_mark(root)
    started = time.perf_counter()
    os.rename(source, target)
    wait_for(lambda: read_branch(root) != before, f"the commit of qi-{n}")
    elapsed = time.perf_counter() - started
    wait_for(lambda: status_mark(root) != mark, "the end of the pass")
    return elapsed


def measure(root: Path, first: int, samples: int) -> list[float]:
    (root.parent / "notify.sock").unlink(missing_ok=True)  # the last round's daemon's
    daemon = RunningDaemon(root)
    try:
        return [approve(root, first + k) for k in range(samples)]
    finally:
        daemon.stop()


def run(args: argparse.Namespace, work: Path) -> bool:
    hung = socket.socket()  # takes connections into its backlog, never answers
    hung.bind(("127.0.0.1", 0))
    hung.listen(64)
    sites = {
        "no webhook": (work / "none" / "ws", None),
        "receiver down": (work / "down" / "ws", f"http://127.0.0.1:{free_port()}/hook"),
        "receiver hangs": (work / "hung" / "ws", f"http://127.0.0.1:{hung.getsockname()[1]}/h"),
    }
    for root, url in sites.values():
        build(root, args.drafts, url)
    times: dict[str, list[float]] = {name: [] for name in sites}
    for round_ in range(args.rounds):
        # Each round in the other order (ABC, CBA, ...): a busy machine's drift falls on all.
        order = list(sites) if round_ % 2 == 0 else list(reversed(sites))
        for name in order:
            times[name] += measure(sites[name][0], round_ * args.samples, args.samples)
    hung.close()
    return report(times)


def report(times: dict[str, list[float]]) -> bool:
    base = statistics.median(times["no webhook"])
    met = True
    print(f"approve → commit, median of {len(times['no webhook'])} each (end to end):")
    for name, values in times.items():
        median = statistics.median(values)
        ratio = median / base
        ok = ratio <= TARGET_RATIO
        met &= ok or name == "no webhook"
        verdict = "" if name == "no webhook" else f"  ×{ratio:.2f} {'met' if ok else 'MISSED'}"
        print(f"  {name:15} {median * 1000:7.1f} ms{verdict}")
    print(f"target: within {TARGET_RATIO:.2f}× of no webhook")
    return met


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--drafts", type=int, default=0, help="default: samples × rounds")
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args(argv)
    args.drafts = args.drafts or args.samples * args.rounds
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    return in_work_folder(lambda work: run(args, work), args.keep, "feedbackd-bench-webhooks-")


if __name__ == "__main__":
    sys.exit(main())
