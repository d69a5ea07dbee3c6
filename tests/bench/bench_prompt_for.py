"""Benchmark of `prompt --for`: the snippet chosen for a task among 10,000 lessons.

Run: `python -m tests.bench.bench_prompt_for [--entries 10000] [--calls 30] [--cli 5]`.

A workspace made by `feedbackd init` whose feedbackd.yaml keeps `--entries` entries and shows
rejection notes: one agent with that many lessons in feedback.json (nine corrections to one
rejection), each from its own item in approved/ or rejected/ (a title and a body of about 120
words; the words drawn from a vocabulary of 8,000 with the skew of natural language). Each task
is some 150 words: 60 from one item's body, the rest drawn at random.

In one process, as the HTTP API and an agent runner using the Python API call it: the first
call (which reads every item and builds the index), then `--calls` calls with other tasks, each
timed, against the plain snippet (`prompt AGENT`, which reads prompt/feedback.md) and section
5's snippet rendered from the same feedback.json, in the same run. Each task's own lesson must
come last (the most relevant). Then `--cli` runs of `feedbackd prompt AGENT --for FILE` from
start to exit against `feedbackd prompt AGENT`: each command is a first call. Prints medians
and ratios; exits 1 when the median call after the first is over the target.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from feedbackd.app.commands.promptfor import prompt_for
from feedbackd.app.commands.queries import prompt_text
from feedbackd.app.workspace.agentfiles import read_feedback
from feedbackd.app.workspace.init import init_workspace
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.curation.prompts import render_snippet
from tests.bench.workfolder import in_work_folder

TARGET_S = 0.100
AGENT = "writer"
VOCABULARY = 8000
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "an", "el", "or", "ub", "py", "dex"]


class Words:
    """Pseudo-words with the skew of natural language: the n-th most common is drawn about 1/n
    as often as the most common (Zipf)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.words = sorted({self._word(n) for n in range(VOCABULARY * 2)})[:VOCABULARY]
        rng.shuffle(self.words)
        self.weights = [1 / (rank + 1) for rank in range(len(self.words))]

    def _word(self, n: int) -> str:
        parts = []
        while True:
            parts.append(SYLLABLES[n % len(SYLLABLES)])
            n //= len(SYLLABLES)
            if n == 0:
                return "".join(parts)

    def text(self, count: int) -> str:
        return " ".join(self.rng.choices(self.words, self.weights, k=count))


def lesson(n: int, words: Words) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The entry of lesson n, its item file's document, and the folder the item is in."""
    created = f"2026-{1 + n // 28 // 24 % 12:02d}-{1 + n // 24 % 28:02d}T{n % 24:02d}:00:00.000Z"
    base = {"id": f"fb-1775635{n:06d}-k3j9x2", "queueItemId": f"qi-{n}", "createdAt": created}
    title, body = words.text(8), words.text(120)
    if n % 10 == 9:
        notes = words.text(12)
        entry = {**base, "type": "rejection", "notes": notes}
        return entry, {"contentData": {"title": title, "body": body}}, "rejected"
    corrected = words.text(8)
    entry = {**base, "type": "correction", "field": "title", "original": title}
    entry["corrected"] = corrected
    doc = {
        "contentData": {"title": corrected, "body": body},
        "originalContentData": {"title": title},
    }
    return entry, doc, "approved"


def prepare(root: Path, entries: int, rng: random.Random) -> list[tuple[int, str]]:
    """The workspace; returns tasks as (the lesson each is drawn from, its text)."""
    init_workspace(root)
    with open(root / "feedbackd.yaml", "a", encoding="utf-8") as config:
        config.write(f"feedback:\n  max_entries: {entries}\n")
        config.write("prompt:\n  include_rejections: true\n")
    agent = root / "_data" / "agents" / AGENT
    words = Words(rng)
    feedback = []
    bodies = {}
    for n in range(entries):
        entry, doc, folder = lesson(n, words)
        (agent / folder).mkdir(parents=True, exist_ok=True)
        (agent / folder / f"qi-{n}.json").write_text(json.dumps(doc, indent=2) + "\n")
        feedback.append(entry)
        if entry["type"] == "correction":
            bodies[n] = doc["contentData"]["body"]
    (agent / "feedback.json").write_text(json.dumps(feedback, indent=2) + "\n")
    entries_list = read_feedback(agent / "feedback.json")
    snippet = render_snippet(entries_list, Runtime.open(str(root), None).settings.prompt)
    (agent / "prompt").mkdir(exist_ok=True)
    (agent / "prompt" / "feedback.md").write_text(snippet)
    tasks = []
    for n in rng.sample(sorted(bodies), 64):
        own = bodies[n].split()
        tasks.append((n, " ".join(rng.sample(own, 60)) + " " + words.text(90)))
    return tasks


