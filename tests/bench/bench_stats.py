"""Benchmark of `feedbackd stats` on a long history: 100,000 decisions, warm in 1 s or less.

Run: `python -m tests.bench.bench_stats [--decisions 100000] [--agents 20] [--weeks 52]
[--repeat 5] [--keep DIR]`. Few agents make a slow build: each decision commit rewrites its
agent's approved/ folder, and fast-import's time grows with the square of its size.

A workspace made by `feedbackd init` gets a year of history, written with `git fast-import`: each
day a `draft` commit per agent adding that day's drafts to queue/, then one commit per decision
moving its draft to approved/ or rejected/ (hours to days later), and a last commit writing each
agent's decisions.jsonl (every decision's line, as HEAD would hold it; a ledger rewritten in each
of 100,000 commits would make the stream 100,000 times larger) and forgotten.jsonl (one
correction in a hundred taken back). Then, in the same run:
- `feedbackd stats --json`, the first time (nothing kept: the walk of the drafts' history and
  every ledger counted) and warm (`--repeat` times; the target);
- `feedbackd stats AGENT --by day --json` warm, and after one more decision of that agent (its
  ledger counted again, the history walked from the kept HEAD);
- the same call in this process (`agent_stats`, no interpreter start-up);
- the baselines: reading and parsing every ledger line at HEAD alone (a new process, as the
  command is: `git cat-file --batch`, then one json.loads a line), and `feedbackd --help`
  (loading the whole command line: `--version` no longer loads any of it).
Checks the totals against what was written. Prints a table (measure, median, target, met) with
the ratios to the baseline; exits 1 when the target is missed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from feedbackd.app.commands.learningstats import agent_stats
from feedbackd.app.workspace.runtime import Runtime
from tests.bench.bench_startup import bench_env, data_block, feedbackd_command, git, timed
from tests.bench.workfolder import in_work_folder

TARGET_WARM_S = 1.0
FIELDS = ("title", "excerpt", "body", "seo.metaTitle")
CURATOR = "Ada Curator <ada@example.org>"
# The baseline: what reading the ledgers alone costs a new process.
READ_LEDGERS = """
import json, subprocess, sys
root, names = sys.argv[1], sys.argv[2:]
request = "".join(f"HEAD:{name}\\n" for name in names).encode()
out = subprocess.run(["git", "cat-file", "--batch"], cwd=root, input=request,
                     capture_output=True, check=True).stdout
lines = 0
position = 0
for _ in names:
    header_end = out.index(b"\\n", position)
    size = int(out[position:header_end].split()[2])
    text = out[header_end + 1 : header_end + 1 + size].decode()
    position = header_end + size + 2
    lines += len([json.loads(line) for line in text.splitlines()])
print(lines)
"""


@dataclass
class Decision:
    agent: str
    item: str
    drafted: datetime
    decided: datetime
    state: str
    fields: list[str]


@dataclass
class Results:
    cold_s: float = 0.0
    warm_s: list[float] = field(default_factory=list)
    agent_s: list[float] = field(default_factory=list)
    after_one_s: list[float] = field(default_factory=list)
    in_process_s: list[float] = field(default_factory=list)
    baseline_s: list[float] = field(default_factory=list)
    version_s: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


# --- the history -----------------------------------------------------------------------------
def decisions(args: argparse.Namespace, start: datetime) -> list[Decision]:
    """Spread over the weeks; fewer corrections and rejections as the weeks go (it learns)."""
    found = []
    days = args.weeks * 7
    for number in range(args.decisions):
        day = number * days // args.decisions
        drafted = start + timedelta(days=day, hours=9)
        waited = timedelta(hours=(number * 7919) % 72 + 1, minutes=number % 60)
        late = day / days  # 0 at the start, 1 at the end
        if (number * 31) % 100 < 20 - 12 * late:
            state, fields = "rejected", []
        else:
            state = "approved"
            fields = list(FIELDS[: (number * 13) % int(5 - 3 * late)])
        agent = f"writer-{number % args.agents:03d}"
        found.append(Decision(agent, f"qi-{number:06d}", drafted, drafted + waited, state, fields))
    return found


def draft_json(item: str, title: str) -> bytes:
    content = {f: f"{title} {f} of {item}" for f in FIELDS if f != "seo.metaTitle"}
    return (json.dumps({"contentData": content}, indent=2) + "\n").encode()


def commit_head(when: datetime, message: str) -> bytes:
    stamp = f"{int(when.timestamp())} +0000"
    return (
        b"commit refs/heads/main\n"
        + f"author Ada Curator <ada@example.org> {stamp}\n".encode()
        + f"committer feedbackd <feedbackd@localhost> {stamp}\n".encode()
        + data_block(message.encode())
    )


def stream(history: list[Decision], ledgers: dict[str, bytes]) -> Iterator[bytes]:
    """The history in `git fast-import`'s language, in time order."""
    events: list[tuple[datetime, int, Decision | None]] = []
    for decision in history:
        events.append((decision.drafted, 0, decision))
        events.append((decision.decided, 1, decision))
    # Drafts of one agent and time together, in one commit, as a pass commits them.
    events.sort(key=lambda event: (event[0], event[1], event[2].agent if event[2] else ""))
    first = True
    batch: list[Decision] = []
    for when, kind, decision in [*events, (events[-1][0] + timedelta(hours=1), 2, None)]:
        if batch and (kind != 0 or batch[0].drafted != when or batch[0].agent != decision.agent):
            yield from _drafts_commit(batch, first)
            first, batch = False, []
        if kind == 0 and decision is not None:
            batch.append(decision)
        elif kind == 1 and decision is not None:
            yield from _decision_commit(when, decision)
    yield commit_head(events[-1][0] + timedelta(hours=1), "write the ledgers\n")
    for path, text in ledgers.items():
        yield f"M 100644 inline {path}\n".encode() + data_block(text)


