"""A review, a deciding review, a dispute, its settling and the outcome of reviews a merge
completed (SPEC section 15), each killed at every write, removal and commit of the pass that
makes it: the next passes (killed too, in the property test) finish it as an uninterrupted
pass would have. One line per review in reviews.jsonl, one commit for the act, the draft in
exactly one folder, one lesson where it decides, nothing left uncommitted.

The kill points are those of the rating crash test (tests/app/ratings/test_rating_crashes.py),
and every file removal besides: a review's commit moves the draft, and a pass killed between
writing the draft's new place and removing its old one must still end with one copy.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from feedbackd.app.commits.locking import clean_leftovers, heal_git_index
from feedbackd.app.reconcile import reconcile_all
from feedbackd.core.people import Person
from feedbackd.core.reviews.reviewlog import new_review
from feedbackd.core.workspacepaths import ITEM_SUFFIXES
from feedbackd.edges.clock import utcnow
from feedbackd.edges.randomness import random_chars
from tests.app.ratings import test_rating_crashes as crashes
from tests.workspace_kit import Site, draft

ADA = "Ada <ada@example.org>"
BO = "Bo <bo@example.org>"
CY = "Cy <cy@example.org>"
FIRST = {"title": "Old title", "excerpt": "Short."}
EDITED = {"title": "Better title", "excerpt": "Short."}
STEPS = 11  # more than any of these passes takes: the last kill points change nothing


@contextmanager
def killed_at(at: int | None) -> Iterator[crashes.Killer]:
    """The rating crash test's kill points (whole-file writes, appended lines, commits), and
    every removal of an item file (a draft leaving the folder it waited in)."""
    unlink = Path.unlink

    def removal(path: Path, missing_ok: bool = False) -> None:
        if path.suffix in ITEM_SUFFIXES and "_data" in path.parts:
            killer.step()
        unlink(path, missing_ok=missing_ok)

    with crashes.killed_at(at) as killer, mock.patch.object(Path, "unlink", removal):
        yield killer


def attempt(site: Site, action: Callable[[], object], at: int | None) -> bool:
    """Run `action`, killed at step `at`; False when it was. A killed process leaves its
    write lock held by a dead pid, and the next writer heals what it left (locking.py): done
    here by hand, as the lock of this process was let go."""
    try:
        with killed_at(at):
            action()
    except crashes.Killed:
        runtime = site.runtime()
        clean_leftovers(runtime)
        heal_git_index(runtime)
        return False
    return True


def by(site: Site, curator: str) -> None:
    reconcile_all(site.runtime(curator))


def move(site: Site, source: str, to: str, **changes: object) -> None:
    """A curator edits the file where it waits and moves it (never killed: not feedbackd's)."""
    doc = json.loads((site.agent("w") / source / "qi-1.json").read_text())
    doc.update(changes)
    doc.pop("reviews", None)  # a dispute's: whoever settles it drops the key
    site.write("w", "qi-1.json", doc, folder=source)
    site.move("w", "qi-1.json", to, source=source)


@pytest.fixture(scope="module")
def drafted(tmp_path_factory: pytest.TempPathFactory) -> Site:
    """Two curators review each draft; qi-1 drafted and committed in queue/."""
    site = Site(tmp_path_factory.mktemp("review-crashes") / "site")
    # A decided file that a killed pass wrote is decided once it settles: no waiting here.
    site.configure("review:\n  required: 2\ndaemon:\n  settle_ms: 0\n")
    site.git("add", "feedbackd.yaml")
    site.git("commit", "-qm", "two reviews a draft")
    site.write("w", "qi-1.json", draft(FIRST))
    by(site, ADA)
    return site


@pytest.fixture(scope="module")
def reviewed(drafted: Site, tmp_path_factory: pytest.TempPathFactory) -> Site:
    """Ada's approval recorded (1 of 2): the draft waits in review/."""
    site = drafted.copy_to(tmp_path_factory.mktemp("reviewed") / "site")
    move(site, "queue", "approved", contentData=EDITED)
    by(site, ADA)
    return site


@pytest.fixture(scope="module")
def rejected_once(drafted: Site, tmp_path_factory: pytest.TempPathFactory) -> Site:
    """Ada's rejection recorded (1 of 2)."""
    site = drafted.copy_to(tmp_path_factory.mktemp("rejected-once") / "site")
    move(site, "queue", "rejected", rejectionFeedback="Too long.")
    by(site, ADA)
    return site


@pytest.fixture(scope="module")
def disputed(reviewed: Site, tmp_path_factory: pytest.TempPathFactory) -> Site:
    """Bo rejected what Ada approved: qi-1 waits in disputed/."""
    site = reviewed.copy_to(tmp_path_factory.mktemp("disputed") / "site")
    move(site, "review", "rejected", rejectionFeedback="Off topic.")
    by(site, BO)
    return site


@pytest.fixture(scope="module")
def merged(reviewed: Site, tmp_path_factory: pytest.TempPathFactory) -> Site:
    """Bo's agreeing review, made in another clone, pulled: both reviews are in, the draft still
    waits in review/, and the next pass (on Cy's machine, say) reaches the outcome."""
    site = reviewed.copy_to(tmp_path_factory.mktemp("merged") / "site")
    bo = Person.parse(BO)
    line = new_review("qi-1", bo, "approve", EDITED, utcnow() + timedelta(seconds=1), random_chars)
    with (site.agent("w") / "reviews.jsonl").open("a") as log:
        log.write(line.line() + "\n")
    site.git("commit", "-qam", "review(w): qi-1 by Bo (1 of 2), pulled")
    return site


@dataclass(frozen=True)
class Case:
    """A curator's act, the pass that makes it, and what it ends with."""

    template: str  # the fixture it starts from
    act: Callable[[Site], None]
    curator: str  # whose machine's passes run
    subject: str  # the one commit it makes
    reviews: int  # lines in reviews.jsonl
    folder: str  # where qi-1 ends
    lessons: int  # entries in feedback.json
    names: tuple[tuple[str, str], ...] = ()  # trailers the commit must hold


CASES = {
    "a review": Case(
        "drafted",
        lambda site: move(site, "queue", "approved", contentData=EDITED),
        ADA,
        "review(w): qi-1 by Ada (1 of 2)",
        1,
        "review",
        0,
    ),
    "a deciding review": Case(
        "reviewed",
        lambda site: move(site, "review", "approved", contentData=EDITED),
        BO,
        "approve(w): qi-1, 1 correction (title)",
        2,
        "approved",
        1,
        (("Feedback-Reviewers", f"{ADA}, {BO}"), ("Co-authored-by", BO)),
    ),
    "agreeing rejections": Case(
        "rejected_once",
        lambda site: move(site, "review", "rejected", rejectionFeedback="Off topic."),
        BO,
        "reject(w): qi-1",
        2,
        "rejected",
        1,
        (("Feedback-Reviewers", f"{ADA}, {BO}"), ("Co-authored-by", BO)),
    ),
    "a dispute": Case(
        "reviewed",
        lambda site: move(site, "review", "rejected", rejectionFeedback="Off topic."),
        BO,
        "dispute(w): qi-1 (approve 1, reject 1)",
        2,
        "disputed",
        0,
    ),
    "a dispute settled": Case(
        "disputed",
        lambda site: move(site, "disputed", "approved", contentData=EDITED),
        CY,
        "approve(w): qi-1, 1 correction (title)",
        2,
        "approved",
        1,
        (("Feedback-Adjudicator", CY), ("Feedback-Reviewers", f"{ADA}, {BO}")),
    ),
    "reviews a merge completed": Case(
        "merged",
        lambda site: None,
        CY,
        "approve(w): qi-1, 1 correction (title)",
        2,
        "approved",
        1,
        (("Feedback-Reviewers", f"{ADA}, {BO}"), ("Co-authored-by", BO)),
    ),
}


def run(template: Site, case: Case, killed_at_step: int, later_kills: list[int]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        site = template.copy_to(Path(folder) / "site")
        start = site.git("rev-parse", "HEAD").strip()
        case.act(site)
        attempt(site, lambda: by(site, case.curator), killed_at_step)
        for at in later_kills:
            attempt(site, lambda: by(site, case.curator), at)
        assert attempt(site, lambda: by(site, case.curator), None)
        assert_made_once(site, start, case)


def assert_made_once(site: Site, start: str, case: Case) -> None:
    agent = site.agent("w")
    subjects = site.git("log", "--format=%s", f"{start}..HEAD").splitlines()
    # A decision whose ledger line was written, but not its commit, is committed as such.
    interrupted = case.subject.split(",")[0] + " (completed after an interruption)"
    assert subjects in ([case.subject], [interrupted])
    trailers = site.trailers()
    for key, value in case.names:
        assert trailers.get(key) == [value], (key, trailers)
    lines = (agent / "reviews.jsonl").read_text().splitlines()
    ids = [json.loads(line)["id"] for line in lines]
    assert len(ids) == len(set(ids)) == case.reviews
    assert sorted(p.parent.name for p in agent.glob("*/qi-1.json")) == [case.folder]
    assert not list(agent.glob("*/qi-1.json.error"))
    assert len(site.feedback("w")) == case.lessons
    if case.folder == "rejected":  # the decided file says the decision's note
        decided = json.loads((agent / "rejected" / "qi-1.json").read_text())
        assert decided["rejectionFeedback"] == "Too long.\n\nOff topic."
    ledger = (agent / "decisions.jsonl").read_text().splitlines()
    assert len(ledger) == (1 if case.lessons else 0)
    assert site.git("status", "--porcelain") == ""


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("killed_at_step", range(STEPS + 1))
def test_a_review_killed_at_each_step_is_made_once(
    request: pytest.FixtureRequest, name: str, killed_at_step: int
) -> None:
    case = CASES[name]
    run(request.getfixturevalue(case.template), case, killed_at_step, [])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(CASES)),
    killed_at_step=st.integers(0, STEPS),
    later_kills=st.lists(st.integers(0, STEPS), min_size=1, max_size=3),
)
def test_passes_killed_one_after_another_still_make_it_once(
    request: pytest.FixtureRequest, name: str, killed_at_step: int, later_kills: list[int]
) -> None:
    case = CASES[name]
    run(request.getfixturevalue(case.template), case, killed_at_step, later_kills)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_act_takes_fewer_steps_than_the_kills_try(
    request: pytest.FixtureRequest, name: str
) -> None:
    case = CASES[name]
    with tempfile.TemporaryDirectory() as folder:
        site = request.getfixturevalue(case.template).copy_to(Path(folder) / "site")
        case.act(site)
        with killed_at(None) as killer:
            by(site, case.curator)
        assert 2 <= killer.done < STEPS
