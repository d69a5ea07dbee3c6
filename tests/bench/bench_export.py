"""Benchmark of `feedbackd export` over a long history: memory stays bounded while it streams.

Run: `python -m tests.bench.bench_export [--decisions 100000] [--batch 10] [--repeat 3]
[--keep DIR]`. The size of issue #27 (its target is for this one) is the default.

A workspace made by `feedbackd init` gets, written with `git fast-import`, the history of one
agent's `--decisions` decisions: drafts arrive `--batch` at a time, each in a `draft` commit,
and each is decided in a commit of its own that takes it out of queue/, with the trailers
feedbackd writes (one in ten is a rejection). A last commit holds what the agent's folder has
then: the decided files in approved/ and rejected/ (each approval retitled), the decision
ledger, and forgotten.jsonl with a hundred lessons taken back. (The decided files come in that
last commit rather than one at a time: git's trees of a folder of 100,000 files written 100,000
times over would take hours to build, and the export reads that folder at the commit once
either way.) A hundred of the decisions were reverted: their ledger lines are gone and their
drafts are back in queue/.

Measured, medians of `--repeat`: `feedbackd export w --format openai-dpo --out FILE` and
`--format hf --out DIR` from start to exit, with the peak resident memory of the feedbackd
process itself (VmHWM); the floor, on the same
repository in the same run: `git log` of every commit with its message, which any reader of
this history pays. Each export is checked: the row counts (reverted decisions and forgotten
lessons left out) and the same bytes every time. Prints a table (measure, value, target, met);
exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.bench.bench_startup import bench_env, data_block, feedbackd_command, git, git_version
from tests.bench.workfolder import in_work_folder

TARGET_RSS_MB = 200.0
AGENT = "w"
FOLDER = f"_data/agents/{AGENT}"
START = 1767225600  # 2026-01-01, the history's first second
CURATOR = "Ada Curator <ada@example.org>"
REVERTED, FORGOTTEN = 100, 100
# The command line in a Python that reports its own peak memory: VmHWM, its memory's high-water
# mark since it started. (Not ru_maxrss: that counts what the process shared with the benchmark
# when it was forked, before it became feedbackd; nor does either count the git it starts.)
MEASURED = (
    "import sys\n"
    "from feedbackd.launch import main\n"
    "code = main(sys.argv[1:])\n"
    "with open('/proc/self/status') as status:\n"
    "    peak = next(line.split()[1] for line in status if line.startswith('VmHWM:'))\n"
    "print(f'peak-kb {peak}', file=sys.stderr)\n"
    "sys.exit(code)\n"
)


@dataclass
class Run:
    seconds: float
    own_mb: float
    digest: str


@dataclass
class Results:
    dpo: list[Run] = field(default_factory=list)
    hf: list[Run] = field(default_factory=list)
    log_s: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


# --- the history -------------------------------------------------------------------------------
def item(number: int) -> str:
    return f"qi-{number:06d}"


def rejected(number: int) -> bool:
    return number % 10 == 9


def reverted(number: int, args: argparse.Namespace) -> bool:
    """The last REVERTED decisions (a user's `git revert` of each)."""
    return bool(number >= args.decisions - REVERTED)


def forgotten(number: int) -> bool:
    """The first FORGOTTEN approvals' lessons were taken back (`feedbackd forget`)."""
    return number in _FORGOTTEN


_FORGOTTEN = frozenset([n for n in range(2 * FORGOTTEN) if not rejected(n)][:FORGOTTEN])


def draft_doc(number: int) -> dict[str, object]:
    content = {
        "title": f"Draft title {number}",
        "excerpt": f"What item {number} is about, in one sentence for the listing page.",
        "body": "A paragraph of draft text that the curator reads before deciding.\n" * 4,
    }
    return {
        "id": item(number),
        "collection": "posts",
        "slug": f"post-{number}",
        "contentData": content,
    }


def decided_doc(number: int) -> dict[str, object]:
    doc = draft_doc(number)
    content = dict(doc["contentData"])  # type: ignore[call-overload]
    if rejected(number):
        return {**doc, "rejectionFeedback": "Off-topic for this collection."}
    content["title"] = f"A better title for item {number}"
    return {**doc, "contentData": content}


def file_bytes(doc: dict[str, object]) -> bytes:
    return (json.dumps(doc, indent=2) + "\n").encode()


def commit_block(message: str, when: int, changes: list[bytes] | None = None) -> bytes:
    """A commit of fast-import's language; its changes follow (here, or after it)."""
    head = b"commit refs/heads/main\n"
    head += f"committer Ada Curator <ada@example.org> {when} +0000\n".encode()
    return head + data_block(message.encode()) + b"".join(changes or [])


def decision_message(number: int) -> str:
    name = item(number)
    if rejected(number):
        subject, event, body = f"reject({AGENT}): {name}", "reject", '- notes: "Off-topic"'
    else:
        subject, event = f"approve({AGENT}): {name}, 1 correction (title)", "approve"
        body = f'- title: "Draft title {number}" → "A better title for item {number}"'
    trailers = f"Feedback-Event: {event}\nFeedback-Agent: {AGENT}\nFeedback-Item: {name}"
    fields = "" if rejected(number) else "\nFeedback-Fields: title"
    return f"{subject}\n\n{body}\n\n{trailers}{fields}\n"


def history(args: argparse.Namespace) -> Iterator[bytes]:
    """fast-import's commands: draft commits and decision commits, then the folder as it is."""
    yield b"reset refs/heads/main\nfrom refs/heads/main^0\n\n"
    when = START
    for first in range(0, args.decisions, args.batch):
        batch = range(first, min(first + args.batch, args.decisions))
        added = [
            f"M 100644 inline {FOLDER}/queue/{item(n)}.json\n".encode()
            + data_block(file_bytes(draft_doc(n)))
            for n in batch
        ]
        message = f"draft({AGENT}): {len(batch)} new drafts\n\nFeedback-Event: draft\n"
        yield commit_block(message + f"Feedback-Agent: {AGENT}\n", when, added)
        for number in batch:
            when += 60
            gone = [f"D {FOLDER}/queue/{item(number)}.json\n".encode()]
            yield commit_block(decision_message(number), when, gone)
    yield commit_block("the agent's folder as the decisions left it\n", when + 60)
    yield from final(args)


def final(args: argparse.Namespace) -> Iterator[bytes]:
    """The last commit's changes, one file at a time (they are not all held at once)."""
    ledger, lessons = [], []
    for number in range(args.decisions):
        name = item(number)
        if reverted(number, args):
            doc, folder = draft_doc(number), "queue"
        else:
            doc, folder = decided_doc(number), "rejected" if rejected(number) else "approved"
            ledger.append(ledger_line(number, folder))
        yield f"M 100644 inline {FOLDER}/{folder}/{name}.json\n".encode()
        yield data_block(file_bytes(doc))
        if forgotten(number):
            lessons.append(forgotten_line(number))
    for path, lines in (("decisions.jsonl", ledger), ("forgotten.jsonl", lessons)):
        text = "".join(line + "\n" for line in lines).encode()
        yield f"M 100644 inline {FOLDER}/{path}\n".encode()
        yield data_block(text)


def ledger_line(number: int, folder: str) -> str:
    at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(START + 60 * (number + 1)))
    record = {
        "id": f"dc-{number:08d}",
        "item": item(number),
        "state": folder,
        "at": f"{at}.000Z",
        "file": f"{FOLDER}/{folder}/{item(number)}.json",
        "curator": CURATOR,
    }
    return json.dumps(record)


