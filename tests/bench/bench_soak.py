"""Soak of one running daemon: many decisions and ratings, its memory, files and threads over time.

Run: `python -m tests.bench.bench_soak [--decisions 1000] [--ratings 1000] [--waves 20]
[--keep DIR]`. The big size, as issue 11 asks it (about an hour on 2 cores):
`python -m tests.bench.bench_soak --decisions 10000 --ratings 10000`.

One workspace (made by `feedbackd init`) and one `feedbackd run` on it. The work comes in
`--waves` waves; each wave:
- drops that wave's new drafts in `queue/` (half of them carry `originalContentData`, the others
  are diffed against the draft as the daemon first committed it) and waits for their commit;
- decides them: an approval is a curator's edit of the title, then the move to `approved/`; a
  rejection (every third draft) writes `rejectionFeedback`, then moves to `rejected/`;
- rates: rating files dropped in `_data/inbox/ratings/`, and every `--cli-every`th rating through
  `feedbackd feedback submit` (a command beside the daemon, through the same lock);
- waits until the daemon is quiet, then times a few `git add` + `git commit` of a similar change
  by hand (the floor, on the same repository at the same size).
A sampler reads the daemon's RSS (/proc/PID/status VmRSS), open fds (/proc/PID/fd), threads
(/proc/PID/task) and live child processes all along; a sample taken when the daemon is quiet
after each wave is what "flat" is judged on (the first `--warmup-pct` of the waves are warm-up).

At the end, from git history and the files: each decided item has exactly one decision commit
(Feedback-Item trailers of approve/reject commits), one ledger line in decisions.jsonl, and
feedback.json holds the newest entries of exactly those decisions, one each; each rating has
exactly one commit (Feedback-Transaction), one stored line, and the index counts each once.
Prints a table (measure, value, target, met) and exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from tests.bench.bench_daemon import (
    RunningDaemon,
    bench_env,
    feedbackd,
    git,
    git_version,
    ms,
    p90,
    proc_kb,
    status_mark,
    write_json,
)
from tests.bench.workfolder import in_work_folder

T = TypeVar("T")
AGENTS = [f"soak-writer-{n}" for n in range(4)]
PROVIDERS = {"soak-provider-0": ["code-run", "web-search"], "soak-provider-1": ["summarise"]}
REQUESTERS = [f"soak-buyer-{n}" for n in range(5)]
QUALITIES = ["excellent", "good", "acceptable", "poor", "failed"]
SAMPLE_EVERY_S = 0.25
QUIET_S = 0.5  # the daemon is quiet when no pass ended for this long
QUIET_TRIES = 20  # a quiet sample: passes ending around it this many times in a row is a fault
WAIT_PER_UNIT_S = 1.0  # a wave's deadline: this much per decision or rating, at least a minute
FLOOR_PER_WAVE = 3
FLOOR_TRIES = 5
MAX_FEEDBACK = 200  # feedback.max_entries at its default
TARGET_RSS_GROWTH_MB, TARGET_FD_SPREAD, TARGET_THREAD_SPREAD = 10.0, 2, 0


@dataclass(frozen=True)
class Decision:
    agent: str
    item: str
    state: str  # approved | rejected
    with_original: bool


@dataclass
class Sample:
    at: float
    rss_kb: int
    fds: int
    threads: int
    children: int


@dataclass
class Soak:
    """What was fed in, what was measured."""

    root: Path
    decided: list[Decision] = field(default_factory=list)
    rated: dict[str, str] = field(default_factory=dict)  # transaction id → provider
    via_cli: int = 0
    samples: list[Sample] = field(default_factory=list)
    quiet: list[Sample] = field(default_factory=list)  # one after each wave, daemon quiet
    warm_waves: int = 1
    decide_s: list[tuple[int, float]] = field(default_factory=list)  # after warm-up
    rate_s: list[tuple[int, float]] = field(default_factory=list)
    floor_s: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    log_errors: list[str] = field(default_factory=list)


# --- the workspace ---------------------------------------------------------------------------
SOUL = """# {name}

A provider agent of the soak benchmark.

