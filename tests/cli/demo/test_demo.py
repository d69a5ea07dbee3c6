"""`make run`'s demo workspace: its history reads as the README's tour tells it."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from feedbackd.cli import demo
from tests.cli_kit import run_cli
from tests.conftest import git
from tests.repo_kit import ROOT
from tests.web_kit import serving
from tests.workspace_kit import SAVED_AGO_S


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo workspace as `make run` builds it, once for the module's tests to read."""
    root = tmp_path_factory.mktemp("demo") / "demo"
    demo.build(root)
    return root


def json_of(root: Path, *argv: str) -> Any:
    done = run_cli(["-w", str(root), *argv, "--json"])
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_demo_holds_eight_weeks_of_two_agents_decisions(built: Path) -> None:
    for agent in ("content-writer", "seo-helper"):
        weeks = json_of(built, "stats", agent, "--since", "9w")["periods"]
        decided = [week for week in weeks if week["decided"]]
        assert len(decided) == 8, weeks  # a point a week on the chart, for each agent
        rates = [week["unedited_rate"] for week in decided]
        assert rates[-1] > rates[0]  # something to judge: the agent got better
        assert sum(week["rejected"] for week in decided) > 0
        assert all(week["median_decision_s"] > 3600 for week in decided)  # decided days later
    authors = git(built, "log", "--format=%an", "--grep=^Feedback-Event: approve$").split("\n")
    assert {"Maya Chen", "Tom Okafor"} <= set(authors)


def test_the_demos_decisions_are_dated_when_they_were_made(built: Path) -> None:
    """Each decision's time in its ledger is its commit's date: the history was made through the
    passes at those times, not written afterwards."""
    agent = built / "_data/agents/seo-helper"
    lines = (agent / "decisions.jsonl").read_text().splitlines()
    ledger = {record["item"]: record for record in map(json.loads, lines)}
    assert len(ledger) == 24
    for item in ("sku-4301", "sku-4324"):
        commit = git(built, "log", "-1", "--format=%aI", f"--grep=^Feedback-Item: {item}$")
        committed = datetime.fromisoformat(commit.strip())
        decided = datetime.fromisoformat(ledger[item]["at"].replace("Z", "+00:00"))
        assert abs((committed - decided).total_seconds()) < 1
        assert committed < datetime.now(UTC) - timedelta(days=7)


def test_the_demos_drafts_carry_their_brief_and_lessons_fit_the_task(built: Path) -> None:
    rows = [json.loads(line) for line in exported(built, "seo-helper", "openai-sft")]
    assert rows and all(row["messages"][0]["content"].startswith("Product page") for row in rows)
    task = built / "_data/agents/seo-helper/queue/sku-4410.json"  # a backpack
    examples = json_of(built, "prompt", "seo-helper", "--for", str(task))["examples"]
    assert any("pack" in example["corrected"] for example in examples)