def forgotten_line(number: int) -> str:
    record = {
        "id": f"fb-{number}",
        "queueItemId": item(number),
        "type": "correction",
        "field": "title",
        "corrected": f"A better title for item {number}",
        "reason": "a slip",
    }
    return json.dumps(record, sort_keys=True)


def build(root: Path, args: argparse.Namespace) -> None:
    root.mkdir(parents=True)
    env = bench_env(root.parent)
    subprocess.run(feedbackd_command(root, "init", str(root)), check=True, env=env)
    with subprocess.Popen(
        ["git", "fast-import", "--quiet"], cwd=root, stdin=subprocess.PIPE, env=env
    ) as importer:
        assert importer.stdin is not None
        for block in history(args):
            importer.stdin.write(block)
        importer.stdin.close()
        if importer.wait() != 0:
            raise RuntimeError("git fast-import failed")
    git(root, "reset", "-q", "--hard")


# --- measurements ------------------------------------------------------------------------------
def export_once(root: Path, export_format: str, out: Path) -> Run:
    env = bench_env(root.parent)
    command = [sys.executable, "-c", MEASURED, "-q", "-w", str(root), "export", AGENT]
    command += ["--format", export_format, "--out", str(out)]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, check=False)
    seconds = time.perf_counter() - started
    said = done.stderr.decode(errors="replace")
    if done.returncode != 0:
        raise RuntimeError(f"export failed: {said}")
    peak = next(line for line in said.splitlines() if line.startswith("peak-kb"))
    own_kb = peak.split()[1]
    data = next((out / "data").glob("train-*.jsonl")) if out.is_dir() else out
    digest = hashlib.sha256(data.read_bytes()).hexdigest()
    return Run(seconds, int(own_kb) / 1024, digest)


