"""Benchmark of the MCP server over standard input and output: `lessons_for` among 10,000 lessons.

Run: `python -m tests.bench.bench_mcp [--entries 10000] [--calls 100] [--starts 5]`.

The workspace of bench_prompt_for (one agent with `--entries` lessons, each from its own item, and
tasks of some 150 words drawn from the items). `feedbackd mcp` is started as an MCP host starts it
and spoken to by the SDK's own client over the process's standard input and output:

- start-up: from starting the process to the server's first answer (the client's handshake),
  `--starts` times, each a new process; the target is on the median;
- the first `lessons_for` call (it reads every item and builds the index);
- `--calls` calls after it, each with another task, timed from the client's call to its answer
  (the JSON-RPC round trip included): p50 and p95.

Beside them, in the same run, the floors of a start-up: `python -c pass`, and a process that only
imports the SDK's server (`import mcp.server.mcpserver`), start to exit. Each answer's last example
must be the task's own lesson. Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

import feedbackd
from tests.bench.bench_prompt_for import AGENT, prepare
from tests.bench.workfolder import in_work_folder

P50_S, P95_S, START_S = 0.030, 0.100, 1.0


def compiled() -> None:
    """feedbackd's bytecode written beforehand, as pip and `make` write it at install: where
    PYTHONDONTWRITEBYTECODE is set and none was written, each start would compile the package
    anew (half a second of processor time), which is no start-up of an installed server."""
    package = Path(feedbackd.__file__).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)


def server(root: Path) -> StdioServerParameters:
    argv = ["-m", "feedbackd", "-w", str(root), "mcp"]
    return StdioServerParameters(command=sys.executable, args=argv, env=dict(os.environ))


async def start_ups(root: Path, count: int) -> list[float]:
    """Process start to the server's first answer (the handshake), each a new process."""
    times = []
    for _ in range(count):
        started = time.perf_counter()
        # The handshake of protocol versions a host speaks today (initialize), as the start.
        async with Client(server(root), mode="legacy"):
            times.append(time.perf_counter() - started)
    return times


def floors(count: int) -> tuple[list[float], list[float]]:
    """`python -c pass` and a process importing the SDK's server, start to exit."""
    bare, sdk = [], []
    for _ in range(count):
        for code, times in (("pass", bare), ("import mcp.server.mcpserver", sdk)):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            times.append(time.perf_counter() - started)
    return bare, sdk


async def calls(root: Path, tasks: list[tuple[int, str]]) -> tuple[float, list[float]]:
    """The first lessons_for call, and each one after it."""
    times = []
    async with Client(server(root), mode="legacy") as client:
        for n, task in tasks:
            started = time.perf_counter()
            result = await client.call_tool("lessons_for", {"agent": AGENT, "task": task})
            times.append(time.perf_counter() - started)
            _check(root, n, result.structured_content or {})
    return times[0], times[1:]


def _check(root: Path, n: int, answer: dict[str, object]) -> None:
    examples = answer.get("examples")
    if not isinstance(examples, list) or not examples:
        raise SystemExit(f"no examples for the task drawn from lesson {n}: {answer}")
    if examples[-1]["id"] != f"fb-1775635{n:06d}-k3j9x2":
        raise SystemExit(f"the task drawn from lesson {n} did not get it last: {examples[-1]}")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def percentile(times: list[float], share: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def run(work: Path, args: argparse.Namespace) -> bool:
    rng = random.Random(27)
    root = work / "ws"
    tasks = prepare(root, args.entries, rng)
    while len(tasks) < args.calls + 1:  # the 64 tasks again, in another order
        tasks += rng.sample(tasks[:64], 64)
    compiled()
    starts = anyio.run(start_ups, root, args.starts)
    bare, sdk = floors(args.starts)
    first, after = anyio.run(calls, root, tasks[: args.calls + 1])
    p50, p95, start = percentile(after, 0.5), percentile(after, 0.95), statistics.median(starts)
    print(f"feedbackd mcp over stdio, lessons_for among {args.entries:,} lessons")
    print(f"{'start-up to the first answer, median of ' + str(args.starts):44}{ms(start)}")
    print(f"{'  floor: python -c pass':44}{ms(statistics.median(bare))}")
    print(f"{'  floor: import mcp.server.mcpserver':44}{ms(statistics.median(sdk))}")
    print(f"{'first lessons_for (reads items, builds index)':44}{ms(first)}")
    print(f"{f'{len(after)} calls after the first: p50':44}{ms(p50)}")
    print(f"{'                              p95':44}{ms(p95)}")
    print(f"{'                              max':44}{ms(max(after))}")
    met = p50 <= P50_S and p95 <= P95_S and start <= START_S
    targets = f"p50 ≤ {P50_S * 1000:.0f} ms, p95 ≤ {P95_S * 1000:.0f} ms, start-up ≤ {START_S:g} s"
    print(f"targets: {targets}: {'met' if met else 'MISSED'}")
    return met


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.bench_mcp")
    parser.add_argument("--entries", type=int, default=10_000, help="lessons in feedback.json")
    parser.add_argument("--calls", type=int, default=100, help="timed calls after the first")
    parser.add_argument("--starts", type=int, default=5, help="processes started to time")
    parser.add_argument("--keep", type=Path, help="build the workspace here and keep it")
    args = parser.parse_args(argv)
    return in_work_folder(lambda work: run(work, args), args.keep, "feedbackd-bench-mcp-")


if __name__ == "__main__":
    sys.exit(main())