{skills}"""


def build_workspace(root: Path, settle_ms: int | None = None) -> None:
    """The soak's workspace; `settle_ms` other than the default (2 s) when given."""
    root.mkdir(parents=True)
    feedbackd(root, "init", str(root))
    if settle_ms is not None:
        with (root / "feedbackd.yaml").open("a", encoding="utf-8") as config:
            config.write(f"daemon:\n  settle_ms: {settle_ms}\n")
    git(root, "config", "user.name", "Ada Curator")
    git(root, "config", "user.email", "ada@example.org")
    git(root, "config", "gc.auto", "0")  # no background repacking in the middle of a wave
    for provider, skills in PROVIDERS.items():
        sections = "".join(
            f"## {skill.replace('-', ' ').title()}\n\nDoes {skill}.\n\npricing: 20\n\n"
            for skill in skills
        )
        soul = root / "_data" / "agents" / provider / "SOUL.md"
        soul.parent.mkdir(parents=True)
        soul.write_text(SOUL.format(name=provider, skills=sections).rstrip() + "\n")
    write_json(root / "docs" / "floor.json", {"n": 0})
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "soak workspace")


def agent_dir(root: Path, agent: str) -> Path:
    return root / "_data" / "agents" / agent


def draft_doc(d: Decision, title: str) -> dict[str, object]:
    content = {
        "title": title,
        "excerpt": f"What {d.item} is about, in one sentence for the listing page.",
        "body": "A paragraph of draft text that the curator reads before deciding.\n" * 4,
    }
    doc: dict[str, object] = {"id": d.item, "contentData": content}
    if d.with_original:
        doc["originalContentData"] = dict(content)
    return doc


def plan_wave(first: int, count: int) -> list[Decision]:
    return [
        Decision(
            agent=AGENTS[number % len(AGENTS)],
            item=f"soak-{number:05d}",
            state="rejected" if number % 3 == 2 else "approved",
            with_original=number % 2 == 0,
        )
        for number in range(first, first + count)
    ]


def rating(number: int) -> dict[str, object]:
    """Rating `number` of the soak: a seeded mix of providers, skills, buyers and verdicts."""
    pick = random.Random(number)
    provider = pick.choice(sorted(PROVIDERS))
    score = pick.choice([1, 2, 3, 3, 4, 4, 4, 5, 5, 5])
    doc: dict[str, object] = {
        "transaction_id": str(uuid.UUID(int=pick.getrandbits(128), version=4)),
        "provider_agent": provider,
        "skill_id": pick.choice(PROVIDERS[provider]),
        "requester_agent": pick.choice(REQUESTERS),
        "rating": score,
        "latency_ms": pick.randrange(100, 30_000),
        "result_quality": QUALITIES[5 - score],
        "would_reuse": score >= 3,
        "cost_value_ratio": pick.choice(["great", "fair", "fair", "overpriced"]),
    }
    if score <= 2:
        doc["quality_details"] = f"Output missed case {pick.randrange(8)} of the brief"
    return doc


# --- sampling --------------------------------------------------------------------------------
def sample(pid: int) -> Sample:
    status = Path(f"/proc/{pid}/status").read_text()
    return Sample(
        at=time.monotonic(),
        rss_kb=proc_kb(status, "VmRSS"),
        fds=len(os.listdir(f"/proc/{pid}/fd")),
        threads=len(os.listdir(f"/proc/{pid}/task")),
        children=len(children_of(pid)),
    )