def log_floor(root: Path) -> float:
    env = bench_env(root.parent)
    started = time.perf_counter()
    subprocess.run(
        ["git", "log", "--format=%H%x00%B"],
        cwd=root,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def check(root: Path, args: argparse.Namespace, results: Results) -> None:
    """Counts of the last exports, and the same bytes every time."""
    decided = args.decisions - REVERTED
    approvals = sum(1 for n in range(decided) if not rejected(n))
    lessons = sum(1 for n in range(decided) if forgotten(n))
    dpo_lines = len((root.parent / "dpo.jsonl").read_bytes().splitlines())
    [hf_data] = (root.parent / "hf" / "data").glob("train-*.jsonl")
    hf_lines = len(hf_data.read_bytes().splitlines())
    if dpo_lines != approvals - lessons:
        results.problems.append(f"{dpo_lines} DPO lines, wanted {approvals - lessons}")
    if hf_lines != decided:
        results.problems.append(f"{hf_lines} dataset rows, wanted {decided}")
    for name, runs in (("openai-dpo", results.dpo), ("hf", results.hf)):
        if len({run.digest for run in runs}) != 1:
            results.problems.append(f"{name}: different bytes from the same commit")


def measure(root: Path, args: argparse.Namespace, results: Results) -> None:
    for number in range(args.repeat):
        print(f"exports, round {number + 1} of {args.repeat}", flush=True)
        results.dpo.append(export_once(root, "openai-dpo", root.parent / "dpo.jsonl"))
        results.hf.append(export_once(root, "hf", root.parent / "hf"))
        results.log_s.append(log_floor(root))
    check(root, args, results)


# --- report ------------------------------------------------------------------------------------
Row = tuple[str, str, str, bool | None]  # measure, value, target, met (None: no target)


def rows(results: Results) -> list[Row]:
    floor = statistics.median(results.log_s)
    table: list[Row] = [("git log, every message (floor)", f"{floor:.1f} s", "", None)]
    for name, runs in (("openai-dpo", results.dpo), ("hf", results.hf)):
        seconds = statistics.median(run.seconds for run in runs)
        own = max(run.own_mb for run in runs)
        table += [
            (f"export {name}", f"{seconds:.1f} s, {seconds / floor:.1f}× git log", "", None),
            ("  feedbackd peak RSS", f"{own:.0f} MB", f"≤ {TARGET_RSS_MB:g} MB",
             own <= TARGET_RSS_MB),
        ]  # fmt: skip
    state = "yes" if not results.problems else f"{len(results.problems)} problems"
    table.append(("counts right, same bytes", state, "", not results.problems))
    return table


def report(results: Results, args: argparse.Namespace) -> bool:
    """Print the table; True when every target is met."""
    table = rows(results)
    print(f"\nfeedbackd export: {args.decisions:,} decisions of one agent ({REVERTED} reverted,")
    print(f"{FORGOTTEN} lessons forgotten), drafts {args.batch} a commit; medians of", end=" ")
    print(f"{args.repeat}; git {git_version()}")
    print(f"{'measure':<32} {'value':<28} {'target':<10} met")
    for name, value, target, met in table:
        mark = "" if met is None else ("yes" if met else "NO")
        print(f"{name:<32} {value:<28} {target:<10} {mark}")
    for problem in results.problems:
        print(f"problem: {problem}")
    return all(met for *_, met in table if met is not None)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.bench_export", description=__doc__)
    parser.add_argument("--decisions", type=int, default=100_000, help="decisions of the agent")
    parser.add_argument("--batch", type=int, default=10, help="drafts per draft commit")
    parser.add_argument("--repeat", type=int, default=3, help="exports of each format measured")
    parser.add_argument("--keep", type=Path, help="build the workspace here and keep it")
    args = parser.parse_args(argv)
    if args.decisions < 2 * (REVERTED + FORGOTTEN * 2) or args.batch < 1 or args.repeat < 1:
        parser.error(f"--decisions at least {2 * (REVERTED + FORGOTTEN * 2)}; --batch, --repeat 1")
    return args


def run(args: argparse.Namespace, work: Path) -> bool:
    root = work / "ws"
    print(f"building a history of {args.decisions:,} decisions in {root}", flush=True)
    started = time.perf_counter()
    build(root, args)
    print(f"built in {time.perf_counter() - started:.0f} s", flush=True)
    results = Results()
    measure(root, args, results)
    return report(results, args)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    return in_work_folder(lambda work: run(args, work), args.keep, "feedbackd-bench-export-")


if __name__ == "__main__":
    sys.exit(main())