def timed_calls(runtime: Runtime, tasks: list[tuple[int, str]]) -> list[float]:
    """Each call's time; checks that the task's own lesson is the last example."""
    times = []
    for n, task in tasks:
        start = time.perf_counter()
        text = prompt_for(runtime, AGENT, task)
        times.append(time.perf_counter() - start)
        last = text.split("## Things to avoid")[0].rstrip("\n").rsplit("Corrected: ", 1)[-1]
        if not _is_lesson(runtime, n, last):
            raise SystemExit(f"the task drawn from lesson {n} did not get it last:\n{text}")
    return times


def _is_lesson(runtime: Runtime, n: int, corrected: str) -> bool:
    agent = runtime.workspace.agent(AGENT)
    doc = json.loads((agent.approved / f"qi-{n}.json").read_text())
    return bool(doc["contentData"]["title"] == corrected)


def baselines(runtime: Runtime, calls: int) -> tuple[list[float], list[float]]:
    """The plain snippet as `prompt AGENT` reads it, and section 5's rendered from feedback.json."""
    plain, rendered = [], []
    feedback = runtime.workspace.agent(AGENT).feedback
    for _ in range(calls):
        start = time.perf_counter()
        prompt_text(runtime, AGENT)
        plain.append(time.perf_counter() - start)
        start = time.perf_counter()
        render_snippet(read_feedback(feedback), runtime.settings.prompt)
        rendered.append(time.perf_counter() - start)
    return plain, rendered


def command_times(root: Path, task: str, runs: int) -> tuple[list[float], list[float]]:
    """`feedbackd prompt AGENT --for FILE` and `feedbackd prompt AGENT`, start to exit."""
    task_file = root / "task.txt"
    task_file.write_text(task)
    base = [sys.executable, "-m", "feedbackd", "-w", str(root), "prompt", AGENT]
    with_for, plain = [], []
    for _ in range(runs):
        for argv, times in (([*base, "--for", str(task_file)], with_for), (base, plain)):
            start = time.perf_counter()
            subprocess.run(argv, capture_output=True, check=True)
            times.append(time.perf_counter() - start)
    return with_for, plain


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def run(work: Path, args: argparse.Namespace) -> bool:
    rng = random.Random(27)
    root = work / "ws"
    tasks = prepare(root, args.entries, rng)
    runtime = Runtime.open(str(root), None)
    first = timed_calls(runtime, tasks[:1])[0]
    calls = timed_calls(runtime, tasks[1 : 1 + args.calls])
    plain, rendered = baselines(runtime, args.calls)
    cli_for, cli_plain = command_times(root, tasks[-1][1], args.cli)
    median = statistics.median(calls)
    print(f"prompt --for among {args.entries:,} lessons (nine corrections to one rejection),")
    print(f"{args.calls} tasks of about 150 words after the first, medians (p90)")
    print(f"{'first call (reads items, builds index)':44}{ms(first)}")
    print(f"{'each call after the first':44}{ms(median)} ({ms(_p90(calls)).strip()})")
    plain_s, rendered_s = statistics.median(plain), statistics.median(rendered)
    print(f"{'plain snippet (prompt AGENT, the file)':44}{ms(plain_s)}")
    print(f"{'section 5 snippet rendered from the json':44}{ms(rendered_s)}")
    print(f"{'--for / the plain snippet':44}{median / plain_s:8.1f} ×")
    print(f"{'--for / rendered from feedback.json':44}{median / rendered_s:8.2f} ×")
    print(f"command line, {args.cli} runs, start to exit (each a first call):")
    print(f"{'  feedbackd prompt AGENT --for FILE':44}{ms(statistics.median(cli_for))}")
    print(f"{'  feedbackd prompt AGENT':44}{ms(statistics.median(cli_plain))}")
    met = median <= TARGET_S
    print(
        f"target: median after the first ≤ {TARGET_S * 1000:.0f} ms: {'met' if met else 'MISSED'}"
    )
    return met


def _p90(times: list[float]) -> float:
    return sorted(times)[int(0.9 * (len(times) - 1))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.bench_prompt_for")
    parser.add_argument("--entries", type=int, default=10_000, help="lessons in feedback.json")
    parser.add_argument("--calls", type=int, default=30, help="timed tasks after the first")
    parser.add_argument("--cli", type=int, default=5, help="runs of the command line")
    parser.add_argument("--keep", type=Path, help="build the workspace here and keep it")
    args = parser.parse_args(argv)
    if args.calls > 62:
        parser.error("--calls: at most 62 (64 tasks are drawn)")
    return in_work_folder(lambda work: run(work, args), args.keep, "feedbackd-bench-")


if __name__ == "__main__":
    sys.exit(main())