def children_of(pid: int) -> list[int]:
    """Live child processes of pid, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def git_at_work(pid: int) -> list[int]:
    """The daemon's children but its long-lived git helpers (cat-file --batch, ...), which
    wait for requests the whole time the daemon runs."""
    return [child for child in children_of(pid) if not _long_lived_helper(child)]


def _long_lived_helper(pid: int) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"--batch" in argv or b"--stdin-paths" in argv


class Sampler:
    """Samples the daemon every SAMPLE_EVERY_S in a thread of its own, until stopped."""

    def __init__(self, pid: int, into: list[Sample]) -> None:
        self.pid, self.into = pid, into
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.wait(SAMPLE_EVERY_S):
            try:
                self.into.append(sample(self.pid))
            except OSError:
                return  # the daemon is gone

    def stop(self) -> None:
        self.done.set()
        self.thread.join()


# --- waiting ---------------------------------------------------------------------------------
def wait_for(condition: Callable[[], bool], what: str, timeout_s: float, poll_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up after {timeout_s:.0f} s waiting for {what}")
        time.sleep(poll_s)


def wait_quiet(root: Path, daemon: RunningDaemon) -> None:
    """No pass ended for QUIET_S and no git child is running: the daemon is idle."""
    mark, since = status_mark(root), time.monotonic()

    def quiet() -> bool:
        nonlocal mark, since
        if status_mark(root) != mark or git_at_work(daemon.pid):
            mark, since = status_mark(root), time.monotonic()
        return time.monotonic() - since >= QUIET_S

    wait_for(quiet, "the daemon to go quiet", 120, 0.05)


def ledger_lines(root: Path) -> int:
    total = 0
    for agent in AGENTS:
        with_ledger = agent_dir(root, agent) / "decisions.jsonl"
        if with_ledger.exists():
            total += with_ledger.read_bytes().count(b"\n")
    return total


def rating_lines(root: Path) -> int:
    return sum(
        path.read_bytes().count(b"\n")
        for provider in PROVIDERS
        for path in (agent_dir(root, provider) / "ratings").glob("*/*.jsonl")
    )


def timed_until(count: Callable[[], int], target: int, what: str) -> float:
    """Wait until count() reaches target; seconds from the first unit done to the last, so the
    settle time before the first one is not counted as work."""
    start = count()
    first: float | None = None

    def reached() -> bool:
        nonlocal first
        now = count()
        if first is None and now > start:
            first = time.monotonic()
        return now >= target

    wait_for(reached, what, max(60.0, WAIT_PER_UNIT_S * (target - start)), 0.02)
    return time.monotonic() - (first or time.monotonic())


# --- one wave --------------------------------------------------------------------------------
def add_drafts(root: Path, wave: list[Decision]) -> None:
    for d in wave:
        write_json(agent_dir(root, d.agent) / "queue" / f"{d.item}.json", draft_doc(d, d.item))
    queues = [f"_data/agents/{agent}/queue" for agent in AGENTS]

    def committed() -> bool:
        return not git(root, "status", "--porcelain", "--untracked-files=all", "--", *queues)

    wait_for(committed, "the new drafts to be committed", 120, 0.05)


def decide(root: Path, wave: list[Decision]) -> None:
    """A curator's edit (or note) first, then the move: what the daemon sees in a real editor."""
    for d in wave:
        folder = agent_dir(root, d.agent)
        source = folder / "queue" / f"{d.item}.json"
        doc = draft_doc(d, d.item)
        if d.state == "approved":
            doc["contentData"] = {**doc["contentData"], "title": f"Edited {d.item}"}  # type: ignore[dict-item]
        else:
            doc["rejectionFeedback"] = f"Too vague: {d.item} needs one concrete example"
        write_json(source, doc)
        (folder / d.state).mkdir(exist_ok=True)
        os.rename(source, folder / d.state / source.name)


def rate(soak: Soak, first: int, count: int, cli_every: int) -> None:
    inbox = soak.root / "_data" / "inbox" / "ratings"
    inbox.mkdir(parents=True, exist_ok=True)
    for number in range(first, first + count):
        doc = rating(number)
        soak.rated[str(doc["transaction_id"])] = str(doc["provider_agent"])
        if cli_every and number % cli_every == 0:
            submit(soak.root, doc)
            soak.via_cli += 1
            continue
        temporary = inbox / f".r-{number}.tmp"
        temporary.write_text(json.dumps(doc))
        os.rename(temporary, inbox / f"r-{number:05d}.json")  # whole, as a careful sender does


def submit(root: Path, doc: dict[str, object]) -> None:
    requester = str(doc.pop("requester_agent"))
    command = [sys.executable, "-m", "feedbackd", "-q", "-w", str(root), "feedback", "submit"]
    command += ["--as", requester, "--json", json.dumps(doc)]
    subprocess.run(command, check=True, env=bench_env(root), capture_output=True, timeout=120)


def floor_once(root: Path, number: int) -> float:
    """A similar change committed by hand: `git add` + `git commit`, as subprocesses. A try
    that meets the daemon's lock on the index (it is updating the user's index after a
    commit of its own) is tried again, as a user would, and only the one that worked is timed."""
    write_json(root / "docs" / "floor.json", {"n": number})
    env = bench_env(root)
    for _ in range(FLOOR_TRIES - 1):
        try:
            return _add_and_commit(root, env)
        except subprocess.CalledProcessError as exc:
            if b"index.lock" not in exc.stderr:
                raise
            time.sleep(QUIET_S)
    return _add_and_commit(root, env)


