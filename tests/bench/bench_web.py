"""`feedbackd serve` under load, against `GET /healthz` (the cost of an answer at all) measured
in the same run.

    python -m tests.bench.bench_web [--ratings 1000000] [--repeat 50]

Figures: `GET /api/reputation/{id}` over a million stored ratings (index warm), 400 requests from
16 concurrent clients, the agent page with 200 feedback entries and 100 queued drafts, the idle
server's CPU and memory, and `GET /healthz` while 1,100 slow clients trickle request heads they
never finish. Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from feedbackd.app.workspace.init import init_workspace
from feedbackd.core.workspacepaths import Workspace
from tests.bench import bench_ratings
from tests.web_kit import Server, SlowClients

PAGE_AGENT = "writer"
SLOW_CLIENTS = 1100
UNDER_SLOW_CLIENTS = f"/healthz, {SLOW_CLIENTS:,} slow clients"
TARGETS = {
    "reputation": 0.020,
    "slowest of 400": 1.0,
    "agent page": 0.300,
    UNDER_SLOW_CLIENTS: 0.100,
}
CPU_TARGET_PCT, RSS_TARGET_MB = 0.5, 120


def timed(call: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


def fill_page_agent(root: Path) -> None:
    """200 feedback entries and 100 queued drafts, as a busy agent has them."""
    agent = Workspace(root).agent(PAGE_AGENT)
    entries = [
        {"id": f"fb-{1775635200000 + n}-bench{n % 10}", "type": "correction",
         "queueItemId": f"qi-{n}", "field": "title", "original": f"Draft title {n}",
         "corrected": f"Better title {n}", "createdAt": "2026-04-08T10:00:00.000Z"}
        for n in range(200)
    ]  # fmt: skip
    agent.feedback.parent.mkdir(parents=True, exist_ok=True)
    agent.feedback.write_text(json.dumps(entries, indent=2) + "\n")
    agent.queue.mkdir(parents=True, exist_ok=True)
    for n in range(100):
        draft = {"contentData": {"title": f"Post {n}", "excerpt": "An excerpt. " * 8,
                                 "body": "A paragraph of the body. " * 60}}  # fmt: skip
        (agent.queue / f"qi-{1000 + n}.json").write_text(json.dumps(draft, indent=2) + "\n")


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def report(name: str, times: list[float], baseline: float) -> bool:
    median = statistics.median(times)
    target = TARGETS.get(name)
    verdict = "" if target is None else (" ok" if median <= target else f" MISSED {target:g}s")
    print(f"{name:28}{median * 1000:9.1f} ms{max(times) * 1000:9.1f} ms"
          f"{median / baseline:8.1f}×{verdict}")  # fmt: skip
    return target is None or median <= target


def concurrent_load(server: Server, provider: str) -> list[float]:
    paths = ["/api/agents", f"/api/reputation/{provider}", f"/api/cms/agents/{PAGE_AGENT}/feedback"]

    def one(number: int) -> float:
        start = time.perf_counter()
        answer = server.get(paths[number % len(paths)])
        if answer.status != 200:
            raise SystemExit(f"request {number} answered {answer.status}: {answer.text[:200]}")
        return time.perf_counter() - start

    with ThreadPoolExecutor(max_workers=16) as clients:
        return list(clients.map(one, range(400)))


def idle_figures(server: Server, seconds: float = 10.0) -> tuple[float, float]:
    pid = server.process.pid
    ticks, start = cpu_ticks(pid), time.monotonic()
    time.sleep(seconds)
    used = (cpu_ticks(pid) - ticks) / os.sysconf("SC_CLK_TCK")
    return 100 * used / (time.monotonic() - start), rss_mb(pid)


def under_slow_clients(server: Server, repeat: int) -> list[float]:
    """`GET /healthz` times while slow clients hold connections (each evicted in turn by the
    connection cap, or closed by the head timeout); a round every 0.4 s, so the timeout is not
    reached within 20 rounds."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # this process holds them all
    slow = SlowClients(server.port)
    try:
        slow.open(SLOW_CLIENTS)
        times = []
        for _ in range(min(repeat, 20)):
            slow.trickle()
            times.extend(timed(lambda: server.get("/healthz"), 1))
            slow.notice_closes(wait=0.4)
        print(f"  ({len(slow.still_open())} slow clients still open at the end)")
        return times
    finally:
        slow.close()


def measure(server: Server, repeat: int) -> bool:
    provider = bench_ratings.PROVIDER
    server.get(f"/api/reputation/{provider}")  # builds the index: the figures are warm
    baseline_times = timed(lambda: server.get("/healthz"), repeat)
    baseline = statistics.median(baseline_times)
    print(f"{'request':28}{'median':>12}{'max':>12}{'ratio':>9}")
    ok = report("GET /healthz (baseline)", baseline_times, baseline)
    ok &= report("reputation", timed(lambda: server.get(f"/api/reputation/{provider}"), repeat),
                 baseline)  # fmt: skip
    load = concurrent_load(server, provider)
    print(f"{'400 requests, 16 clients':28}{statistics.median(load) * 1000:9.1f} ms"
          f"{max(load) * 1000:9.1f} ms")  # fmt: skip
    ok &= report("slowest of 400", [max(load)], baseline)
    ok &= report("agent page", timed(lambda: server.get(f"/agents/{PAGE_AGENT}"), 10), baseline)
    ok &= report(UNDER_SLOW_CLIENTS, under_slow_clients(server, repeat), baseline)
    cpu, rss = idle_figures(server)
    idle_ok = cpu <= CPU_TARGET_PCT and rss <= RSS_TARGET_MB
    print(f"idle: CPU {cpu:.2f} % (target ≤ {CPU_TARGET_PCT} %), RSS {rss:.0f} MB"
          f" (target ≤ {RSS_TARGET_MB} MB){'' if idle_ok else ' MISSED'}")  # fmt: skip
    return ok and idle_ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--ratings", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=50)
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="feedbackd-bench-") as folder:
        root = Path(folder) / "ws"
        init_workspace(root)
        bench_ratings.generate(Workspace(root), options.ratings)
        fill_page_agent(root)
        print(f"{options.ratings:,} ratings; agent page: 200 entries, 100 queued drafts")
        server = Server(root)
        try:
            ok = measure(server, options.repeat)
        finally:
            server.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
