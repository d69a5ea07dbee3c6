"""`feedbackd eval` (SPEC section 14): would the lessons as of a revision have saved the curators
the corrections they made after it? A writer's curators correct the same excerpt again and again,
through the real pipeline and real git; the agent command is the built-in one or a real script
run as a process, and each way it can fail (an exit status, a hang, garbage, no program) makes
its items failed with the reason, never a traceback."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from feedbackd.core.evaluation.notes import note_with, report_of, reports_in
from tests.conftest import known_environment
from tests.eval_kit import AGENT, FIXED, lessons_then_later, post
from tests.workspace_kit import Site, draft

BUILTIN = "builtin:apply-lessons"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Site, str]]:
    """Two approvals that teach FIXED, then four more corrected the same way; made once."""
    with known_environment(tmp_path_factory.mktemp("home")):
        site = Site(tmp_path_factory.mktemp("eval") / "ws")
        between = lessons_then_later(site)
        yield site, between


@pytest.fixture
def site(made: tuple[Site, str], tmp_path: Path) -> Site:
    return made[0].copy_to(tmp_path / "ws")


@pytest.fixture
def between(made: tuple[Site, str]) -> str:
    return made[1]


def eval_json(site: Site, *args: str) -> dict[str, Any]:
    done = site.cli("eval", AGENT, *args, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def script(tmp_path: Path, name: str, body: str) -> str:
    """A Python agent command (the command line that runs it)."""
    path = tmp_path / name
    path.write_text("import json, sys, time\nrequest = json.load(sys.stdin)\n" + body)
    return f"{sys.executable} {path}"


# An agent that leaves the draft as it was, and counts its runs in a file beside it.
ECHO = (
    "with open(__file__ + '.runs', 'a') as runs:\n"
    "    runs.write(request['item'] + '\\n')\n"
    "print(json.dumps(request['draft']))\n"
)


def runs_of(command: str) -> list[str]:
    path = Path(command.split()[-1] + ".runs")
    return path.read_text().split() if path.exists() else []


def test_the_lessons_of_rev_score_the_approvals_decided_after_it(site: Site, between: str) -> None:
    report = eval_json(site, "--command", BUILTIN, "--at", between)
    assert report["agent"] == AGENT
    assert report["at"] == between
    # No leakage: p1 and p2 taught the lessons, only p3..p6 were decided after REV.
    assert [r["item"] for r in report["results"]] == ["p3", "p4", "p5", "p6"]
    assert report["items"] == 4 and report["failed"] == 0
    assert report["score"] == 1.0 and report["exact_rate"] == 1.0
    assert report["fields"] == {"excerpt": 1.0, "title": 1.0}
    against = report["against"]
    assert against["at"] is None and against["exact_rate"] == 0.0
    assert against["fields"]["title"] == 1.0 and against["fields"]["excerpt"] < 0.5
    assert report["delta"] == pytest.approx(1.0 - against["score"], abs=1e-4)
    assert report["ci95"] == [report["delta"], report["delta"]]  # the same gain on every item
    assert all(r["exact"] and r["score"] == 1.0 for r in report["results"])


def test_the_human_form_says_it_in_words(site: Site, between: str) -> None:
    done = site.cli("eval", AGENT, "--command", BUILTIN, "--at", between)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith(f"lessons as of {between[:7]}: 1.00 vs 0.")
    assert "without lessons, +0." in first and first.endswith("on 4 later approvals")
    assert "(95 % 0." in first


def test_by_default_rev_is_just_before_the_oldest_of_the_last_items(
    site: Site, between: str
) -> None:
    report = eval_json(site, "--command", BUILTIN, "--items", "4")
    p3_draft = site.git("rev-list", "--reverse", f"{between}..HEAD").split()[0]
    assert report["at"] == p3_draft  # the parent of p3's decision commit
    assert [r["item"] for r in report["results"]] == ["p3", "p4", "p5", "p6"]
    assert eval_json(site, "--command", BUILTIN, "--items", "2")["results"][0]["item"] == "p5"


def test_against_another_revision_and_fewer_items(site: Site, between: str) -> None:
    report = eval_json(site, "--command", BUILTIN, "--at", "HEAD~4", "--against", between)
    assert report["against"]["at"] == between
    assert report["delta"] == 0.0 and report["ci95"] == [0.0, 0.0]
    one = eval_json(site, "--command", BUILTIN, "--at", between, "--items", "1")
    assert [r["item"] for r in one["results"]] == ["p3"]


def test_relevant_examples_run_prompt_for_at_rev(site: Site, between: str) -> None:
    report = eval_json(site, "--command", BUILTIN, "--at", between, "--examples", "relevant")
    assert report["score"] == 1.0


def test_a_real_command_is_run_once_per_answer_then_cached(
    site: Site, between: str, tmp_path: Path
) -> None:
    command = script(tmp_path, "echo.py", ECHO)
    report = eval_json(site, "--command", command, "--at", between, "--jobs", "2")
    assert report["delta"] == 0.0  # an agent that ignores its lessons gains nothing by them
    assert report["against"]["fields"]["excerpt"] < 0.5
    assert sorted(runs_of(command)) == sorted(["p3", "p4", "p5", "p6"] * 2)
    assert eval_json(site, "--command", command, "--at", between) == report
    assert len(runs_of(command)) == 8  # every answer came from the cache
    # Newer lessons: p6 runs again with them; without lessons its answer is kept.
    eval_json(site, "--command", command, "--at", "HEAD~2")
    assert runs_of(command)[8:] == ["p6"]
    eval_json(site, "--command", command, "--at", "HEAD~2", "--no-cache")
    assert runs_of(command)[9:] == ["p6", "p6"]


KEEP = (
    "with open(__file__ + '.requests', 'a') as kept:\n"
    "    kept.write(json.dumps(request) + '\\n')\n"
    "print(json.dumps(request['draft']))\n"
)


def test_the_command_reads_the_task_and_the_snippet_of_rev(
    site: Site, between: str, tmp_path: Path
) -> None:
    """What the command reads: agent, item, INPUT, the snippet as REV held it, the draft."""
    command = script(tmp_path, "keep.py", KEEP)
    eval_json(site, "--command", command, "--at", between, "--items", "1", "--jobs", "1")
    lines = Path(command.split()[-1] + ".requests").read_text().splitlines()
    snippet = site.git("show", f"{between}:_data/agents/{AGENT}/prompt/feedback.md")
    assert FIXED in snippet
    task = {
        "agent": AGENT,
        "item": "p3",
        "input": 'Write the posts item "post-3".',
        "draft": {"title": "Post number 3", "excerpt": "About this post."},
    }
    assert [json.loads(line) for line in lines] == [
        {**task, "snippet": snippet},
        {**task, "snippet": ""},
    ]


# --- bad input ----------------------------------------------------------------------------------
FAILING = {
    "exit": (
        "sys.stderr.write('model unreachable\\n')\nsys.exit(3)\n",
        "exit status 3: model unreachable",
    ),
    "garbage": ("print('Sure! Here is your post:')\n", "not JSON"),
    "a list": ("print('[1, 2]')\n", "JSON object"),
    "hang": ("time.sleep(30)\n", "timed out after 0.5s"),
}


@pytest.mark.parametrize("way", sorted(FAILING))
def test_a_command_that_fails_fails_every_item_and_eval_exits_1(
    site: Site, between: str, tmp_path: Path, way: str
) -> None:
    body, reason = FAILING[way]
    # Only the hanging command meets the short deadline: on a busy machine a Python that
    # starts slowly must not be taken for one that hangs.
    site.configure(f"eval:\n  timeout_s: {0.5 if way == 'hang' else 60}\n")
    command = script(tmp_path, "agent.py", body)
    done = site.cli("eval", AGENT, "--command", command, "--at", between, "--items", "2", "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    error = json.loads(done.stdout or done.stderr)
    assert error["error"] == "eval_failed"
    assert reason in error["message"] and "p3" in error["message"]
    assert "Traceback" not in done.stderr


def test_a_missing_program_is_a_reason_too(site: Site, between: str) -> None:
    done = site.cli("eval", AGENT, "--command", "no-such-agent-program --flag", "--at", between)
    assert done.returncode == 1
    assert "eval_failed" in done.stderr and "cannot start 'no-such-agent-program'" in done.stderr
    assert "Traceback" not in done.stderr


HALF = (
    "if request['item'] == 'p4':\n    sys.exit('no answer for p4')\n"
    "print(json.dumps(request['draft']))\n"
)


def test_items_that_fail_are_listed_with_their_reason_and_the_rest_scored(
    site: Site, between: str, tmp_path: Path
) -> None:
    command = script(tmp_path, "half.py", HALF)
    report = eval_json(site, "--command", command, "--at", between)
    assert report["items"] == 4 and report["failed"] == 1
    failed = [r for r in report["results"] if "error" in r]
    assert failed == [
        {"item": "p4", "score": None, "exact": None, "against_score": None,
         "error": "exit status 1: no answer for p4"}
    ]  # fmt: skip
    done = site.cli("eval", AGENT, "--command", command, "--at", between)
    assert "on 3 later approvals, 1 failed" in done.stdout
    assert "failed: p4: exit status 1: no answer for p4" in done.stdout


def test_eval_command_from_the_configuration(site: Site, between: str) -> None:
    site.configure(f"eval:\n  command: {BUILTIN}\n  jobs: 2\n")
    assert eval_json(site, "--at", between)["score"] == 1.0


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (
            ["--command", BUILTIN, "--at", "no-such-revision"],
            2,
            "--at 'no-such-revision' is neither",
        ),
        (["--command", BUILTIN, "--against", "nope~~"], 2, "--against 'nope~~' is neither"),
        (["--command", BUILTIN, "--at", "1990-01-01"], 1, "no commit was made by 1990-01-01"),
        (["--command", BUILTIN, "--at", "HEAD"], 1, "no approval of writer was decided after"),
        (["--command", BUILTIN, "--examples", "best"], 2, "--examples 'best'"),
        (["--command", BUILTIN, "--items", "0"], 2, "--items 0"),
        ([], 2, "no agent command to run"),
        (["--command", "'unbalanced"], 2, "does not split into words"),
    ],
)
def test_bad_input_is_a_clear_error(site: Site, args: list[str], code: int, said: str) -> None:
    done = site.cli("eval", AGENT, *args)
    assert done.returncode == code, done.stdout + done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr


def test_an_unknown_agent_is_not_found(site: Site) -> None:
    done = site.cli("eval", "writr", "--command", BUILTIN)
    assert done.returncode == 1
    assert "not_found" in done.stderr and "writer" in done.stderr


def test_a_note_keeps_every_agents_report_on_the_same_revision(site: Site, between: str) -> None:
    """git keeps one note per revision; the lessons of two agents evaluated at one revision
    keep a report each, and noting an agent again replaces only its own."""
    other = {"agent": "seo-helper", "score": 0.5, "delta": 0.1}
    site.git("notes", "--ref=feedbackd-eval", "add", "-m", json.dumps(other), between)
    first = eval_json(site, "--command", BUILTIN, "--at", between, "--note")
    again = eval_json(site, "--command", BUILTIN, "--at", between, "--note")
    noted = reports_in(site.git("notes", "--ref=feedbackd-eval", "show", between))
    assert noted == [other, again] and first["agent"] == again["agent"] == AGENT


def test_a_notes_reports_are_read_up_to_what_a_user_broke() -> None:
    assert reports_in('{"agent": "a"}\n\n{"agent": "b"}\n') == [{"agent": "a"}, {"agent": "b"}]
    assert reports_in('{"agent": "a"}\n{"agent": ') == [{"agent": "a"}]
    assert reports_in("not json") == [] and reports_in(None) == []
    assert report_of(note_with('{"agent": "a", "v": 1}', {"agent": "a", "v": 2}), "a") == {
        "agent": "a",
        "v": 2,
    }


def test_note_keeps_the_report_on_rev(site: Site, between: str) -> None:
    report = eval_json(site, "--command", BUILTIN, "--at", between, "--note")
    noted = site.git("notes", "--ref=feedbackd-eval", "show", between)
    assert json.loads(noted) == report
    assert '"delta"' in site.git("log", "--notes=feedbackd-eval", "-1", between)


def md(body: str) -> str:
    return f"---\ntitle: A page\n---\n{body}"


def test_markdown_items_go_as_markdown_and_come_back_as_markdown(tmp_path: Path) -> None:
    site = Site(tmp_path / "md")
    for number in (1, 2):
        name = f"m{number}.md"
        site.write(AGENT, name, md("About this post.\n"))
        site.reconcile()
        site.write(AGENT, name, md(f"{FIXED}\n"))
        site.move(AGENT, name, "approved")
        site.reconcile()
        if number == 1:
            between = site.git("rev-parse", "HEAD").strip()
    report = eval_json(site, "--command", BUILTIN, "--at", between)
    assert report["score"] == 1.0 and report["fields"] == {"body": 1.0, "title": 1.0}
    echo = script(tmp_path, "echo.py", "sys.stdout.write(request['draft'])\n")
    plain = eval_json(site, "--command", echo, "--at", between)
    assert plain["results"][0]["exact"] is False and plain["fields"]["title"] == 1.0
    body_only = script(tmp_path, "body.py", f"sys.stdout.write({FIXED!r} + '\\n')\n")
    scored = eval_json(site, "--command", body_only, "--at", between)
    assert scored["fields"] == {"body": 1.0, "title": 0.0}  # no front matter: all of it is body


def topical(site: Site, name: str, title: str, excerpt: str) -> None:
    content = {"title": title, "excerpt": "About this post."}
    site.write(AGENT, f"{name}.json", draft(content, collection="posts", slug=name))
    site.reconcile()
    done = {"title": title, "excerpt": excerpt}
    site.write(AGENT, f"{name}.json", draft(done, collection="posts", slug=name))
    site.move(AGENT, f"{name}.json", "approved")
    site.reconcile()


def test_relevant_examples_pick_the_lesson_of_the_items_topic(tmp_path: Path) -> None:
    """One example a snippet: the newest (recipes) for every item, or with --examples relevant
    the one whose words the item shares (football)."""
    site = Site(tmp_path / "topics")
    site.configure("prompt:\n  max_examples: 1\n")
    site.git("add", "feedbackd.yaml")
    site.git("commit", "-qm", "one example a snippet")
    topical(site, "football-1", "Football match one", "Football: goals, cards and the score.")
    topical(site, "recipe-1", "Chicken recipe one", "Chicken: roast it slowly, then rest it.")
    between = site.git("rev-parse", "HEAD").strip()
    topical(site, "football-2", "Football match two", "Football: goals, cards and the score.")
    recent = eval_json(site, "--command", BUILTIN, "--at", between)
    relevant = eval_json(site, "--command", BUILTIN, "--at", between, "--examples", "relevant")
    assert recent["results"][0]["exact"] is False
    assert relevant["results"][0]["exact"] is True and relevant["score"] > recent["score"]


def test_with_git_switched_off_eval_and_bisect_say_so(site: Site) -> None:
    site.configure("git:\n  enabled: false\n")
    for args in (["eval", AGENT], ["bisect", AGENT, "--good", "HEAD~2", "--bad", "HEAD"]):
        done = site.cli(*args, "--command", BUILTIN)
        assert done.returncode == 1, done.stderr
        assert "workspace_error" in done.stderr and "git.enabled: true" in done.stderr


def test_the_default_rev_is_found_past_many_newer_decisions_of_other_agents(
    site: Site, between: str
) -> None:
    """The newest decision commits are read, more each time, until the oldest approval asked
    about is among them: other agents' newer decisions only make the reading longer."""
    p5 = site.git("log", "-1", "--format=%H", "--grep=^Feedback-Item: p5$").strip()
    names = [f"o{number}.json" for number in range(40)]
    for name in names:
        site.write("other", name, post(0))
    site.reconcile()
    for name in names:
        site.move("other", name, "approved")
    site.reconcile()
    assert len(site.git("log", "--format=%H", "--grep=^Feedback-Agent: other$").split()) > 40
    report = eval_json(site, "--command", BUILTIN, "--items", "2")
    assert report["at"] == site.git("rev-parse", f"{p5}^").strip()
    assert [r["item"] for r in report["results"]] == ["p5", "p6"]