def _add_and_commit(root: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    for command in (["git", "add", "docs/floor.json"], ["git", "commit", "-q", "-m", "floor"]):
        subprocess.run(command, cwd=root, check=True, env=env, capture_output=True)
    return time.perf_counter() - started


def run_wave(soak: Soak, daemon: RunningDaemon, wave: int, sizes: tuple[int, int, int]) -> None:
    per_wave_decisions, per_wave_ratings, cli_every = sizes
    decisions = plan_wave(len(soak.decided), per_wave_decisions)
    add_drafts(soak.root, decisions)
    target = len(soak.decided) + len(decisions)
    decide(soak.root, decisions)
    soak.decided += decisions
    took = timed_until(lambda: ledger_lines(soak.root), target, f"wave {wave}'s decisions")
    warm = wave >= soak.warm_waves
    if warm:
        soak.decide_s.append((len(decisions), took))
    first = len(soak.rated)
    rate(soak, first, per_wave_ratings, cli_every)
    took = timed_until(lambda: rating_lines(soak.root), len(soak.rated), f"wave {wave}'s ratings")
    if warm:
        soak.rate_s.append((per_wave_ratings, took))
    soak.quiet.append(quiet_sample(soak.root, daemon))
    for number in range(FLOOR_PER_WAVE):
        soak.floor_s.append(floor_once(soak.root, wave * FLOOR_PER_WAVE + number + 1))


def quiet_sample(root: Path, daemon: RunningDaemon) -> Sample:
    """A sample inside a quiet stretch: the daemon quiet for QUIET_S before it and after it.
    One taken just as a timed pass began would count that pass's pipes and files (on a loaded
    machine the pass may not have started a git child yet)."""
    for _ in range(QUIET_TRIES):
        wait_quiet(root, daemon)
        mark, taken = status_mark(root), sample(daemon.pid)
        wait_quiet(root, daemon)
        if status_mark(root) == mark:
            return taken
    raise TimeoutError(f"the daemon never stayed quiet around a sample in {QUIET_TRIES} tries")


# --- checks from git history and the files ---------------------------------------------------
def commits(root: Path) -> Iterator[dict[str, list[str]]]:
    """The trailers of every commit on the branch, as key → values."""
    text = git(root, "log", "--format=%x01%(trailers:only,unfold)")
    for block in text.split("\x01")[1:]:
        trailers: dict[str, list[str]] = {}
        for line in block.splitlines():
            key, sep, value = line.partition(": ")
            if sep:
                trailers.setdefault(key, []).append(value.strip())
        yield trailers


def check_history(soak: Soak) -> None:
    decisions: Counter[tuple[str, str, str]] = Counter()
    transactions: Counter[str] = Counter()
    for trailers in commits(soak.root):
        event = (trailers.get("Feedback-Event") or [""])[0]
        if event in ("approve", "reject"):
            agent = trailers.get("Feedback-Agent", [""])[0]
            state = "approved" if event == "approve" else "rejected"
            items = trailers.get("Feedback-Item", [])
            if len(items) != 1:
                soak.problems.append(f"a {event} commit names {len(items)} items")
            decisions.update((agent, item, state) for item in items)
        transactions.update(trailers.get("Feedback-Transaction", []))
    expected = Counter((d.agent, d.item, d.state) for d in soak.decided)
    if decisions != expected:
        soak.problems.append(f"decision commits differ: {summarise(decisions, expected)}")
    if transactions != Counter(list(soak.rated)):
        soak.problems.append(
            f"rating commits differ: {summarise(transactions, Counter(list(soak.rated)))}"
        )


def summarise(found: Counter[T], expected: Counter[T]) -> str:
    missing, extra = expected - found, found - expected
    return f"{sum(missing.values())} missing, {sum(extra.values())} extra (e.g. {list(extra)[:3]})"


def check_ledgers(soak: Soak) -> None:
    for agent in AGENTS:
        mine = [d for d in soak.decided if d.agent == agent]
        folder = agent_dir(soak.root, agent)
        lines = (folder / "decisions.jsonl").read_text().splitlines()
        records = [json.loads(line) for line in lines if line.strip()]
        got = Counter((r["item"], r["state"]) for r in records)
        expected = Counter((d.item, d.state) for d in mine)
        if got != expected:
            soak.problems.append(f"{agent}: decisions.jsonl: {summarise(got, expected)}")
        check_feedback(soak, agent, [r["item"] for r in records])


def check_feedback(soak: Soak, agent: str, ledger_items: list[str]) -> None:
    """feedback.json: the newest MAX_FEEDBACK entries, one per decision, in ledger order."""
    entries = json.loads((agent_dir(soak.root, agent) / "feedback.json").read_text())
    state = {d.item: d.state for d in soak.decided if d.agent == agent}
    wanted = ledger_items[-MAX_FEEDBACK:]
    if [e["queueItemId"] for e in entries] != wanted:
        soak.problems.append(f"{agent}: feedback.json is not the newest {len(wanted)} decisions")
    for entry in entries:
        kind = "correction" if state.get(entry["queueItemId"]) == "approved" else "rejection"
        if entry["type"] != kind:
            soak.problems.append(f"{agent}: {entry['queueItemId']} has a {entry['type']} entry")
    if len({e["id"] for e in entries}) != len(entries):
        soak.problems.append(f"{agent}: feedback.json repeats an entry id")


def check_ratings(soak: Soak) -> None:
    stored: Counter[str] = Counter()
    for provider in PROVIDERS:
        for path in (agent_dir(soak.root, provider) / "ratings").glob("*/*.jsonl"):
            stored.update(
                json.loads(line)["transaction_id"] for line in path.read_text().splitlines()
            )
    if stored != Counter(list(soak.rated)):
        soak.problems.append(f"rating lines differ: {summarise(stored, Counter(list(soak.rated)))}")
    if any((soak.root / "_data" / "inbox" / "ratings").glob("*.json")):
        soak.problems.append("rating files left in the inbox")
    for provider, count in Counter(soak.rated.values()).items():
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "feedbackd",
                "-w",
                str(soak.root),
                "reputation",
                provider,
                "--json",
            ],
            check=True,
            capture_output=True,
            text=True,
            env=bench_env(soak.root),
        )
        indexed = json.loads(done.stdout)["feedback_count"]
        if indexed != count:
            soak.problems.append(f"{provider}: the index counts {indexed} ratings, not {count}")


