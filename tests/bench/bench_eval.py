"""Benchmark of `feedbackd eval` and `feedbackd bisect` over a long history (SPEC section 14).

Run: `python -m tests.bench.bench_eval [--decisions 10000] [--items 50] [--repeat 3]
[--keep DIR]`. The sizes of issue #40 are the defaults.

A workspace made by `feedbackd init` gets, written with `git fast-import`, the history of one
agent's `--decisions` decisions: drafts arrive ten at a time in a `draft` commit, each is
decided in a commit of its own (one in ten a rejection) with the trailers feedbackd writes, and
each approval changes feedback.json and the snippet as feedbackd does: the curator corrects the
title (each item's own) and the excerpt, which every draft starts as "About this post.". The
curators correct the excerpt to a good one, except from decision D-1000 to D-300, where one of
them corrects it to a bad one; the decided files and the ledger come in a last commit (see
bench_export.py for why).

The agent command answers at once: a small Python script that applies each
`Original:`/`Corrected:` pair of its snippet to the draft (the latest pair wins). Measured,
medians of `--repeat`, from start to exit of the command line:
- `eval w --items 50` with no answer kept (cold: 100 runs of the command, 4 at once);
- the same again, every answer kept;
- `bisect w --good G --bad B --items 50` with no answer kept, G the decision D-1500 and B the
  decision D-300: over a thousand candidates; it must name the first bad decision (D-1000's)
  within ⌈log2(candidates + 1)⌉ + 2 evaluated revisions.
Prints a table (measure, value, target, met); exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from feedbackd.core.config import PromptSettings
from feedbackd.core.curation.feedback import FeedbackEntry
from feedbackd.core.curation.prompts import render_snippet
from tests.bench.bench_startup import bench_env, data_block, feedbackd_command, git, git_version
from tests.bench.workfolder import in_work_folder

AGENT = "w"
FOLDER = f"_data/agents/{AGENT}"
START = 1767225600  # 2026-01-01, the history's first second
CURATOR = "Ada Curator <ada@example.org>"
DRAFTED, GOOD, BAD = "About this post.", "Read why this matters to you.", "Buy now!!! Offer!!!"
KEPT_ENTRIES = 20  # feedback.json's last entries, as the history holds them
TARGETS = {"cold": 10.0, "cached": 1.0, "bisect": 60.0}
AGENT_SCRIPT = """import json, sys
request = json.load(sys.stdin)
draft, answer, original = request["draft"], dict(request["draft"]), None
for line in request["snippet"].splitlines():
    if line.startswith("Original: "):
        original = line[len("Original: "):]
    elif line.startswith("Corrected: ") and original is not None:
        for name, value in draft.items():
            if value == original:
                answer[name] = line[len("Corrected: "):]
        original = None
