"""`feedbackd bisect` (SPEC section 14): which decision made the lessons worse? A curator's slip
rewrites a good lesson into a bad one between two revisions; bisect names that decision, who made
it and its entries, within ⌈log2(candidates + 1)⌉ + 2 evaluated revisions, and says what to do.
Neither bisect nor eval touches the work tree, the index, HEAD, a branch or a `git bisect` the
user is in the middle of."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from feedbackd.core.evaluation.bisection import first_bad, most_steps
from tests.conftest import known_environment
from tests.eval_kit import AGENT, SLIP, a_slip_between, approve
from tests.workspace_kit import Site

BUILTIN = "builtin:apply-lessons"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Site, dict[str, str]]]:
    with known_environment(tmp_path_factory.mktemp("home")):
        site = Site(tmp_path_factory.mktemp("bisect") / "ws")
        yield site, a_slip_between(site)


@pytest.fixture
def site(made: tuple[Site, dict[str, str]], tmp_path: Path) -> Site:
    return made[0].copy_to(tmp_path / "ws")


@pytest.fixture
def revs(made: tuple[Site, dict[str, str]]) -> dict[str, str]:
    return made[1]


def bisect_json(site: Site, *args: str) -> dict[str, Any]:
    done = site.cli("bisect", AGENT, "--command", BUILTIN, *args, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_bisect_names_the_slip_and_what_to_do(site: Site, revs: dict[str, str]) -> None:
    report = bisect_json(site, "--good", revs["good"], "--bad", revs["bad"])
    assert report["good"] == revs["good"] and report["bad"] == revs["bad"]
    assert report["candidates"] == 3 and report["items"] == 4  # p6..p9, decided after bad
    first = report["first_bad"]
    assert first["commit"] == revs["slip"]
    assert first["subject"] == f"approve({AGENT}): p4, 1 correction (excerpt)"
    assert first["curator"] == "Ada Curator <ada@example.org>"
    assert first["item"] == "p4"
    [entry] = first["entries"]
    assert entry["field"] == "excerpt" and entry["corrected"] == SLIP
    assert report["todo"] == [
        f"feedbackd forget {AGENT} {entry['id']}",
        f"git revert {revs['slip'][:12]}",
    ]
    steps = report["steps"]
    assert [s["commit"] for s in steps[:2]] == [revs["good"], revs["bad"]]
    assert steps[0]["score"] > steps[1]["score"]
    assert len(steps) <= math.ceil(math.log2(3 + 1)) + 2


def test_the_human_form_names_the_decision(site: Site, revs: dict[str, str]) -> None:
    done = site.cli("bisect", AGENT, "--command", BUILTIN, "--good", revs["good"],
                    "--bad", revs["bad"])  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"first bad decision: {revs['slip'][:12]} approve({AGENT}): p4" in done.stdout
    assert "by Ada Curator <ada@example.org>, item p4" in done.stdout
    assert f"to undo it: git revert {revs['slip'][:12]}" in done.stdout


def test_a_bad_that_is_not_worse_exits_1(site: Site, revs: dict[str, str]) -> None:
    done = site.cli("bisect", AGENT, "--command", BUILTIN, "--good", revs["good"],
                    "--bad", f"{revs['slip']}^", "--json")  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    error = json.loads(done.stdout or done.stderr)
    assert error["error"] == "not_worse" and "not below" in error["message"]


@pytest.mark.parametrize(
    ("good", "bad", "code", "said"),
    [
        ("nope~~", "HEAD~2", 2, "--good 'nope~~' is neither"),
        ("HEAD~2", "HEAD~4", 2, "is not before --bad"),
        ("HEAD~4", "HEAD", 1, "no approval of writer was decided after --bad"),
    ],
)
def test_bad_revisions_are_clear_errors(
    site: Site, good: str, bad: str, code: int, said: str
) -> None:
    done = site.cli("bisect", AGENT, "--command", BUILTIN, "--good", good, "--bad", bad)
    assert done.returncode == code, done.stdout + done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr


def state(site: Site) -> dict[str, str]:
    """Everything of the user's that eval and bisect must leave as it was."""
    git_dir = site.root / ".git"
    return {
        "head": (git_dir / "HEAD").read_text(),
        "refs": site.git(
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/heads",
            "refs/tags",
            "refs/bisect",
        ),
        "status": site.git("status", "--porcelain=v1", "--untracked-files=all"),
        "index": site.git("ls-files", "--stage", "--debug"),
        "diff": site.git("diff"),
        "staged": site.git("diff", "--cached"),
        "bisect_log": site.git("bisect", "log"),
        "bisect_files": "".join(
            f"{p.name}:{p.read_text()}" for p in sorted(git_dir.glob("BISECT_*"))
        ),
        "work_tree": "".join(
            f"{p.relative_to(site.root)}:{p.read_bytes()!r}\n"
            for p in sorted(site.root.rglob("*"))
            if p.is_file() and ".git" not in p.parts and ".feedbackd" not in p.parts
        ),
    }


