"""What a review leads to: recorded n of N, refused, agreed (one decision) or disputed."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from feedbackd.core.changes import Append, Remove, Write
from feedbackd.core.commitmsg import build_message, parse_trailers
from feedbackd.core.people import Person
from feedbackd.core.reviews.reviewlog import ReviewRecord, new_review, read_reviews
from feedbackd.core.reviews.reviewplan import (
    Agreed,
    Deciding,
    Disputed,
    Pending,
    Recorded,
    Refused,
    ReviewAct,
    ReviewPaths,
    adjudicator_trailers,
    agreed_author,
    outcome,
    plan_review,
    reviewers_trailers,
)

ADA = Person("Ada", "ada@example.org")
BO = Person("Bo", "bo@example.org")
CY = Person("Cy", "cy@example.org")
NOW = datetime(2026, 4, 8, 10, 0, tzinfo=UTC)
AGENT = Path("_data/agents/writer")
PATHS = ReviewPaths(
    moved=AGENT / "approved/qi-1.json",
    review=AGENT / "review/qi-1.json",
    disputed=AGENT / "disputed/qi-1.json",
    log=AGENT / "reviews.jsonl",
)
FIRST = '{\n  "contentData": {\n    "title": "Draft"\n  }\n}\n'


def draw(alphabet: str, count: int) -> str:
    return "abcdef"[:count]


def dispute_text(reviews: list[dict[str, Any]]) -> str:
    return json.dumps({**json.loads(FIRST), "reviews": reviews}, indent=2) + "\n"


def review(who: Person, verdict: str, version: Any, minutes: int = 0, tag: int = 0) -> ReviewRecord:
    at = NOW + timedelta(minutes=minutes)
    chars = f"{tag:06d}"  # ids are unique, whatever the time
    return new_review("qi-1", who, verdict, version, at, lambda a, n: chars)  # type: ignore[arg-type]


def plan(  # type: ignore[no-untyped-def]
    who: Person,
    verdict: str,
    version: Any,
    earlier: list[ReviewRecord],
    required: int = 2,
    unfinished: frozenset[str] = frozenset(),
):
    act = ReviewAct("writer", "qi-1", who, verdict, version)  # type: ignore[arg-type]
    later = NOW + timedelta(hours=1)
    return plan_review(act, earlier, required, PATHS, FIRST, dispute_text, later, draw, unfinished)


def message(request: Any) -> str:
    return build_message(
        request.event, request.agent, request.summary, body=request.body, trailers=request.trailers
    )


def test_the_first_review_of_two_is_recorded_and_the_draft_waits_as_first_drafted() -> None:
    result = plan(ADA, "approve", {"title": "Ada's title"}, [])
    assert isinstance(result, Recorded)
    actions = result.change.actions
    assert isinstance(actions[0], Append) and actions[0].path == PATHS.log
    assert json.loads(actions[0].line)["content"] == {"title": "Ada's title"}
    assert Write(PATHS.review, FIRST, exact=True) in actions and Remove(PATHS.moved) in actions
    commit = result.change.commit
    assert message(commit).split("\n")[0] == "review(writer): qi-1 by Ada (1 of 2)"
    assert parse_trailers(message(commit)) == {
        "Feedback-Event": ["review"],
        "Feedback-Agent": ["writer"],
        "Feedback-Item": ["qi-1"],
        "Feedback-Verdict": ["approve"],
    }
    assert commit.author == ADA
    assert set(commit.paths) == {PATHS.moved, PATHS.review, PATHS.log}


def test_a_review_from_review_folder_removes_nothing_else() -> None:
    result = plan(BO, "reject", "no", [review(ADA, "reject", "meh")], required=3)
    assert isinstance(result, Recorded)
    assert result.change.commit.summary == "qi-1 by Bo (2 of 3)"


def test_the_same_curator_again_is_refused_and_told_who_must() -> None:
    result = plan(ADA, "reject", "changed my mind", [review(ADA, "approve", {"title": "x"})])
    assert isinstance(result, Refused)
    first, second = result.error.splitlines()
    assert first.startswith("feedbackd: qi-1 was reviewed already by Ada <ada@example.org>")
    assert "another curator must review it" in first
    assert "review/" in second
    assert result.actions == (Write(PATHS.review, FIRST, exact=True), Remove(PATHS.moved))


def test_the_same_curator_is_known_by_email_whatever_the_name() -> None:
    again = Person("Ada Lovelace", "ADA@example.org")
    assert isinstance(plan(again, "reject", "no", [review(ADA, "reject", "no")]), Refused)


def test_agreeing_approvals_decide_with_every_reviewer() -> None:
    earlier = [review(ADA, "approve", {"title": "Better\n"})]
    result = plan(BO, "approve", {"title": "Better"}, earlier)
    assert isinstance(result, Deciding) and isinstance(result.result, Agreed)
    agreed = result.result
    assert (agreed.verdict, agreed.content) == ("approve", {"title": "Better\n"})
    assert agreed.reviewers == (ADA, BO) and agreed_author(agreed) == ADA
    assert result.change is None and result.line.path == PATHS.log
    assert reviewers_trailers(agreed.reviews) == [
        ("Feedback-Reviewers", "Ada <ada@example.org>, Bo <bo@example.org>"),
        ("Co-authored-by", "Bo <bo@example.org>"),
    ]


def test_agreeing_rejections_join_their_notes() -> None:
    earlier = [review(ADA, "reject", "Too long."), review(BO, "reject", "", 1, tag=1)]
    result = plan(CY, "reject", "Off topic.", earlier, required=3)
    assert isinstance(result, Deciding) and isinstance(result.result, Agreed)
    assert result.result.notes == "Too long.\n\nOff topic."


def test_differing_versions_are_a_dispute_with_each_version() -> None:
    earlier = [review(ADA, "approve", {"title": "A"})]
    result = plan(BO, "reject", "No.", earlier)
    assert isinstance(result, Deciding) and isinstance(result.result, Disputed)
    assert result.change is not None
    commit = result.change.commit
    text = message(commit)
    assert text.split("\n")[0] == "dispute(writer): qi-1 (approve 1, reject 1)"
    trailers = parse_trailers(text)
    assert trailers["Feedback-Reviewers"] == ["Ada <ada@example.org>, Bo <bo@example.org>"]
    assert trailers["Feedback-Item"] == ["qi-1"]
    written = next(a for a in result.change.actions if isinstance(a, Write))
    assert written.path == PATHS.disputed
    document = json.loads(written.text)
    assert document["contentData"] == {"title": "Draft"}
    assert [(r["curator"], r["verdict"]) for r in document["reviews"]] == [
        ("Ada <ada@example.org>", "approve"),
        ("Bo <bo@example.org>", "reject"),
    ]
    assert document["reviews"][0]["content"] == {"title": "A"}
    assert document["reviews"][1]["notes"] == "No."
    assert Remove(PATHS.moved) in result.change.actions


def test_two_approvals_of_different_versions_are_a_dispute() -> None:
    result = plan(BO, "approve", {"title": "B"}, [review(ADA, "approve", {"title": "A"})])
    assert isinstance(result, Deciding) and isinstance(result.result, Disputed)
    assert result.result.counts() == "approve 2, reject 0"


def test_a_settled_dispute_names_its_adjudicator_and_the_reviewers() -> None:
    reviews = [review(ADA, "approve", {"t": "a"}), review(BO, "reject", "no", 1, tag=1)]
    trailers = adjudicator_trailers(CY, reviews)
    text = build_message("approve", "writer", "qi-1, no corrections", trailers=trailers)
    assert parse_trailers(text)["Feedback-Adjudicator"] == ["Cy <cy@example.org>"]
    assert parse_trailers(text)["Feedback-Reviewers"] == [
        "Ada <ada@example.org>, Bo <bo@example.org>"
    ]


# A pass killed after the review's line, before its commit ----------------------------------


def test_an_unfinished_review_is_finished_not_refused_nor_written_twice() -> None:
    mine = review(ADA, "approve", {"title": "Mine"})
    result = plan(ADA, "approve", {"title": "Mine "}, [mine], unfinished=frozenset({mine.id}))
    assert isinstance(result, Recorded) and result.review == mine
    assert not any(isinstance(action, Append) for action in result.change.actions)
    assert result.change.commit.summary == "qi-1 by Ada (1 of 2)"


def test_an_unfinished_review_moved_another_way_is_refused() -> None:
    mine = review(ADA, "approve", {"title": "Mine"})
    changed = plan(ADA, "approve", {"title": "Other"}, [mine], unfinished=frozenset({mine.id}))
    assert isinstance(changed, Refused)
    assert isinstance(plan(ADA, "reject", "no", [mine], unfinished=frozenset({mine.id})), Refused)


def test_a_committed_review_moved_again_the_same_way_is_refused() -> None:
    mine = review(ADA, "approve", {"title": "Mine"})
    assert isinstance(plan(ADA, "approve", {"title": "Mine"}, [mine]), Refused)


def test_an_unfinished_deciding_review_decides_once() -> None:
    first, last = review(ADA, "reject", "no"), review(BO, "reject", "nah", 1, tag=1)
    result = plan(BO, "reject", "nah", [first, last], unfinished=frozenset({last.id}))
    assert isinstance(result, Deciding) and result.line is None
    assert isinstance(result.result, Agreed) and result.result.reviewers == (ADA, BO)
    other = plan(BO, "approve", {"title": "A"}, [review(ADA, "reject", "no"), last])
    assert isinstance(other, Refused)


# Any order of reviews ------------------------------------------------------------------------

CURATORS = [ADA, BO, CY, Person("Di", "di@example.org")]
VERSIONS = st.sampled_from([{"title": "A"}, {"title": "A  \r\n"}, {"title": "B"}, "no", "nah"])
REVIEW = st.tuples(st.sampled_from(CURATORS), VERSIONS, st.integers(0, 10_000))


def as_review(index: int, who: Person, version: Any, minutes: int) -> ReviewRecord:
    verdict = "approve" if isinstance(version, dict) else "reject"
    return review(who, verdict, version, minutes, tag=index)


@given(st.lists(REVIEW, max_size=8), st.integers(1, 4), st.randoms())
def test_the_outcome_does_not_depend_on_the_order_reviews_arrive(
    raw: list[tuple[Person, Any, int]], required: int, rng: Any
) -> None:
    reviews = [as_review(i, *r) for i, r in enumerate(raw)]
    shuffled = list(reviews)
    rng.shuffle(shuffled)
    assert outcome(reviews, required) == outcome(shuffled, required)


@given(st.lists(REVIEW, max_size=8), st.integers(2, 4))
def test_each_curator_counts_once_and_agreement_means_the_same_verdict(
    raw: list[tuple[Person, Any, int]], required: int
) -> None:
    result = outcome([as_review(i, *r) for i, r in enumerate(raw)], required)
    curators = [r.curator.email for r in result.reviews]
    assert len(curators) == len(set(curators))
    if isinstance(result, Pending):
        assert len(curators) < required
    elif isinstance(result, Agreed):
        assert {r.verdict for r in result.reviews} == {result.verdict}
    else:
        assert len(curators) >= required


@given(st.lists(REVIEW, min_size=1, max_size=8), st.integers(2, 4), st.lists(st.booleans()))
def test_reviews_played_one_by_one_refuse_a_repeat_and_end_as_a_whole_set_does(
    raw: list[tuple[Person, Any, int]], required: int, kills: list[bool]
) -> None:
    """A pass takes reviews one at a time, some killed after the review's line and before its
    commit (the next pass plans it again): what it records read back gives the same outcome as
    the set of reviews that were taken, each once, and nothing is decided before the N-th."""
    log: list[ReviewRecord] = []
    for step, (who, version, _) in enumerate(raw):
        verdict = "approve" if isinstance(version, dict) else "reject"
        act = ReviewAct("writer", "qi-1", who, verdict, version)  # type: ignore[arg-type]
        at = NOW + timedelta(minutes=step)
        result = plan_review(act, log, required, PATHS, FIRST, dispute_text, at, draw)
        if isinstance(result, Refused):
            assert who.email in {r.curator.email for r in log}
            continue
        log.append(result.review)
        if step < len(kills) and kills[step]:  # killed: the next pass finds the line unfinished
            unfinished = frozenset({result.review.id})
            again = plan_review(
                act, log, required, PATHS, FIRST, dispute_text, at, draw, unfinished
            )
            assert not isinstance(again, Refused) and again.review == result.review
            lines = again.change.actions if isinstance(again, Recorded) else [again.line]
            assert not any(isinstance(line, Append) for line in lines)
            result = again
        recorded = read_reviews("\n".join(r.line() for r in log))
        if isinstance(result, Recorded):
            assert len(log) < required
            assert isinstance(outcome(recorded, required), Pending)
        else:
            assert len(log) == required
            assert outcome(recorded, required) == result.result
            break
    assert len({r.curator.email for r in log}) == len(log) <= required
