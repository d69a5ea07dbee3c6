"""Benchmark of the MCP server over standard input and output: `lessons_for` among 10,000 lessons.

Run: `python -m tests.bench.bench_mcp [--entries 10000] [--calls 100] [--starts 5] [--sdk1 PY]`.

The workspace of bench_prompt_for (one agent with `--entries` lessons, each from its own item, and
tasks of some 150 words drawn from the items). `feedbackd mcp` is started as an MCP host starts it
and spoken to by the SDK's own client over the process's standard input and output:

- start-up: from starting the process to the server's first answer (the client's handshake),
  `--starts` times, each a new process; the target is on the median;
- the first `lessons_for` call (it reads every item and builds the index);
- `--calls` calls after it, each with another task, timed from the client's call to its answer
  (the JSON-RPC round trip included): p50 and p95.

Beside them, in the same run, the floors of a start-up: `python -c pass` (start to exit), and a
server of one tool on the SDK alone (`MCPServer`), started and timed as feedbackd's, each start
of it right after one of feedbackd's; with `--sdk1 PYTHON` (an interpreter where `mcp>=1.30,<2`
is installed), the same server on the SDK's 1.x line (`FastMCP`) too. Each start's processor
time is shown beside it: a machine busy with other work slows it much less than the wall clock.
Each answer's last example must be the task's own lesson. Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
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
    anew (a tenth of a second of processor time), which is no start-up of an installed server."""
    package = Path(feedbackd.__file__).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)


def server(root: Path) -> StdioServerParameters:
    argv = ["-m", "feedbackd", "-w", str(root), "mcp"]
    return StdioServerParameters(command=sys.executable, args=argv, env=dict(os.environ))


ONE_TOOL = """
from mcp.server.{module} import {name}
server = {name}("one")
@server.tool()
def echo(text: str) -> str:
    return text
server.run()
"""


def one_tool(python: str, line: int) -> StdioServerParameters:
    """A server of one tool on the SDK alone: on 2.x its MCPServer, on 1.x its FastMCP."""
    module, name = ("mcpserver", "MCPServer") if line >= 2 else ("fastmcp", "FastMCP")
    code = ONE_TOOL.format(module=module, name=name)
    return StdioServerParameters(command=python, args=["-c", code])


async def start_ups(
    servers: dict[str, StdioServerParameters], count: int
) -> dict[str, list[tuple[float, float]]]:
    """Each server started `count` times, in turn: the time from starting the process to its
    first answer (the handshake), and the processor time the process took (to its exit, as the
    client closes: what a busy machine slows the least)."""
    starts: dict[str, list[tuple[float, float]]] = {label: [] for label in servers}
    for _ in range(count):
        for label, started_server in servers.items():
            before = _children_cpu()
            started = time.perf_counter()
            # The handshake of protocol versions a host speaks today (initialize), as the start.
            async with Client(started_server, mode="legacy"):
                answered = time.perf_counter() - started
            starts[label].append((answered, _children_cpu() - before))
    return starts


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def bare_starts(count: int) -> list[float]:
    """`python -c pass`, start to exit."""
    times = []
    for _ in range(count):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - started)
    return times


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
    servers = {"feedbackd mcp": server(root), "one tool, SDK 2.x": one_tool(sys.executable, 2)}
    if args.sdk1:
        servers["one tool, SDK 1.x (--sdk1)"] = one_tool(str(args.sdk1), 1)
    starts = anyio.run(start_ups, servers, args.starts)
    bare = bare_starts(args.starts)
    first, after = anyio.run(calls, root, tasks[: args.calls + 1])
    p50, p95 = percentile(after, 0.5), percentile(after, 0.95)
    start = statistics.median(wall for wall, _ in starts["feedbackd mcp"])
    print(f"feedbackd mcp over stdio, lessons_for among {args.entries:,} lessons")
    print(f"start-up, median of {args.starts}: to the first answer, and processor time of a start")
    for label, timed in starts.items():
        wall, cpu = (statistics.median(times) for times in zip(*timed, strict=True))
        print(f"{'  ' + label:44}{ms(wall)}{ms(cpu)}")
    print(f"{'  python -c pass':44}{ms(statistics.median(bare))}")
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
    parser.add_argument("--sdk1", type=Path, help="a python with the SDK's 1.x line, to compare")
    args = parser.parse_args(argv)
    return in_work_folder(lambda work: run(work, args), args.keep, "feedbackd-bench-mcp-")


if __name__ == "__main__":
    sys.exit(main())