def _drafts_commit(batch: list[Decision], first: bool) -> Iterator[bytes]:
    agent = batch[0].agent
    yield commit_head(batch[0].drafted, f"draft({agent}): {len(batch)} new drafts\n")
    if first:
        yield b"from refs/heads/main^0\n"
    for decision in batch:
        path = f"_data/agents/{agent}/queue/{decision.item}.json"
        yield f"M 100644 inline {path}\n".encode() + data_block(draft_json(decision.item, "Draft"))


def _decision_commit(when: datetime, decision: Decision) -> Iterator[bytes]:
    event = "approve" if decision.state == "approved" else "reject"
    folder = f"_data/agents/{decision.agent}"
    trailers = f"Feedback-Event: {event}\nFeedback-Agent: {decision.agent}\n"
    yield commit_head(when, f"{event}({decision.agent}): {decision.item}\n\n{trailers}")
    yield f"D {folder}/queue/{decision.item}.json\n".encode()
    path = f"{folder}/{decision.state}/{decision.item}.json"
    yield f"M 100644 inline {path}\n".encode() + data_block(draft_json(decision.item, "Better"))


def ledger_files(history: list[Decision]) -> tuple[dict[str, bytes], int]:
    """Each agent's decisions.jsonl and forgotten.jsonl; the corrections left counted."""
    lines: dict[str, list[str]] = {}
    forgotten: dict[str, list[str]] = {}
    counted = 0
    for number, d in enumerate(sorted(history, key=lambda d: d.decided)):
        ms = int(d.decided.timestamp() * 1000)
        entries = [f"fb-{ms}-{n:06d}" for n in range(len(d.fields))]
        record = {"id": f"dc-{ms}-{number:06d}", "item": d.item, "state": d.state,
                  "at": d.decided.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                  "file": f"_data/agents/{d.agent}/{d.state}/{d.item}.json", "curator": CURATOR,
                  **({"fields": d.fields, "entries": entries} if d.fields else {})}  # fmt: skip
        lines.setdefault(d.agent, []).append(json.dumps(record))
        for entry, name in zip(entries, d.fields, strict=True):
            if (ms // 1000 + len(name)) % 100 == 0:  # one in a hundred or so: taken back
                forgotten.setdefault(d.agent, []).append(_forgotten_line(entry, d, name))
            else:
                counted += 1
    files = {
        f"_data/agents/{agent}/decisions.jsonl": ("\n".join(found) + "\n").encode()
        for agent, found in lines.items()
    }
    for agent, found in forgotten.items():
        files[f"_data/agents/{agent}/forgotten.jsonl"] = ("\n".join(found) + "\n").encode()
    return files, counted


def _forgotten_line(entry: str, decision: Decision, name: str) -> str:
    return json.dumps(
        {"corrected": f"Better {name} of {decision.item}", "curator": CURATOR, "field": name,
         "forgotten_at": "2026-01-01T00:00:00.000Z", "id": entry, "notes": None,
         "queueItemId": decision.item, "reason": "a slip", "type": "correction"},
        sort_keys=True,
    )  # fmt: skip


def build(root: Path, args: argparse.Namespace) -> tuple[list[Decision], int]:
    root.mkdir(parents=True)
    env = bench_env(root.parent)
    subprocess.run(feedbackd_command(root, "init", str(root)), check=True, env=env)
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    start -= timedelta(weeks=args.weeks, days=4)
    history = decisions(args, start)
    ledgers, counted = ledger_files(history)
    git(root, "fast-import", "--quiet", stdin=b"".join(stream(history, ledgers)))
    git(root, "reset", "-q", "--hard")
    return history, counted


# --- measurements ----------------------------------------------------------------------------
def stats_command(root: Path, *args: str) -> list[str]:
    return feedbackd_command(root, "stats", *args, "--json")


def measure(root: Path, args: argparse.Namespace, history: list[Decision], counted: int) -> Results:
    results, env = Results(), bench_env(root.parent)
    results.cold_s = timed(stats_command(root), root, env)
    check(root, env, history, counted, results)
    agent = history[0].agent
    names = sorted(
        str(path.relative_to(root)) for path in root.glob("_data/agents/*/decisions.jsonl")
    )
    runtime = Runtime.open(str(root), None)
    for number in range(args.repeat):
        results.warm_s.append(timed(stats_command(root), root, env))
        results.agent_s.append(timed(stats_command(root, agent, "--by", "day"), root, env))
        started = time.perf_counter()
        agent_stats(runtime, None)
        results.in_process_s.append(time.perf_counter() - started)
        reader = [sys.executable, "-c", READ_LEDGERS, str(root), *names]
        results.baseline_s.append(timed(reader, root, env))
        results.version_s.append(timed(feedbackd_command(root, "--help"), root, env))
        one_more_decision(root, agent, number)
        results.after_one_s.append(timed(stats_command(root, agent, "--by", "day"), root, env))
    return results


def check(
    root: Path, env: dict[str, str], history: list[Decision], counted: int, results: Results
) -> None:
    done = subprocess.run(stats_command(root), capture_output=True, env=env, check=True)
    total = json.loads(done.stdout)["total"]
    rejected = sum(1 for d in history if d.state == "rejected")
    expected = {"decided": len(history), "rejected": rejected, "corrections": counted}
    found = {key: total[key] for key in expected}
    if found != expected:
        results.problems.append(f"stats counted {found}, the history holds {expected}")
    if total["median_decision_s"] is None:
        results.problems.append("no time from draft to decision was found")


def one_more_decision(root: Path, agent: str, number: int) -> None:
    """A line appended to the agent's ledger and committed, as a decision would be."""
    ledger = root / "_data" / "agents" / agent / "decisions.jsonl"
    at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    line = {"id": f"dc-extra-{number}", "item": f"extra-{number}", "state": "approved", "at": at}
    with ledger.open("a") as handle:
        handle.write(json.dumps(line) + "\n")
    git(root, "add", str(ledger.relative_to(root)))
    git(root, "commit", "-q", "-m", f"approve({agent}): extra-{number}")


# --- report ----------------------------------------------------------------------------------
def report(results: Results, args: argparse.Namespace) -> bool:
    baseline = statistics.median(results.baseline_s)
    warm = statistics.median(results.warm_s)
    rows = [
        ("stats, first call (nothing kept)", results.cold_s, None),
        ("stats --json, warm", warm, TARGET_WARM_S),
        ("stats AGENT --by day, warm", statistics.median(results.agent_s), None),
        ("stats AGENT after one more decision", statistics.median(results.after_one_s), None),
        ("agent_stats in-process, warm", statistics.median(results.in_process_s), None),
        ("baseline: parse every ledger line", baseline, None),
        ("feedbackd --help (command line)", statistics.median(results.version_s), None),
    ]
    print(f"{args.decisions:,} decisions in {args.agents} agents over {args.weeks} weeks;")
    print(f"medians of {args.repeat} runs (new process each time unless in-process)")
    print(f"{'measure':40}{'median':>9}{'× baseline':>12}{'target':>9}  met")
    for name, value, target in rows:
        aim = f"{target:.1f}s" if target else ""
        met = "" if target is None else ("yes" if value <= target else "NO")
        print(f"{name:40}{value:8.3f}s{value / baseline:11.2f}×{aim:>9}  {met}")
    for problem in results.problems:
        print(f"problem: {problem}")
    return warm <= TARGET_WARM_S and not results.problems


def run(args: argparse.Namespace, work: Path) -> bool:
    root = work / "ws"
    started = time.perf_counter()
    history, counted = build(root, args)
    print(f"history written in {time.perf_counter() - started:.1f} s", flush=True)
    return report(measure(root, args, history, counted), args)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.bench_stats", description=__doc__)
    parser.add_argument("--decisions", type=int, default=100_000)
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--weeks", type=int, default=52, help="how long the history runs")
    parser.add_argument("--repeat", type=int, default=5, help="warm runs measured")
    parser.add_argument("--keep", type=Path, help="build the workspace here and keep it")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    return in_work_folder(lambda work: run(args, work), args.keep, "feedbackd-bench-")


if __name__ == "__main__":
    sys.exit(main())