def check_clean(soak: Soak) -> None:
    left = git(soak.root, "status", "--porcelain", "--", "_data")
    if left:
        soak.problems.append(f"uncommitted after the soak: {left.splitlines()[:3]}")


# --- report ----------------------------------------------------------------------------------
Row = tuple[str, str, str, bool | None]  # measure, value, target, met (None: no target)


def spread(values: list[int]) -> str:
    return f"{min(values)}–{max(values)}"


def resource_rows(soak: Soak) -> list[Row]:
    base, after = soak.quiet[soak.warm_waves - 1], soak.quiet[soak.warm_waves :] or soak.quiet[-1:]
    growth = (after[-1].rss_kb - base.rss_kb) / 1024
    peak = max(s.rss_kb for s in soak.samples) / 1024
    quiet_fds = [s.fds for s in (base, *after)]
    quiet_threads = [s.threads for s in (base, *after)]
    quiet_children = [s.children for s in (base, *after)]
    busy = soak.samples
    return [
        (
            "RSS growth after warm-up",
            f"{growth:+.1f} MB ({base.rss_kb / 1024:.0f} → {after[-1].rss_kb / 1024:.0f} MB"
            f", peak {peak:.0f} MB)",
            f"≤ {TARGET_RSS_GROWTH_MB:g} MB",
            growth <= TARGET_RSS_GROWTH_MB,
        ),
        (
            "open fds, quiet (busy)",
            f"{spread(quiet_fds)} ({spread([s.fds for s in busy])})",
            f"flat (± {TARGET_FD_SPREAD})",
            max(quiet_fds) - min(quiet_fds) <= TARGET_FD_SPREAD,
        ),
        (
            "threads, quiet (busy)",
            f"{spread(quiet_threads)} ({spread([s.threads for s in busy])})",
            "flat",
            max(quiet_threads) - min(quiet_threads) <= TARGET_THREAD_SPREAD,
        ),
        (
            "child processes, quiet (busy)",
            f"{spread(quiet_children)} ({spread([s.children for s in busy])})",
            "flat",
            max(s.children for s in after) <= base.children,
        ),
    ]


