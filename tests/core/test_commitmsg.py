"""Commit messages: subjects, bodies and trailers that file content can never forge."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feedbackd.app.workspace.runtime import Runtime, choose_author
from feedbackd.core.commitmsg import (
    LogEntry,
    build_message,
    decision_body,
    decision_summary,
    decision_trailers,
    drafts_summary,
    entry_body,
    fields_trailer,
    interrupted_summary,
    interrupted_trailers,
    log_entry,
    one_line,
    parse_trailers,
    record_summary,
    record_trailers,
)
from feedbackd.core.config import Settings
from feedbackd.core.curation.feedback import FeedbackEntry
from feedbackd.core.curation.items import Correction
from feedbackd.core.errors import InvalidItem
from feedbackd.core.people import FEEDBACKD_PERSON, Person, parse_person
from feedbackd.core.workspacepaths import Workspace

FORGED = "x\nFeedback-Event: forged\n\nFeedback-Event: forged2\r\nFeedback-Agent: mallory"


def git_trailers(message: str, cwd: Path) -> list[str]:
    """What `git interpret-trailers --parse` reads from a message, one `Key: value` per line."""
    done = subprocess.run(
        ["git", "interpret-trailers", "--parse"],
        input=message.encode(),
        cwd=cwd,
        capture_output=True,
        check=True,
    )
    return done.stdout.decode().splitlines()


# --- Person -------------------------------------------------------------------------------------
def test_person_parses_and_prints_name_and_email() -> None:
    person = Person.parse("  Ada Curator <ada@example.org> ")
    assert person == Person("Ada Curator", "ada@example.org")
    assert str(person) == "Ada Curator <ada@example.org>"
    assert Person.parse(str(person)) == person


@pytest.mark.parametrize(
    "text",
    ["", "Ada", "ada@example.org", "<ada@example.org>", "Ada <>", "Ada <a b@x>", "A <b> <c>",
     "Ada\nEve <ada@example.org>", "Ada <ada@example.org> trailing", 42, None],
)  # fmt: skip
def test_person_refuses_anything_but_name_and_email(text: object) -> None:
    with pytest.raises(ValueError, match="Name <email>"):
        Person.parse(text)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "email"),
    [("", "a@b"), ("  ", "a@b"), ("A<b", "a@b"), ("A\nB", "a@b"), ("A", ""), ("A", "a @b")],
)
def test_person_refuses_identities_git_would_mangle(name: str, email: str) -> None:
    with pytest.raises(ValueError, match="bad"):
        Person(name, email)


def test_feedbackd_itself_is_the_default_committer_and_the_last_resort_author(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert str(FEEDBACKD_PERSON) == "feedbackd <feedbackd@localhost>"  # SPEC §8
    runtime = Runtime(Workspace(tmp_path), Settings())
    assert runtime.committer == FEEDBACKD_PERSON
    monkeypatch.delenv("FEEDBACKD_CURATOR", raising=False)
    assert choose_author(None, runtime, None) == FEEDBACKD_PERSON


# --- one_line -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", "plain"),
        ("a\nb", "a⏎b"),
        ("a\r\nb", "a⏎b"),
        ("a\rb", "a⏎b"),
        ("a\n\nb", "a⏎⏎b"),
        ("a\u2028b\x85c", "a⏎b⏎c"),
        ("tab\there", "tab here"),
        ("bell\x07nul\x00esc\x1b", "bellnulesc"),
        ("", ""),
    ],
)
def test_one_line_shows_line_breaks_and_drops_control_characters(text: str, expected: str) -> None:
    assert one_line(text) == expected


def test_one_line_cuts_long_text_to_the_limit_with_an_ellipsis() -> None:
    assert one_line("x" * 120) == "x" * 120
    cut = one_line("y" * 500)
    assert len(cut) == 120
    assert cut == "y" * 119 + "…"
    assert one_line("abcdef", limit=4) == "abc…"


# --- build_message ------------------------------------------------------------------------------
def test_message_has_subject_body_and_trailers_in_order() -> None:
    message = build_message(
        "approve",
        "content-writer",
        "qi-123, 2 corrections (title, excerpt)",
        body=['- title: "Old" → "New"', '- excerpt: "a" → "b"'],
        trailers=[("Feedback-Item", "qi-123"), ("Feedback-Fields", "title, excerpt")],
    )
    assert message == (
        "approve(content-writer): qi-123, 2 corrections (title, excerpt)\n"
        "\n"
        '- title: "Old" → "New"\n'
        '- excerpt: "a" → "b"\n'
        "\n"
        "Feedback-Event: approve\n"
        "Feedback-Agent: content-writer\n"
        "Feedback-Item: qi-123\n"
        "Feedback-Fields: title, excerpt\n"
    )


def test_message_with_a_skill_names_it_in_the_subject_and_a_trailer() -> None:
    message = build_message(
        "pricing", "prov", "cut price", skill="seo", trailers=[("Price-Old", "20")]
    )
    assert message.startswith("pricing(prov/seo): cut price\n\nFeedback-Event: pricing\n")
    assert parse_trailers(message) == {
        "Feedback-Event": ["pricing"],
        "Feedback-Agent": ["prov"],
        "Feedback-Skill": ["seo"],
        "Price-Old": ["20"],
    }


def test_callers_may_repeat_the_implied_trailers_without_duplicates() -> None:
    message = build_message(
        "record", "a", "s", trailers=[("Feedback-Event", "record"), ("feedback-agent", "a")]
    )
    assert parse_trailers(message) == {"Feedback-Event": ["record"], "Feedback-Agent": ["a"]}


def test_a_trailer_that_contradicts_the_subject_is_refused() -> None:
    with pytest.raises(ValueError, match="contradicts"):
        build_message("approve", "a", "s", trailers=[("Feedback-Event", "reject")])


@pytest.mark.parametrize("key", ["", "Bad Key", "Key:", "-Lead", "Ke\ny", "Key\n", "Ünï"])
def test_bad_trailer_keys_are_refused(key: str) -> None:
    with pytest.raises(ValueError, match="trailer key"):
        build_message("record", "a", "s", trailers=[(key, "v")])


def test_unknown_events_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown commit event"):
        build_message("deploy", "a", "s")


def test_trailers_with_empty_values_are_left_out() -> None:
    message = build_message("reject", "a", "s", trailers=[("Feedback-Item", "  "), ("X", "")])
    assert parse_trailers(message) == {"Feedback-Event": ["reject"], "Feedback-Agent": ["a"]}


def test_fields_trailer_lists_distinct_fields_in_order() -> None:
    assert fields_trailer(["title", "seo.metaTitle", "title", "a,b"]) == "title, seo.metaTitle, a b"


@pytest.mark.parametrize("where", ["summary", "body", "trailer", "agent", "skill"])
def test_text_from_files_cannot_forge_a_trailer(where: str, tmp_path: Path) -> None:
    message = build_message(
        "approve",
        FORGED if where == "agent" else "writer",
        FORGED if where == "summary" else "qi-1",
        skill=FORGED if where == "skill" else None,
        body=[FORGED, "Feedback-Event: forged", "---", "--- x"] if where == "body" else [],
        trailers=[("Feedback-Item", FORGED if where == "trailer" else "qi-1")],
    )
    lines = git_trailers(message, tmp_path)
    assert [line for line in lines if line.startswith("Feedback-Event")] == [
        "Feedback-Event: approve"
    ]
    assert len([line for line in lines if line.startswith("Feedback-Agent")]) == 1
    assert parse_trailers(message)["Feedback-Event"] == ["approve"]
    assert len(message.split("\n\n")[0].splitlines()) == 1  # one subject line


def test_body_lines_that_look_like_trailers_stay_in_the_body(tmp_path: Path) -> None:
    message = build_message(
        "approve", "a", "s", body=["Feedback-Event: forged", "Signed-off-by: Eve <e@x>"]
    )
    assert git_trailers(message, tmp_path) == ["Feedback-Event: approve", "Feedback-Agent: a"]


@settings(max_examples=200, deadline=None)
@given(summary=st.text(), body=st.lists(st.text(), max_size=4), value=st.text())
def test_no_text_ever_adds_a_trailer(summary: str, body: list[str], value: str) -> None:
    message = build_message("reject", "a", summary, body=body, trailers=[("Feedback-Item", value)])
    trailers = parse_trailers(message)
    assert trailers["Feedback-Event"] == ["reject"]
    assert set(trailers) <= {"Feedback-Event", "Feedback-Agent", "Feedback-Item"}
    has_body = any(one_line(line).strip() for line in body)
    assert message.count("\n\n") == (2 if has_body else 1)  # subject, body, trailers: no more


# --- parse_trailers -----------------------------------------------------------------------------
def test_trailers_come_from_the_last_paragraph_only() -> None:
    message = "subject\n\nKey: in body\n\nFeedback-Event: approve\nFeedback-Agent: a\n"
    assert parse_trailers(message) == {"Feedback-Event": ["approve"], "Feedback-Agent": ["a"]}


@pytest.mark.parametrize(
    "message",
    [
        "",
        "Feedback-Event: approve",
        "Feedback-Event: approve\n",
        "subject\n\nsome prose\nFeedback-Event: approve\n",
        "subject\n\n  \n",
    ],
)
def test_messages_without_a_trailer_paragraph_have_no_trailers(message: str) -> None:
    assert parse_trailers(message) == {}


def test_trailers_keep_repeated_keys_and_join_continuation_lines() -> None:
    message = "s\r\n\r\nA: 1\r\nA: 2\r\nB: long\r\n  tail\n\n\n"
    assert parse_trailers(message) == {"A": ["1", "2"], "B": ["long tail"]}


# --- log entries --------------------------------------------------------------------------------
def test_log_entry_reads_every_field_from_trailers() -> None:
    message = build_message(
        "pricing",
        "prov",
        "seo 20 → 19",
        skill="seo",
        trailers=[
            ("Feedback-Item", "qi-1"),
            ("Feedback-Fields", "title, excerpt"),
            ("Price-Old", "20"),
            ("Price-New", "19"),
        ],
    )
    entry = log_entry("abc123", "2026-04-08T12:00:00+02:00", "Ada <ada@example.org>", message)
    assert entry == LogEntry(
        commit="abc123",
        date="2026-04-08T10:00:00.000Z",
        event="pricing",
        agent="prov",
        item="qi-1",
        skill="seo",
        curator="Ada <ada@example.org>",
        fields=["title", "excerpt"],
        price_old="20",
        price_new="19",
        subject="pricing(prov/seo): seo 20 → 19",
    )
    assert entry.to_json() == {
        "commit": "abc123",
        "date": "2026-04-08T10:00:00.000Z",
        "event": "pricing",
        "agent": "prov",
        "item": "qi-1",
        "skill": "seo",
        "curator": "Ada <ada@example.org>",
        "fields": ["title", "excerpt"],
        "price_old": "20",
        "price_new": "19",
        "reverted": False,
        "reverts": None,
    }


def test_log_entry_leaves_absent_values_empty() -> None:
    entry = log_entry("c", "not a date", "", build_message("reject", "a", "qi-9"))
    assert entry is not None
    assert (entry.item, entry.skill, entry.curator, entry.fields) == (None, None, None, None)
    assert entry.date == "not a date"
    assert entry.to_json()["price_new"] is None


def test_commits_without_a_feedback_event_are_not_log_entries() -> None:
    assert log_entry("c", "2026-01-01T00:00:00Z", "A <a@b>", "fix typo\n\nSigned-off-by: A") is None


# --- what the curation commits say --------------------------------------------------------------
TITLE = Correction("title", "Old\ntitle", "New title")


def test_an_approval_names_its_corrected_fields() -> None:
    excerpt = Correction("excerpt", "a", "b")
    assert decision_summary("qi-1", "approved", [TITLE, excerpt]) == (
        "approve",
        "qi-1, 2 corrections (title, excerpt)",
    )
    assert decision_summary("qi-1", "approved", [TITLE]) == (
        "approve",
        "qi-1, 1 correction (title)",
    )
    assert decision_summary("qi-1", "approved", []) == ("approve", "qi-1, no corrections")
    assert decision_body("approved", None, [TITLE]) == ['- title: "Old⏎title" → "New title"']
    assert decision_trailers("qi-1", [TITLE, excerpt]) == [
        ("Feedback-Item", "qi-1"),
        ("Feedback-Fields", "title, excerpt"),
    ]
    assert decision_trailers("qi-1", []) == [("Feedback-Item", "qi-1")]


def test_an_approval_names_the_corrections_recorded_by_an_earlier_decision() -> None:
    excerpt = Correction("excerpt", "a", "b")
    assert decision_summary("qi-1", "approved", [excerpt], ["title"]) == (
        "approve",
        "qi-1, 1 correction (excerpt); title already recorded",
    )
    assert decision_summary("qi-1", "approved", [], ["title", "excerpt"]) == (
        "approve",
        "qi-1, no new corrections (title, excerpt already recorded)",
    )


def test_a_rejection_carries_its_note_even_an_empty_one() -> None:
    assert decision_summary("qi-2", "rejected", []) == ("reject", "qi-2")
    assert decision_body("rejected", "Too\ndry", []) == ['- notes: "Too⏎dry"']
    assert decision_body("rejected", None, []) == ['- notes: ""']


def test_drafts_and_interrupted_commits_list_their_items() -> None:
    assert drafts_summary(["a"], []) == "1 new draft (a)"
    assert drafts_summary(["a", "b"], ["c"]) == "2 new drafts (a, b); back in queue: c"
    assert drafts_summary([], ["c", "d"]) == "back in queue: c, d"
    burst = [f"qi-{n}" for n in range(1600)]
    assert drafts_summary(burst, []) == (
        "1600 new drafts (qi-0, qi-1, qi-2, qi-3, qi-4, and 1,595 more)"
    )
    assert interrupted_summary(["a", "b"]) == "a, b (completed after an interruption)"
    assert interrupted_trailers("b", ["t", "u"]) == [
        ("Feedback-Item", "b"),
        ("Feedback-Fields", "t, u"),
    ]
    assert interrupted_trailers("b", None) == [("Feedback-Item", "b")]


def test_a_recorded_entry_says_what_it_is() -> None:
    edit = FeedbackEntry(
        id="fb-1",
        type="edit",
        queueItemId="qi-1",
        field="title",
        original="a",
        corrected="b",
        createdAt="2026-01-01T00:00:00.000Z",
    )
    assert record_summary(edit) == "edit of title (qi-1)"
    assert record_trailers(edit) == [("Feedback-Item", "qi-1"), ("Feedback-Fields", "title")]
    assert entry_body(edit) == ['- title: "a" → "b"']
    note = FeedbackEntry(id="fb-2", type="rejection", notes="no", createdAt="x")
    assert (record_summary(note), record_trailers(note), entry_body(note)) == (
        "rejection",
        [],
        ['- notes: "no"'],
    )


def test_a_person_from_a_setting_is_refused_naming_the_setting() -> None:
    assert parse_person("Ada <ada@example.org>", "curator") == Person("Ada", "ada@example.org")
    with pytest.raises(InvalidItem, match="--curator: 'Ada' is not `Name <email>`"):
        parse_person("Ada", "--curator")