def test_eval_and_bisect_leave_the_users_git_and_files_alone(
    site: Site, revs: dict[str, str], tmp_path: Path
) -> None:
    # The user is in the middle of their own `git bisect` (--no-checkout: HEAD stays on the
    # branch, git moves BISECT_HEAD), with a staged and an unstaged change and an untracked file.
    site.git("bisect", "start", "--no-checkout", "HEAD", revs["good"])
    (site.root / "notes.txt").write_text("mine\n")
    (site.root / "feedbackd.yaml").write_text((site.root / "feedbackd.yaml").read_text() + "\n")
    site.git("add", "feedbackd.yaml")
    (site.root / "feedbackd.yaml").write_text((site.root / "feedbackd.yaml").read_text() + "#\n")
    before = state(site)
    assert "git bisect start" in before["bisect_log"] and before["bisect_files"]
    bisect_json(site, "--good", revs["good"], "--bad", revs["bad"])
    done = site.cli("eval", AGENT, "--command", BUILTIN, "--at", revs["good"], "--note")
    assert done.returncode == 0, done.stderr
    assert state(site) == before


def test_the_search_stays_within_its_bound() -> None:
    """However many candidates and wherever the first bad one, at most ⌈log2(n + 1)⌉ of them
    are evaluated, and the first bad one is found when the scores fall once and stay down."""
    for count in (1, 2, 3, 7, 8, 100, 1000):
        for slip in sorted({0, count // 2, count - 1}):
            asked: list[int] = []

            def score(n: int, slip: int = slip, asked: list[int] = asked) -> float:
                asked.append(n)
                return 0.5 if n >= slip else 1.0

            assert first_bad(count, 1.0, 0.5, score, last_is_bad=False) == slip
            assert len(asked) <= most_steps(count) - 2


def test_a_later_approval_of_the_same_slip_is_still_found(site: Site) -> None:
    """A revision that scores halfway back counts by which score it is closer to."""
    good = site.git("rev-parse", "HEAD").strip()
    slip = approve(site, 20, SLIP, first="Read why this matters to you.")
    bad = site.git("rev-parse", "HEAD").strip()
    for number in range(21, 23):
        approve(site, number, "Read why this matters to you.")
    report = bisect_json(site, "--good", good, "--bad", bad)
    assert report["first_bad"]["commit"] == slip
    assert report["candidates"] == 1 and len(report["steps"]) == 2  # the slip is bad itself


def test_the_slip_workspace_says_what_it_always_said(site: Site, revs: dict[str, str]) -> None:
    """eval_kit's slip, evaluated and bisected: the figures it has always given (the worked
    example of docs/learning.md, on the demo, is tests/cli/demo/test_demo.py's)."""
    site.configure("eval:\n  command: builtin:apply-lessons\n")
    good, bad = revs["good"], revs["bad"]
    first = site.cli("eval", AGENT, "--at", good).stdout.splitlines()
    assert first == [
        f"lessons as of {good[:7]}: 0.93 vs 0.72 without lessons, +0.21 (95 % 0.13 to 0.30)"
        " on 7 later approvals",
        "  by field: excerpt 0.90 (vs 0.47), title 0.96 (vs 0.96)",
    ]
    worse = site.cli("eval", AGENT, "--at", bad, "--against", good).stdout.splitlines()
    assert worse[0] == (
        f"lessons as of {bad[:7]}: 0.66 vs 1.00 with those of {good[:7]}, -0.34"
        " (95 % -0.34 to -0.34) on 4 later approvals"
    )
    found = site.cli("bisect", AGENT, "--good", good, "--bad", bad).stdout.splitlines()
    assert found[0] == "3 candidates, 4 items; scores:"
    assert [line.split()[1] for line in found[1:5]] == ["1.0000", "0.6607", "1.0000", "0.6607"]
    assert found[5].startswith(f"first bad decision: {revs['slip'][:12]} approve({AGENT}): p4")
    short = site.cli("eval", AGENT, "--at", good, "--items", "2", "--json").stdout
    report = json.loads(short)
    assert (report["score"], report["delta"], report["ci95"]) == (0.8304, 0.15, [0.0, 0.3])


def test_a_failing_command_is_eval_failed_not_a_traceback(
    site: Site, revs: dict[str, str], tmp_path: Path
) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text("import sys\nsys.exit('no model here')\n")
    done = site.cli("bisect", AGENT, "--command", f"{sys.executable} {agent}",
                    "--good", revs["good"], "--bad", revs["bad"])  # fmt: skip
    assert done.returncode == 1
    assert "eval_failed" in done.stderr and "exit status 1: no model here" in done.stderr
    assert "Traceback" not in done.stderr