def exported(root: Path, agent: str, export_format: str) -> list[str]:
    done = run_cli(["-w", str(root), "export", agent, "--format", export_format])
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_tours_drafts_wait_for_the_daemon_and_decide_into_kept_files(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    demo.build(root)
    agent = "_data/agents/content-writer"
    assert git(root, "status", "--porcelain", "--", f"{agent}/queue").startswith("??")
    assert run_cli(["-w", str(root), "run", "--once"]).returncode == 0
    drafted = git(root, "log", "-1", "--format=%s", "--", f"{agent}/queue/qi-101.json")
    assert drafted.startswith("draft(content-writer)")

    # The first decision of the tour (and a `git revert` of it) changes the feedback files
    # the history made, never creates them.
    assert git(root, "ls-files", f"{agent}/feedback.json", f"{agent}/prompt/feedback.md")
    moved = root / agent / "approved" / "qi-101.json"
    (root / agent / "queue" / "qi-101.json").rename(moved)
    os.utime(moved, (time.time() - SAVED_AGO_S,) * 2)  # saved long ago: settled
    assert run_cli(["-w", str(root), "run", "--once"]).returncode == 0
    subjects = git(root, "log", "--format=%s").splitlines()
    assert subjects[0].startswith("approve(content-writer): qi-101")
    assert not [subject for subject in subjects if subject.startswith("sync(")]


def test_the_lessons_of_week_6_would_have_helped_later_approvals(built: Path) -> None:
    """`eval` with the demo's eval.command (builtin:apply-lessons): the lessons as of the end of
    week 6 would have saved part of the corrections of weeks 7 and 8."""
    report = json_of(built, "eval", "content-writer", "--items", "6")
    assert report["failed"] == 0 and report["items"] == 6
    assert report["delta"] > 0 and report["ci95"][0] > 0
    week_7 = git(built, "log", "-1", "--format=%H", "--grep=^Feedback-Item: qi-019$").strip()
    assert git(built, "rev-parse", f"{week_7}^").strip() == report["at"]


def test_bisect_names_the_slip_of_week_7(built: Path) -> None:
    """A week later the lessons do worse than none; bisect names Tom's paste into a post's call
    to action, and says how to take it back."""
    good = json_of(built, "eval", "content-writer", "--items", "6")["at"]
    worse = json_of(built, "eval", "content-writer", "--items", "3", "--against", good)
    assert worse["delta"] < 0 and worse["ci95"][1] < 0
    found = json_of(built, "bisect", "content-writer", "--good", good, "--bad", worse["at"])
    first = found["first_bad"]
    assert first["item"] == "qi-021" and first["curator"] == "Tom Okafor <tom@example.org>"
    assert [entry["field"] for entry in first["entries"]] == ["cta"]
    assert first["entries"][0]["corrected"].startswith("Free shipping")
    assert len(found["steps"]) <= 4  # ⌈log2(3 + 1)⌉ + 2 for its three candidates
    assert found["todo"][0] == f"feedbackd forget content-writer {first['entries'][0]['id']}"


# --- docs/learning.md's worked example, run as it is written ------------------------------------
LEARNING = ROOT / "docs" / "learning.md"
# What differs from one build of the demo to the next: revisions and entry ids.
VARYING = re.compile(r"\b[0-9a-f]{7,40}\b|\bfb-[0-9]+-[a-z0-9]+\b")


def worked_example() -> list[tuple[str, str]]:
    """Each `$ command` of the section with the output printed under it (a console block with
    a command alone is followed by its output as a json block)."""
    text = LEARNING.read_text(encoding="utf-8")
    start = text.index("### A worked example")
    section = text[start : text.index("\nHow long it takes", start)]
    blocks = re.findall(r"```(console|json)\n(.*?)```", section, flags=re.DOTALL)
    steps: list[tuple[str, str]] = []
    for kind, body in blocks:
        if kind == "json":
            steps[-1] = (steps[-1][0], body)
            continue
        for chunk in re.split(r"^\$ ", body, flags=re.MULTILINE)[1:]:
            command, _, printed = chunk.partition("\n")
            steps.append((command, printed))
    return steps


class Revisions:
    """The docs' revisions and entry ids, and this build's, paired as the outputs show them."""

    def __init__(self) -> None:
        self.known: dict[str, str] = {}

    def into_this_build(self, command: str) -> str:
        return VARYING.sub(lambda found: self.known.get(found[0], found[0]), command)

    def same(self, written: str, printed: str) -> bool:
        """Equal but for what varies, each varying part in the docs standing for one here."""
        if VARYING.sub("#", written) != VARYING.sub("#", printed):
            return False
        for ours, theirs in zip(VARYING.findall(written), VARYING.findall(printed), strict=True):
            if self.known.setdefault(ours, theirs) != theirs:
                return False
        return True


def run_step(root: Path, command: str, port: int) -> str:
    if command.startswith("feedbackd "):
        done = run_cli(["-w", str(root), *shlex.split(command)[1:]])
    else:  # curl or git, through a pipe into jq, as a reader pastes them
        pasted = command.replace("localhost:8787", f"localhost:{port}")
        done = subprocess.run(
            ["bash", "-c", f"set -euo pipefail\n{pasted}"],
            cwd=root, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 0, (command, done.stderr)
    return done.stdout


@pytest.mark.skipif(shutil.which("jq") is None, reason="the example pipes into jq")
def test_the_worked_example_of_the_docs_is_what_the_demo_prints(built: Path) -> None:
    steps = worked_example()
    assert len(steps) >= 8
    revisions = Revisions()
    with serving(built) as client:
        for command, written in steps:
            printed = run_step(built, revisions.into_this_build(command), client.port)
            if written.lstrip().startswith("{") and not command.startswith("curl"):
                printed = json.dumps(json.loads(printed), separators=(",", ":"))
                written = json.dumps(json.loads(written), separators=(",", ":"))
            assert revisions.same(written, printed), (command, written, printed)