print(json.dumps(answer))
"""


@dataclass
class Results:
    cold: list[float] = field(default_factory=list)
    cached: list[float] = field(default_factory=list)
    bisect: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    candidates: int = 0
    steps: int = 0


# --- the history -------------------------------------------------------------------------------
def item(number: int) -> str:
    return f"qi-{number:06d}"


def rejected(number: int) -> bool:
    return number % 10 == 9


def excerpt(number: int, args: argparse.Namespace) -> str:
    """What the curator made of the excerpt: the slip from D-1000 up to D-300."""
    return BAD if args.decisions - 1000 <= number < args.decisions - 300 else GOOD


def content(number: int, text: str, title: str | None = None) -> dict[str, str]:
    return {"title": title or f"Draft title {number}", "excerpt": text}


def doc_bytes(number: int, body: dict[str, str], **extra: str) -> bytes:
    doc = {"id": item(number), "collection": "posts", "slug": f"post-{number}", **extra}
    return (json.dumps({**doc, "contentData": body}, indent=2) + "\n").encode()


def commit_block(message: str, when: int, changes: list[bytes]) -> bytes:
    head = b"commit refs/heads/main\n"
    head += f"author {CURATOR} {when} +0000\ncommitter {CURATOR} {when} +0000\n".encode()
    return head + data_block(message.encode()) + b"".join(changes)


def decision_message(number: int) -> str:
    name = item(number)
    if rejected(number):
        subject, event = f"reject({AGENT}): {name}", "reject"
    else:
        subject, event = f"approve({AGENT}): {name}, 2 corrections (title, excerpt)", "approve"
    trailers = f"Feedback-Event: {event}\nFeedback-Agent: {AGENT}\nFeedback-Item: {name}"
    return f"{subject}\n\n{trailers}\n"


def lesson_files(entries: list[FeedbackEntry]) -> list[bytes]:
    feedback = json.dumps([e.to_json() for e in entries], indent=2) + "\n"
    snippet = render_snippet(entries, PromptSettings())
    return [
        f"M 100644 inline {FOLDER}/feedback.json\n".encode() + data_block(feedback.encode()),
        f"M 100644 inline {FOLDER}/prompt/feedback.md\n".encode()
        + data_block((snippet + "\n").encode()),
    ]


def history(args: argparse.Namespace) -> Iterator[bytes]:
    yield b"reset refs/heads/main\nfrom refs/heads/main^0\n\n"
    when, entries = START, []
    for first in range(0, args.decisions, 10):
        batch = range(first, min(first + 10, args.decisions))
        added = [
            f"M 100644 inline {FOLDER}/queue/{item(n)}.json\n".encode()
            + data_block(doc_bytes(n, content(n, DRAFTED)))
            for n in batch
        ]
        message = f"draft({AGENT}): {len(batch)} new drafts\n\nFeedback-Event: draft\n"
        yield commit_block(message + f"Feedback-Agent: {AGENT}\n", when, added)
        for number in batch:
            when += 60
            changes = [f"D {FOLDER}/queue/{item(number)}.json\n".encode()]
            if not rejected(number):
                entries = (entries + corrections(number, when, args))[-KEPT_ENTRIES:]
                changes += lesson_files(entries)
            yield commit_block(decision_message(number), when, changes)
    yield commit_block("the agent's folder as the decisions left it\n", when + 60, [])
    yield from final(args)


def corrections(number: int, when: int, args: argparse.Namespace) -> list[FeedbackEntry]:
    at = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(when))
    pairs = [("title", f"Draft title {number}", f"A better title for item {number}"),
             ("excerpt", DRAFTED, excerpt(number, args))]  # fmt: skip
    return [
        FeedbackEntry(
            id=f"fb-{when}000-{number:06d}"[:24] + f"{n}",
            type="correction",
            queueItemId=item(number),
            field=name,
            original=old,
            corrected=new,
            createdAt=at,
        )
        for n, (name, old, new) in enumerate(pairs)
    ]


def final(args: argparse.Namespace) -> Iterator[bytes]:
    ledger = []
    for number in range(args.decisions):
        folder = "rejected" if rejected(number) else "approved"
        extra = {"rejectionFeedback": "Off-topic."} if rejected(number) else {}
        title = None if rejected(number) else f"A better title for item {number}"
        body = content(number, DRAFTED if rejected(number) else excerpt(number, args), title)
        yield f"M 100644 inline {FOLDER}/{folder}/{item(number)}.json\n".encode()
        yield data_block(doc_bytes(number, body, **extra))
        at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(START + 60 * (number + 1)))
        record = {"id": f"dc-{number:08d}", "item": item(number), "state": folder,
                  "at": f"{at}.000Z", "file": f"{FOLDER}/{folder}/{item(number)}.json",
                  "curator": CURATOR}  # fmt: skip
        ledger.append(json.dumps(record) + "\n")
    yield f"M 100644 inline {FOLDER}/decisions.jsonl\n".encode()
    yield data_block("".join(ledger).encode())


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
    (root.parent / "agent.py").write_text(AGENT_SCRIPT)


def decision_commit(root: Path, number: int) -> str:
    out = git(root, "log", "--format=%H", f"--grep=^Feedback-Item: {item(number)}$", "HEAD")
    return out.split()[0]


# --- measurements ------------------------------------------------------------------------------
def timed(root: Path, *args: str) -> tuple[float, str]:
    command = feedbackd_command(
        root, *args, "--command", f"{sys.executable} {root.parent}/agent.py"
    )
    started = time.perf_counter()
    done = subprocess.run(command, cwd=root, env=bench_env(root.parent), capture_output=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed: {done.stderr.decode(errors='replace')}")
    return seconds, done.stdout.decode()


def forget_answers(root: Path) -> None:
    shutil.rmtree(root / ".feedbackd" / "eval", ignore_errors=True)


def measure(root: Path, args: argparse.Namespace, results: Results) -> None:
    eval_args = ("eval", AGENT, "--items", str(args.items), "--json")
    for number in range(args.repeat):
        print(f"eval, round {number + 1} of {args.repeat}", flush=True)
        forget_answers(root)
        seconds, out = timed(root, *eval_args)
        results.cold.append(seconds)
        report = json.loads(out)
        # The excerpt is learned; each title is its own, and no lesson teaches it.
        if report["failed"] or report["fields"]["excerpt"] != 1.0 or report["delta"] <= 0:
            results.problems.append(f"eval: {report['fields']=} {report['delta']=}")
        results.cached.append(timed(root, *eval_args)[0])
    good = decision_commit(root, args.decisions - 1501)  # an approval (…8)
    bad = decision_commit(root, args.decisions - 301)
    slip = decision_commit(root, args.decisions - 1000)
    for number in range(args.repeat):
        print(f"bisect, round {number + 1} of {args.repeat}", flush=True)
        forget_answers(root)
        bisect_args = ("bisect", AGENT, "--good", good, "--bad", bad, "--items", str(args.items))
        seconds, out = timed(root, *bisect_args, "--json")
        results.bisect.append(seconds)
        check_bisect(json.loads(out), slip, results)


def check_bisect(report: dict[str, object], slip: str, results: Results) -> None:
    results.candidates = int(report["candidates"])  # type: ignore[call-overload]
    results.steps = len(report["steps"])  # type: ignore[arg-type]
    first = report["first_bad"]
    if not isinstance(first, dict) or first["commit"] != slip:
        results.problems.append(f"bisect named {first!r}, not {slip}")
    if results.steps > math.ceil(math.log2(results.candidates + 1)) + 2:
        results.problems.append(f"bisect evaluated {results.steps} revisions")


# --- report ------------------------------------------------------------------------------------
def report(results: Results, args: argparse.Namespace) -> bool:
    bound = math.ceil(math.log2(results.candidates + 1)) + 2
    table = [
        (f"eval --items {args.items}, cold", statistics.median(results.cold), "cold"),
        (f"eval --items {args.items}, all kept", statistics.median(results.cached), "cached"),
        (f"bisect, {results.candidates} candidates, cold", statistics.median(results.bisect),
         "bisect"),
    ]  # fmt: skip
    print(f"\nfeedbackd eval and bisect: {args.decisions:,} decisions of one agent, an agent")
    print(f"command that answers at once; medians of {args.repeat}; git {git_version()}")
    print(f"{'measure':<36} {'value':<10} {'target':<10} met")
    met = True
    for name, seconds, key in table:
        ok = seconds <= TARGETS[key]
        met &= ok
        print(f"{name:<36} {seconds:<10.2f} ≤ {TARGETS[key]:<8g} {'yes' if ok else 'NO'}")
    print(f"{'bisect: revisions evaluated':<36} {results.steps:<10} ≤ {bound:<8} "
          f"{'yes' if results.steps <= bound else 'NO'}")  # fmt: skip
    for problem in results.problems:
        print(f"problem: {problem}")
    return met and not results.problems


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.bench_eval", description=__doc__)
    parser.add_argument("--decisions", type=int, default=10_000, help="decisions of the agent")
    parser.add_argument("--items", type=int, default=50, help="items eval and bisect run")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measure")
    parser.add_argument("--keep", type=Path, help="build the workspace here and keep it")
    args = parser.parse_args(argv)
    if args.decisions < 2000 or args.items < 1 or args.repeat < 1:
        parser.error("--decisions at least 2000; --items and --repeat at least 1")
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
    return in_work_folder(lambda work: run(args, work), args.keep, "feedbackd-bench-eval-")


if __name__ == "__main__":
    sys.exit(main())