def throughput_rows(soak: Soak) -> list[Row]:
    decided = sum(n for n, _ in soak.decide_s) / max(sum(s for _, s in soak.decide_s), 1e-9)
    rated = sum(n for n, _ in soak.rate_s) / max(sum(s for _, s in soak.rate_s), 1e-9)
    floor = sorted(soak.floor_s)[len(soak.floor_s) // 2]
    return [
        ("decisions / s (after warm-up)", f"{decided:.1f} ({ms(1 / decided)} each)", "", None),
        ("ratings / s (after warm-up)", f"{rated:.1f} ({ms(1 / rated)} each)", "", None),
        ("git add + commit (floor)", f"{ms(floor)} median, p90 {ms(p90(soak.floor_s))}", "", None),
        ("decision / floor", f"{1 / decided / floor:.1f}×", "", None),
    ]


def once_rows(soak: Soak) -> list[Row]:
    value = f"{len(soak.decided)} decisions, {len(soak.rated)} ratings ({soak.via_cli} by CLI)"
    errors = f"{len(soak.log_errors)} error lines"
    return [
        ("every decision and rating once", value, "exactly once", not soak.problems),
        ("daemon log", errors, "no errors", not soak.log_errors),
    ]


def report(soak: Soak, args: argparse.Namespace) -> bool:
    table = [*resource_rows(soak), *once_rows(soak), *throughput_rows(soak)]
    print(f"\nfeedbackd soak: {args.decisions} decisions, {args.ratings} ratings in {args.waves}")
    print(f"waves ({soak.warm_waves} warm-up), {os.cpu_count()} CPUs, git {git_version()}")
    print(f"{'measure':<32} {'value':<44} {'target':<14} met")
    for name, value, target, met in table:
        mark = "" if met is None else ("yes" if met else "NO")
        print(f"{name:<32} {value:<44} {target:<14} {mark}")
    for problem in soak.problems:
        print(f"problem: {problem}")
    print(
        "quiet samples (wave: RSS MB, fds, threads): "
        + ", ".join(
            f"{n}: {s.rss_kb / 1024:.0f}/{s.fds}/{s.threads}" for n, s in enumerate(soak.quiet)
        )
    )
    return all(met for *_, met in table if met is not None)


# --- driver ----------------------------------------------------------------------------------
def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.bench_soak", description=__doc__)
    parser.add_argument("--decisions", type=int, default=1000, help="decisions in all (10000)")
    parser.add_argument("--ratings", type=int, default=1000, help="ratings in all (10000)")
    parser.add_argument("--waves", type=int, default=20, help="waves the work comes in")
    parser.add_argument("--warmup-pct", type=float, default=5.0, help="of the waves, warm-up")
    parser.add_argument("--cli-every", type=int, default=25, help="every Nth rating by CLI")
    parser.add_argument("--keep", type=Path, help="build the workspace here and keep it")
    args = parser.parse_args(argv)
    if args.waves < 2 or args.decisions < args.waves or args.ratings < args.waves:
        parser.error("at least two waves, and a decision and a rating in each")
    return args


def soak_daemon(soak: Soak, args: argparse.Namespace) -> None:
    daemon = RunningDaemon(soak.root)
    sampler = Sampler(daemon.pid, soak.samples)
    try:
        for wave in range(args.waves):
            sizes = (
                share(args.decisions, args.waves, wave),
                share(args.ratings, args.waves, wave),
                args.cli_every,
            )
            run_wave(soak, daemon, wave, sizes)
            last = soak.quiet[-1]
            print(
                f"wave {wave + 1}/{args.waves}: {len(soak.decided)} decisions, "
                f"{len(soak.rated)} ratings; RSS {last.rss_kb / 1024:.1f} MB, "
                f"{last.fds} fds, {last.threads} threads",
                flush=True,
            )
    finally:
        sampler.stop()
        errors = daemon.stop()
    soak.log_errors = [line for line in errors.splitlines() if is_error(line)]
    for line in soak.log_errors[:10]:
        print(f"the daemon logged: {line}", file=sys.stderr)


def is_error(line: str) -> bool:
    """A log line of level error (plain `error: ...`, or an uncaught traceback)."""
    return line.startswith(("error:", "ERROR", "Traceback")) or '"level": "error"' in line


def share(total: int, waves: int, wave: int) -> int:
    """Wave `wave`'s part of `total`, spread as evenly as whole numbers allow."""
    return total * (wave + 1) // waves - total * wave // waves


def run(args: argparse.Namespace, work: Path) -> bool:
    soak = Soak(work / "workspace", warm_waves=max(1, round(args.waves * args.warmup_pct / 100)))
    print(f"building the workspace in {soak.root}", flush=True)
    build_workspace(soak.root)
    soak_daemon(soak, args)
    print("checking history, ledgers, feedback.json and ratings", flush=True)
    for check in (check_history, check_ledgers, check_ratings, check_clean):
        check(soak)
    return report(soak, args)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    return in_work_folder(lambda work: run(args, work), args.keep, "feedbackd-soak-")


if __name__ == "__main__":
    sys.exit(main())
