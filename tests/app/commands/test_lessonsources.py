"""`feedbackd why AGENT` (SPEC §13): each example and note of the snippet, traced to the decision
commit that added it. A real workspace, real git, the real command line and HTTP API; the pure
joining (core/curation/prompts.py) on its own where a history is hard to make for real."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from feedbackd.app.commands import actions
from feedbackd.core.commitmsg import build_message, entry_body, log_entry
from feedbackd.core.config import PromptSettings
from feedbackd.core.curation.feedback import FeedbackEntry, new_entry
from feedbackd.core.curation.prompts import lesson_sources, render_snippet
from feedbackd.edges.randomness import random_chars
from tests.web_kit import Server
from tests.workspace_kit import Site, draft

AGENT = "w"
KIM = "Kim Editor <kim@example.org>"
LEE = "Lee Reviewer <lee@example.org>"
SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "ws")
    site.configure("prompt:\n  include_rejections: true\n  show_field: true\n")
    for name in ("d1", "d2", "d3", "d4"):
        site.write(AGENT, f"{name}.json", titled(name, f"Draft {name}"))
    site.reconcile()  # the drafts are on record, as the daemon would have them
    return site


def titled(name: str, title: str, excerpt: str | None = None) -> dict[str, Any]:
    return draft({"title": title, "excerpt": excerpt or f"About {name}."})


def ok(site: Site, *args: str) -> str:
    done = site.cli(*args)
    assert done.returncode == 0, f"feedbackd {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout


def approve_edited(site: Site, name: str, curator: str, **edits: str) -> None:
    """The curator edits the draft in queue/ and approves it with the command."""
    site.write(AGENT, f"{name}.json", titled(name, edits.get("title", f"Draft {name}"),
                                             edits.get("excerpt")))  # fmt: skip
    ok(site, "approve", AGENT, name, "--curator", curator)


def curated(site: Site) -> None:
    """Two curators' decisions: Kim approves d1 with a new title and rejects d3, Lee approves d2
    with a new title and excerpt and records an edit of d4."""
    approve_edited(site, "d1", KIM, title="Better d1")
    approve_edited(site, "d2", LEE, title="Better d2", excerpt="What d2 brings.")
    ok(site, "reject", AGENT, "d3", "--notes", "Too dry: say what users gain.", "--curator", KIM)
    edit = {"type": "edit", "queueItemId": "d4", "field": "title", "original": "Draft d4",
            "corrected": "Sharper d4"}  # fmt: skip
    ok(site, "record", AGENT, "--json", json.dumps(edit), "--curator", LEE)


def why(site: Site, agent: str = AGENT) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(ok(site, "why", agent, "--json"))
    return result


def adding_commits(site: Site, item: str) -> list[str]:
    """The commits whose trailers name `item`, newest first."""
    return site.git("log", "--format=%H", f"--grep=^Feedback-Item: {item}$").split()


def author(site: Site, commit: str) -> str:
    return site.git("log", "-1", "--format=%an <%ae>", commit).strip()


# --- the command line, on a real history -------------------------------------------------------
def test_each_lesson_names_the_decision_commit_whose_trailers_name_its_item(site: Site) -> None:
    curated(site)
    found = why(site)
    assert found["agent"] == AGENT
    lines = found["lines"]
    shown = [(line["section"], line["n"], line["item"], line["field"]) for line in lines]
    assert shown == [
        ("examples", 1, "d1", "title"),
        ("examples", 2, "d2", "title"),
        ("examples", 3, "d2", "excerpt"),
        ("examples", 4, "d4", "title"),
        ("avoid", 1, "d3", None),
    ]
    events = {"d1": "approve", "d2": "approve", "d3": "reject", "d4": "record"}
    curators = {"d1": KIM, "d2": LEE, "d3": KIM, "d4": LEE}
    for line in lines:
        commit, item = line["commit"], line["item"]
        trailers = site.trailers(commit)
        assert trailers["Feedback-Item"] == [item] and trailers["Feedback-Agent"] == [AGENT]
        assert trailers["Feedback-Event"] == [events[item]]
        assert commit in adding_commits(site, item) and len(commit) == 40
        assert line["curator"] == author(site, commit) == curators[item]
    entries = {entry["id"]: entry for entry in site.feedback(AGENT)}
    assert [entries[line["entry_id"]]["createdAt"] for line in lines] == [
        line["at"] for line in lines
    ]
    # The numbers are the snippet's own.
    snippet = site.prompt(AGENT)
    assert "Example 4 (title):\nOriginal: Draft d4\nCorrected: Sharper d4" in snippet
    assert "\n1. Too dry: say what users gain.\n" in snippet


def test_the_table_names_each_line_curator_and_commit(site: Site) -> None:
    curated(site)
    lines = why(site)["lines"]
    table = ok(site, "why", AGENT)
    assert f"Where the lessons of {AGENT} came from" in table
    for line in lines:
        label = {"examples": "Example", "avoid": "Avoid"}[line["section"]]
        row = next(row for row in table.splitlines() if f"{label} {line['n']} " in row)
        assert line["item"] in row and line["commit"][:12] in row
        assert line["curator"].split(" <")[0] in row
    assert "not found" not in table


def test_a_forgotten_entry_is_not_listed(site: Site) -> None:
    curated(site)
    before = why(site)["lines"]
    slip = before[1]  # d2's title
    ok(site, "forget", AGENT, slip["entry_id"], "--reason", "a slip")
    after = why(site)["lines"]
    assert slip["entry_id"] not in [line["entry_id"] for line in after]
    assert [(line["n"], line["item"], line["field"]) for line in after[:3]] == [
        (1, "d1", "title"),
        (2, "d2", "excerpt"),
        (3, "d4", "title"),
    ]
    # The others keep their decisions: the forget commit names d2 too, yet adds nothing.
    kept = {line["entry_id"]: line["commit"] for line in before}
    assert all(kept[line["entry_id"]] == line["commit"] for line in after)


def test_an_item_decided_again_after_a_revert_points_at_the_new_decision(site: Site) -> None:
    approve_edited(site, "d1", KIM, title="Better d1")
    [first] = adding_commits(site, "d1")
    done = subprocess.run(
        ["git", "revert", "--no-edit", first], cwd=site.root, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    site.reconcile()  # d1 is a draft again
    assert why(site)["lines"] == []
    approve_edited(site, "d1", LEE, title="Better d1")  # the same correction, by Lee now
    [line] = why(site)["lines"]
    newest = adding_commits(site, "d1")[0]
    assert newest != first and line["commit"] == newest and line["curator"] == LEE


def test_an_entry_written_by_hand_has_no_commit(site: Site) -> None:
    curated(site)
    by_hand = {
        "id": "fb-1775635200000-byhand", "type": "correction", "queueItemId": "d9",
        "field": "title", "original": "Old words", "corrected": "New words",
        "createdAt": "2026-04-08T10:00:00.000Z",
    }  # fmt: skip
    path = site.agent(AGENT) / "feedback.json"
    path.write_text(json.dumps([*site.feedback(AGENT), by_hand], indent=2) + "\n")
    site.git("commit", "-q", "-am", "a lesson typed in by hand")
    lines = why(site)["lines"]
    [typed] = [line for line in lines if line["entry_id"] == by_hand["id"]]
    assert (typed["section"], typed["n"]) == ("examples", 5)
    assert (typed["commit"], typed["curator"]) == (None, None)
    assert typed["at"] == by_hand["createdAt"]
    assert all(line["commit"] for line in lines if line is not typed)
    table = ok(site, "why", AGENT)
    assert "not found" in table


def test_a_renamed_agent_keeps_the_decisions_made_under_its_old_name(site: Site) -> None:
    curated(site)
    before = why(site)["lines"]
    (site.data / "agents" / AGENT).rename(site.data / "agents" / "writer")
    site.reconcile()
    assert site.git("log", "-1", "--format=%s").strip() == "rename(writer): from w"
    found = why(site, "writer")
    assert found["agent"] == "writer" and found["lines"] == before


def test_an_empty_snippet_has_no_lines(site: Site) -> None:
    assert why(site) == {"agent": AGENT, "lines": []}
    assert "The snippet of w is empty" in ok(site, "why", AGENT)


def test_an_unknown_agent_is_not_found_with_a_hint(site: Site) -> None:
    done = site.cli("why", "ww")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("error: not_found: no agent ww in _data/agents/")
    assert "did you mean w?" in done.stderr
    as_json = site.cli("why", "nobody", "--json")
    assert as_json.returncode == 1
    refusal = json.loads(as_json.stderr)
    assert refusal["error"] == "not_found" and "`ls _data/agents` lists them" in refusal["message"]


@pytest.mark.slow
def test_the_http_route_answers_what_the_command_prints(site: Site, server: Server) -> None:
    curated(site)
    answer = server.get(f"/api/agents/{AGENT}/why")
    assert answer.status == 200 and answer.json() == why(site)
    missing = server.get("/api/agents/nobody/why")
    assert missing.status == 404 and missing.json()["error"] == "not_found"


@pytest.mark.slow
def test_the_panel_links_each_lesson_to_its_decision_even_past_the_newest_rows(
    site: Site, server: Server
) -> None:
    curated(site)
    runtime = site.runtime()
    for number in range(55):  # the history card shows the newest 50 steps
        note = {"type": "rejection", "queueItemId": f"x{number}", "notes": f"Note {number}."}
        actions.record(runtime, AGENT, note)
    page = server.get(f"/agents/{AGENT}").text
    lines = why(site)["lines"]
    for line in lines:
        assert f'href="#commit-{line["commit"]}"' in page
        assert page.count(f'<tr id="commit-{line["commit"]}">') == 1
    assert page.count("<tr id=") == 50 + len({line["commit"] for line in lines[:4]})
    draft_commit = site.git("log", "--format=%H", "--grep=^draft(").split()[-1]
    assert f"commit-{draft_commit}" not in page


# --- the joining, pure -------------------------------------------------------------------------
NOW = datetime(2026, 4, 8, 10, 0, tzinfo=UTC)


def fix(item: str, corrected: str, kind: str = "correction") -> FeedbackEntry:
    return new_entry(
        NOW, random_chars, type=kind, queueItemId=item, field="title",
        original="Draft", corrected=corrected,
    )  # fmt: skip


def commit_of(sha: str, event: str, item: str, entries: list[FeedbackEntry]) -> Any:
    """The LogEntry of a commit whose body tells `entries`, as feedbackd writes them."""
    body = [line for entry in entries for line in entry_body(entry)]
    message = build_message(event, AGENT, item, body=body, trailers=[("Feedback-Item", item)])
    return log_entry(sha, "2026-04-08T10:00:00+00:00", KIM, message)


def test_two_decisions_of_one_item_in_one_second_are_told_apart_by_what_they_recorded() -> None:
    first, second = fix("d1", "Better"), fix("d1", "Best")
    history = [  # newest first, both made in the same second as their entries
        commit_of("2" * 40, "approve", "d1", [second]),
        commit_of("1" * 40, "approve", "d1", [first]),
    ]
    lines = lesson_sources([first, second], PromptSettings(), history)
    assert [line["commit"] for line in lines] == ["1" * 40, "2" * 40]


def test_only_a_commit_that_adds_such_an_entry_counts() -> None:
    edit, correction = fix("d1", "Better", kind="edit"), fix("d2", "Better")
    history = [
        commit_of("3" * 40, "forget", "d2", [correction]),  # takes it away
        commit_of("2" * 40, "approve", "d1", [edit]),  # an approval adds corrections only
        commit_of("1" * 40, "record", "d2", [correction]),
    ]
    lines = lesson_sources([edit, correction], PromptSettings(), history)
    assert [line["commit"] for line in lines] == [None, "1" * 40]


@pytest.mark.parametrize(
    "settings",
    [
        PromptSettings(),
        PromptSettings(max_examples=2, include_rejections=True, max_rejections=1),
        PromptSettings(max_examples=0, include_rejections=True),
    ],
)
def test_the_lines_are_the_snippets_examples_and_notes(settings: PromptSettings) -> None:
    notes = [
        new_entry(NOW, random_chars, type="rejection", queueItemId=f"r{i}", notes=f"no {i}")
        for i in range(3)
    ]
    entries = [fix("d1", "One"), notes[0], fix("d2", "Two"), notes[1], fix("d3", ""), notes[2]]
    lines = lesson_sources(entries, settings, [])
    snippet = render_snippet(entries, settings)
    examples = [line for line in lines if line["section"] == "examples"]
    avoid = [line for line in lines if line["section"] == "avoid"]
    assert len(examples) == snippet.count("\nOriginal: ")
    assert [f"{line['n']}. no {line['item'][1:]}" for line in avoid] == [
        text for text in snippet.splitlines() if text[:1].isdigit()
    ]
    assert all(line["commit"] is None for line in lines)
