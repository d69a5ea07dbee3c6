"""Benchmark of the running daemon: approve-to-commit latency against the bare git floor.

Run: `python -m tests.bench.bench_daemon [--files 2000 [22000 100000 ...]] [--agents 200]
[--drafts 100] [--decided 10] [--samples 30] [--rounds 1] [--cold 3] [--burst 400] [--idle 10]
[--chart PNG] [--keep DIR]`.

The site, for each `--files` size: a workspace made by `feedbackd init` that gets one commit
(written by `git fast-import`) of `--agents` agents, each with `--drafts` queued drafts and
`--decided` more, and other files of the site up to `--files` tracked files in all (agents as
many as fit, at most 200, unless given). A `run --once` records the drafts as git has them (as
on a fresh clone); then `--decided` drafts of each agent are edited and approved while no daemon
runs and a second `run --once` records them (a catch-up): a history of agents × decided
decision commits, each diffed against its draft's commit. `feedbackd run` is started on it,
then, in the same run and on the same repository:
- single approvals of the first agent's queued drafts, one at a time: a curator's edit of each
  draft in queue/ first (a decision waits until its file has not changed for
  daemon.settle_ms), then the moves queue/ → approved/; the time from a move until the daemon's
  commit is on the branch;
- the floor: `git add <file>` + `git commit -m x` of a one-line change, run as subprocesses, the
  same number of times, each right after an approval (so both see the same repository and
  machine); `--rounds` groups of `--samples` each, a median and a ratio per group;
- `--cold` approvals more, each after the daemon has been left alone for IDLE_WHILE_S;
- a burst of `--burst` approvals of the other agents' drafts moved at once: the time until all
  are committed, and a check of the history that each was committed alone (one Feedback-Item
  per approve commit, all distinct), and its time per decision against the floor's median
  (target: twice the floor's rate);
- the idle daemon afterwards: CPU over `--idle` seconds (/proc utime+stime, children included)
  and its resident memory.
Prints medians, p90, ratios and whether each target is met (approve → commit at most the
floor's median, 0.3× of it from 100,000 files on); exits 1 when one is missed. With several
`--files` sizes, each gets a workspace and a daemon of its own, and `--chart` draws the medians
of both against the size (PNG through chromium, else SVG).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.bench.bench_startup import approve_while_stopped, build_origin
from tests.bench.bench_startup import bench_env as startup_env
from tests.bench.chart import Chart, Series, write_chart
from tests.bench.workfolder import in_work_folder

MAX_AGENTS = 200  # the agents of a site, unless --agents says: as many as fit, at most this
POLL_S = 0.001  # how often the branch is looked at while a commit is awaited
TIMEOUT_S = 120.0
# Approvals "after a pause" come this long after the last change (the watcher once looked more
# often for ten seconds after each change; `--cold` keeps measuring a curator back from a pause).
IDLE_WHILE_S = 10.0
SETTLE_S = 2.0  # daemon.settle_ms at its default
TARGET_RATIO, TARGET_CPU_PCT, TARGET_RSS_MB = 1.0, 1.0, 150.0
TARGET_ONCE_S = 0.5  # an idle `run --once`
# At 100,000 files the floor's `git add` and `git commit` each read and write a 10 MB index.
BIG_SITE_FILES, TARGET_RATIO_BIG = 100_000, 0.3
# A burst's decisions committed at twice the floor's rate: each in half a floor's time.
TARGET_BURST_RATIO = 0.5


@dataclass(frozen=True)
class Site:
    """The shape of one benchmark site: `agents` agents (writer-000, …) with `decided` decided
    and `drafts` queued drafts each, among `files` tracked files. Draft n belongs to agent
    n mod agents (as bench_startup lays them out); each agent's first `decided` are decided."""

    files: int
    agents: int
    drafts: int
    decided: int

    def queued(self, agent: int, number: int) -> tuple[str, str]:
        """(agent, item) of the agent's `number`-th draft still queued after the catch-up."""
        n = self.agents * (self.decided + number) + agent
        return f"writer-{agent:03d}", f"qi-{n:06d}"

    def decided_items(self) -> list[tuple[str, str]]:
        """(agent, item) of the drafts the catch-up decides: each agent's first ones."""
        return [
            (f"writer-{n % self.agents:03d}", f"qi-{n:06d}")
            for n in range(self.agents * self.decided)
        ]

    def singles(self, count: int) -> list[tuple[str, str]]:
        """The first agent's queued drafts, for the approvals one at a time."""
        return [self.queued(0, number) for number in range(count)]

    def burst(self, count: int, singles: int) -> list[tuple[str, str]]:
        """Drafts for a burst, round the other agents (the first one's after its singles
        when it is alone)."""
        if self.agents == 1:
            return [self.queued(0, singles + number) for number in range(count)]
        others = self.agents - 1
        return [self.queued(1 + n % others, n // others) for n in range(count)]


@dataclass
class Results:
    latency_s: list[float] = field(default_factory=list)
    rounds: list[tuple[float, float]] = field(default_factory=list)  # (median, floor) a round
    cold_s: list[float] = field(default_factory=list)  # approvals after a quiet while
    floor_s: list[float] = field(default_factory=list)
    burst_s: float = 0.0
    burst_problems: list[str] = field(default_factory=list)
    idle_cpu_pct: float = 0.0
    rss_mb: float = 0.0
    peak_rss_mb: float = 0.0
    once_s: list[float] = field(default_factory=list)  # idle `run --once`
    help_s: list[float] = field(default_factory=list)  # `feedbackd --help`, its floor


# --- the workspace ---------------------------------------------------------------------------
def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True, env=bench_env(root)
    )
    return done.stdout


def bench_env(root: Path) -> dict[str, str]:
    """Git and feedbackd see only this benchmark's configuration (HOME is the work folder), and
    feedbackd keeps its bytecode as an installed one has it (see bench_startup)."""
    return startup_env(root.parent)


def site_of(files: int, args: argparse.Namespace) -> Site:
    each = args.drafts + args.decided
    agents = args.agents or max(1, min(MAX_AGENTS, files // each))
    if agents * each > files:
        raise SystemExit(f"{agents} agents of {each} drafts do not fit in {files:,} files")
    return Site(files, agents, args.drafts, args.decided)


def build_workspace(root: Path, site: Site) -> None:
    """The site (see the module's docstring): drafts committed, recorded, some decided."""
    shape = argparse.Namespace(
        files=site.files - 1, drafts=site.agents * (site.drafts + site.decided), agents=site.agents
    )
    build_origin(root, shape)
    git(root, "config", "user.name", "Ada Curator")
    git(root, "config", "user.email", "ada@example.org")
    git(root, "config", "gc.auto", "0")  # no background repacking in the middle of a sample
    write_json(root / "docs" / "floor.json", {"n": 0})
    git(root, "add", "docs/floor.json")
    git(root, "commit", "-q", "-m", "the floor's file")
    feedbackd(root, "run", "--once")  # the drafts recorded as git has them
    decided = site.decided_items()
    approve_while_stopped(root, decided)
    print(f"catch-up of {len(decided):,} decisions", flush=True)
    started = time.perf_counter()
    feedbackd(root, "run", "--once")
    print(f"recorded in {time.perf_counter() - started:.1f} s", flush=True)


def write_json(path: Path, doc: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def queue(root: Path, agent: str, item: str) -> Path:
    return root / "_data" / "agents" / agent / "queue" / f"{item}.json"


def feedbackd(root: Path, *args: str) -> None:
    command = [sys.executable, "-m", "feedbackd", "-q", "-w", str(root), *args]
    subprocess.run(command, cwd=root, check=True, env=bench_env(root), capture_output=True)


# --- the daemon ------------------------------------------------------------------------------
class RunningDaemon:
    """`feedbackd -w ROOT run` as a child, started and ready (it says READY=1 like to systemd)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.socket_path = root.parent / "notify.sock"
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.listener.bind(str(self.socket_path))
        env = {**bench_env(root), "NOTIFY_SOCKET": str(self.socket_path)}
        command = [sys.executable, "-m", "feedbackd", "-q", "-w", str(root), "run"]
        self.log_path = root.parent / "daemon.log"
        with self.log_path.open("wb") as log:  # a file, not a pipe: a full pipe would stall it
            self.process = subprocess.Popen(command, env=env, stderr=log)
        self._wait_ready()

    def _wait_ready(self) -> None:
        self.listener.settimeout(TIMEOUT_S)
        while True:
            message = self.listener.recv(4096).decode()
            if "READY=1" in message.splitlines():
                break
        # Keep reading like systemd does: a full socket queue would block the daemon's sends.
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        self.listener.settimeout(None)
        with contextlib.suppress(OSError):
            while self.listener.recv(4096):
                pass

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> str:
        self.process.terminate()
        self.process.wait(timeout=30)
        self.listener.close()
        return self.log_path.read_text(errors="replace")


def branch_file(root: Path) -> Path:
    return root / ".git" / "refs" / "heads" / "main"


def read_branch(root: Path) -> str:
    try:
        return branch_file(root).read_text().strip()
    except FileNotFoundError:  # packed, or being replaced: ask git
        return git(root, "rev-parse", "HEAD").strip()


def status_mark(root: Path) -> tuple[int, int]:
    """Changes each time the daemon finishes a pass (it rewrites its status file)."""
    try:
        info = (root / ".feedbackd" / "status.json").stat()
    except FileNotFoundError:
        return (0, 0)
    return (info.st_ino, info.st_mtime_ns)


def wait_for(condition: Callable[[], bool], what: str, poll_s: float = POLL_S) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {what}")
        time.sleep(poll_s)


def wait_until_quiet(root: Path, quiet_s: float = 1.0) -> None:
    """Wait until the daemon has finished its last pass: no new pass for `quiet_s`."""
    mark, since = status_mark(root), time.monotonic()

    def quiet() -> bool:
        nonlocal mark, since
        if status_mark(root) != mark:
            mark, since = status_mark(root), time.monotonic()
        return time.monotonic() - since >= quiet_s

    wait_for(quiet, "the daemon to go quiet", poll_s=0.05)


# --- measurements ----------------------------------------------------------------------------
def edit_drafts(root: Path, items: list[tuple[str, str]]) -> None:
    """A curator's edits of the drafts' titles, in queue/, well before they are moved: a
    decision waits until its file has not changed for daemon.settle_ms (2 s by default)."""
    for agent, item in items:
        path = queue(root, agent, item)
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["contentData"]["title"] = f"Edited: {doc['contentData']['title']}"
        write_json(path, doc)
    time.sleep(SETTLE_S + 0.5)  # the edits are old news when the moves start


def approve_once(root: Path, agent: str, item: str) -> float:
    """Move an edited draft to approved/; seconds until the daemon's commit is in."""
    source = queue(root, agent, item)
    target = source.parent.parent / "approved" / source.name
    target.parent.mkdir(exist_ok=True)
    before, mark = read_branch(root), status_mark(root)
    started = time.perf_counter()
    os.rename(source, target)
    wait_for(lambda: read_branch(root) != before, f"the commit of {item}")
    elapsed = time.perf_counter() - started
    wait_for(lambda: status_mark(root) != mark, "the end of the pass")  # its index update too
    return elapsed


def floor_once(root: Path, number: int) -> float:
    """A similar change committed by hand: `git add` + `git commit`, as subprocesses."""
    path = root / "docs" / "floor.json"
    write_json(path, {"n": number + 1})
    env = bench_env(root)
    while True:
        # (the daemon may still hold git's index lock for the pass that followed an approval)
        wait_for(lambda: not (root / ".git" / "index.lock").exists(), "the index lock")
        started = time.perf_counter()
        added = subprocess.run(["git", "add", "docs/floor.json"], cwd=root, env=env, check=False)
        if added.returncode == 0:
            subprocess.run(["git", "commit", "-q", "-m", "x"], cwd=root, check=True, env=env)
            return time.perf_counter() - started


def measure_singles(
    root: Path, items: list[tuple[str, str]], rounds: int, results: Results
) -> None:
    """Approvals one at a time, each followed by the floor; a median of each in each round."""
    edit_drafts(root, items)
    per_round = len(items) // rounds
    for number in range(rounds):
        latency: list[float] = []
        floor: list[float] = []
        for agent, item in items[number * per_round : (number + 1) * per_round]:
            latency.append(approve_once(root, agent, item))
            floor.append(floor_once(root, len(results.floor_s) + len(floor)))
        results.latency_s += latency
        results.floor_s += floor
        results.rounds.append((statistics.median(latency), statistics.median(floor)))


def measure_cold(root: Path, items: list[tuple[str, str]], results: Results) -> None:
    """Approvals each after IDLE_WHILE_S of nothing happening, as after a curator's pause."""
    edit_drafts(root, items)
    for agent, item in items:
        wait_until_quiet(root)
        time.sleep(IDLE_WHILE_S + 0.5)  # the measurement itself: a daemon left alone
        results.cold_s.append(approve_once(root, agent, item))


def measure_burst(root: Path, items: list[tuple[str, str]], results: Results) -> None:
    """Move the drafts to approved/ at once; time until the branch holds one commit for each."""
    burst = len(items)
    base = read_branch(root)
    reflog = root / ".git" / "logs" / "HEAD"
    offset = reflog.stat().st_size
    moves = []
    for agent, item in items:
        source = queue(root, agent, item)
        target = source.parent.parent / "approved" / source.name
        target.parent.mkdir(exist_ok=True)
        moves.append((source, target))
    started = time.perf_counter()
    for source, target in moves:
        os.rename(source, target)

    def all_in() -> bool:
        with reflog.open("rb") as handle:
            handle.seek(offset)
            return handle.read().count(b": approve(") >= burst

    wait_for(all_in, f"{burst} approve commits", poll_s=0.01)
    results.burst_s = time.perf_counter() - started
    results.burst_problems = check_burst(root, base, [item for _, item in items])


def check_burst(root: Path, base: str, wanted: list[str]) -> list[str]:
    """Each approval in a commit of its own: one Feedback-Item per approve commit, all distinct."""
    text = git(root, "log", "--format=%B%x00", f"{base}..HEAD")
    items: list[str] = []
    problems = []
    for message in filter(str.strip, text.split("\0")):
        lines = message.strip().splitlines()
        if "Feedback-Event: approve" not in lines:
            continue
        found = [line.split(": ", 1)[1] for line in lines if line.startswith("Feedback-Item: ")]
        if len(found) != 1:
            problems.append(f"an approve commit names {len(found)} items: {lines[0]}")
        items.extend(found)
    expected = set(wanted)
    if len(items) != len(set(items)):
        problems.append(f"{len(items) - len(set(items))} items committed more than once")
    if set(items) != expected:
        missing = len(expected - set(items))
        problems.append(f"{missing} of {len(wanted)} approvals have no commit")
    return problems


def measure_idle(pid: int, seconds: float, results: Results) -> None:
    ticks = os.sysconf("SC_CLK_TCK")
    before, started = cpu_ticks(pid), time.monotonic()
    time.sleep(seconds)  # the measurement itself: the daemon is left alone for this long
    spent = (cpu_ticks(pid) - before) / ticks
    results.idle_cpu_pct = 100 * spent / (time.monotonic() - started)
    status = Path(f"/proc/{pid}/status").read_text()
    results.rss_mb = proc_kb(status, "VmRSS") / 1024
    results.peak_rss_mb = proc_kb(status, "VmHWM") / 1024


def cpu_ticks(pid: int) -> int:
    """utime + stime + cutime + cstime: the daemon and the git commands it waited for."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15])


def proc_kb(status: str, key: str) -> int:
    for line in status.splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


# --- report ----------------------------------------------------------------------------------
def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


Row = tuple[str, str, str, bool | None]  # measure, value, target, met (None: no target)


def target_ratio(files: int) -> float:
    """Where the index is big, git's floor pays for it on every commit and feedbackd does not."""
    return TARGET_RATIO_BIG if files >= BIG_SITE_FILES else TARGET_RATIO


def burst_rows(results: Results, args: argparse.Namespace, floor: float) -> list[Row]:
    if not args.burst:
        return []
    burst = f"{results.burst_s:.1f} s ({ms(results.burst_s / args.burst)} per decision)"
    burst_ratio = results.burst_s / args.burst / floor
    return [
        (
            f"burst of {args.burst} approvals",
            burst,
            "1 decision per commit",
            not results.burst_problems,
        ),
        (
            "burst: each / floor",
            f"{burst_ratio:.2f}×",
            f"≤ {TARGET_BURST_RATIO:g}×",
            burst_ratio <= TARGET_BURST_RATIO,
        ),
    ]


def rows(results: Results, args: argparse.Namespace, files: int) -> list[Row]:
    latency, floor = statistics.median(results.latency_s), statistics.median(results.floor_s)
    ratio, target = latency / floor, target_ratio(files)
    cpu, rss = results.idle_cpu_pct, results.rss_mb
    cold = [
        (
            f"the same after {IDLE_WHILE_S:g} s idle",
            f"{ms(statistics.median(results.cold_s))}, max {ms(max(results.cold_s))}",
            "",
            None,
        )
        for _ in [1]
        if results.cold_s  # (none with --cold 0)
    ]
    ratios = sorted(median / floor_median for median, floor_median in results.rounds)
    by_round = [
        ("  each round's medians", f"{ratios[0]:.2f}–{ratios[-1]:.2f}× ({len(ratios)} rounds)",
         "", None)
        for _ in [1]
        if len(ratios) > 1
    ]  # fmt: skip
    return [
        ("approve → commit (daemon)", f"{ms(latency)}, p90 {ms(p90(results.latency_s))}", "", None),
        *cold,
        ("git add + commit (floor)", f"{ms(floor)}, p90 {ms(p90(results.floor_s))}", "", None),
        ("daemon / floor (medians)", f"{ratio:.2f}×", f"≤ {target:g}×", ratio <= target),
        *by_round,
        *burst_rows(results, args, floor),
        (
            f"idle CPU over {args.idle:g} s",
            f"{cpu:.2f} %",
            f"< {TARGET_CPU_PCT:g} %",
            cpu < TARGET_CPU_PCT,
        ),
        (
            "RSS (peak)",
            f"{rss:.0f} MB ({results.peak_rss_mb:.0f} MB)",
            f"< {TARGET_RSS_MB:g} MB",
            rss < TARGET_RSS_MB,
        ),
        *once_rows(results),
    ]


def once_rows(results: Results) -> list[Row]:
    if not results.once_s:
        return []
    once, helped = statistics.median(results.once_s), statistics.median(results.help_s)
    return [
        ("feedbackd --help (floor)", f"{helped:.2f} s", "", None),
        ("run --once, nothing to do", f"{once:.2f} s ({once / helped:.1f}× --help)",
         f"≤ {TARGET_ONCE_S:g} s", once <= TARGET_ONCE_S),
    ]  # fmt: skip


def report(results: Results, args: argparse.Namespace, site: Site) -> bool:
    """Print the table; True when every target is met."""
    table = rows(results, args, site.files)
    print(f"\nfeedbackd daemon: {site.files:,} tracked files, {site.agents} agents with", end=" ")
    print(f"{site.drafts} queued drafts each, {site.agents * site.decided:,} decisions of history;")
    print(f"{args.samples} samples in {args.rounds} rounds;", end=" ")
    print(f"{os.cpu_count()} CPUs, git {git_version()}")
    print(f"{'measure':<28} {'value':<30} {'target':<22} met")
    for name, value, target, met in table:
        mark = "" if met is None else ("yes" if met else "NO")
        print(f"{name:<28} {value:<30} {target:<22} {mark}")
    for problem in results.burst_problems:
        print(f"burst: {problem}")
    return all(met for *_, met in table if met is not None)


def git_version() -> str:
    done = subprocess.run(["git", "--version"], capture_output=True, text=True, check=False)
    return done.stdout.split()[-1] if done.stdout else "?"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.bench_daemon", description=__doc__)
    parser.add_argument(
        "--files", type=int, nargs="+", default=[2000], help="tracked files (one run per size)"
    )
    parser.add_argument("--agents", type=int, default=0, help="agents (0: as many as fit)")
    parser.add_argument("--drafts", type=int, default=100, help="queued drafts of each agent")
    parser.add_argument("--decided", type=int, default=10, help="decided drafts of each agent")
    parser.add_argument("--samples", type=int, default=30, help="single approvals (and floors)")
    parser.add_argument("--rounds", type=int, default=1, help="groups of --samples, each timed")
    parser.add_argument("--once", type=int, default=3, help="idle `run --once` timed")
    parser.add_argument("--cold", type=int, default=3, help="approvals after a quiet while")
    parser.add_argument("--burst", type=int, default=400, help="approvals moved at once")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of idle measured")
    parser.add_argument("--chart", type=Path, help="draw latency and floor by size (PNG)")
    parser.add_argument("--keep", type=Path, help="build the workspaces here and keep them")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.samples < args.rounds:
        parser.error("--rounds must be at least 1, and --samples at least --rounds")
    return args


def run(args: argparse.Namespace, work: Path) -> bool:
    """Every size in turn; True when each met every target."""
    sites = [site_of(files, args) for files in args.files]
    for site in sites:
        singles = args.samples + args.cold
        if singles > site.drafts or len(set(site.burst(args.burst, singles))) < args.burst:
            raise SystemExit(f"{args.drafts} drafts an agent are too few for these approvals")
    measured = [(site, run_size(args, work / f"files-{site.files}", site)) for site in sites]
    met = [report(results, args, site) for site, results in measured]
    if args.chart is not None:
        print(f"chart: {write_chart(chart_of(measured), args.chart)}")
    return all(met)


def run_size(args: argparse.Namespace, work: Path, site: Site) -> Results:
    root = work / "workspace"
    print(f"building a workspace of {site.files:,} tracked files in {root}", flush=True)
    build_workspace(root, site)
    items = site.singles(args.samples + args.cold)
    results = Results()
    daemon = RunningDaemon(root)
    try:
        print(f"daemon {daemon.pid} ready; {args.samples} single approvals", flush=True)
        measure_singles(root, items[: args.samples], args.rounds, results)
        print(f"{args.cold} approvals after {IDLE_WHILE_S:g} s idle each", flush=True)
        measure_cold(root, items[args.samples :], results)
        print(f"burst of {args.burst} approvals", flush=True)
        if args.burst:
            measure_burst(root, site.burst(args.burst, len(items)), results)
        wait_until_quiet(root)
        time.sleep(IDLE_WHILE_S)  # idle: long after the last change (bench_idle_cpu: right after)
        print(f"idle for {args.idle:g} s", flush=True)
        measure_idle(daemon.pid, args.idle, results)
    finally:
        errors = daemon.stop()
    if any(word in errors for word in ("ERROR", "Traceback")):
        print(f"the daemon logged errors:\n{errors}", file=sys.stderr)
    measure_once(root, args.once, results)
    return results


def measure_once(root: Path, count: int, results: Results) -> None:
    """`run --once` with nothing to do, against `feedbackd --help` (Python and the command line
    alone), in turns."""
    env = bench_env(root)
    for _ in range(count):
        for command, into in (("run --once", results.once_s), ("--help", results.help_s)):
            started = time.perf_counter()
            line = [sys.executable, "-m", "feedbackd", "-q", "-w", str(root), *command.split()]
            subprocess.run(line, cwd=root, env=env, check=True, capture_output=True)
            into.append(time.perf_counter() - started)


def chart_of(measured: list[tuple[Site, Results]]) -> Chart:
    def medians(of: Callable[[Results], list[float]]) -> list[float]:
        return [round(statistics.median(of(results)) * 1000, 1) for _, results in measured]

    return Chart(
        title="approve → commit, median (2 cores)",
        x_label="tracked files in the repository",
        y_label="milliseconds",
        xs=[site.files for site, _ in measured],
        series=[
            Series("feedbackd: move to approved/ → commit", medians(lambda r: r.latency_s)),
            Series("git add + git commit by hand (floor)", medians(lambda r: r.floor_s), True),
        ],
    )


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    return in_work_folder(lambda work: run(args, work), args.keep, "feedbackd-bench-")


if __name__ == "__main__":
    sys.exit(main())
