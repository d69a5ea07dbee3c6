"""A rating, and the price cut and lessons it calls for, killed at any write or git step: the
next passes record each exactly once, as an uninterrupted submit would have.

The process is killed (a BaseException, which no handler of feedbackd takes for an error) before
the n-th write of a file, or before or after the n-th commit; the daemon's next full passes over
the ratings (`reconcile_ratings`) may be killed too; the buyer, whose submit never answered,
submits again (told it was recorded already, when it was); then one pass runs to its end.
Whatever the steps, the workspace ends with one rating line and one rating commit (holding the
buyer's memory of the rental), one price change (its ledger line, SOUL.md's `pricing:` line and
its memory record, in one `pricing` commit after the rating's), the skill's lessons (the file
and its memory record, in one `optimize` commit), nothing uncommitted, and the provider's
reputation as the uninterrupted submit leaves it.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from feedbackd.app.commands.submitting import submit_rating
from feedbackd.app.reconcile import reconcile_ratings
from feedbackd.core.errors import AlreadySubmitted
from feedbackd.core.ratings.records import parse_rating
from feedbackd.core.timeutil import iso_ms
from feedbackd.edges import files
from feedbackd.edges.clock import utcnow
from feedbackd.edges.git.repo import GitRepo
from feedbackd.edges.ratingstore import RatingStore
from tests.workspace_kit import Site

PROVIDER, SKILL, BUYER = "heavylift-chengwen", "claude-code-run", "buyer-0"
SOUL = "# HeavyLift\n\nRuns code.\n\n## Claude Code Run\nRuns it.\npricing: 20\n"
TRANSACTION = "6f1c2a9e-3b4d-4c5e-8f70-1a2b3c4d5e6f"
NOW = utcnow().replace(microsecond=0)
PAYLOAD = json.dumps(
    {
        "transaction_id": TRANSACTION,
        "provider_agent": PROVIDER,
        "skill_id": SKILL,
        "rating": 2,
        "result_quality": "poor",
        "quality_details": "Diff was incomplete",
        "would_reuse": False,
        "cost_value_ratio": "overpriced",
        "timestamp": iso_ms(NOW - timedelta(minutes=1)),
    }
)
STEPS = 20  # more than a submit and its changes take: the last kill points change nothing


class Killed(BaseException):
    """The process dies here: nothing after this point runs, no handler takes it."""


class Killer:
    """Counts the write and git steps of the process and kills it at the `at`-th one."""

    def __init__(self, at: int | None) -> None:
        self.at, self.done = at, 0

    def step(self) -> None:
        if self.at is not None and self.done == self.at:
            raise Killed(f"killed at step {self.at}")
        self.done += 1

    def before(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def killed_before(*args: Any, **kwargs: Any) -> Any:
            self.step()
            return real(*args, **kwargs)

        return killed_before

    def around(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def killed_around(*args: Any, **kwargs: Any) -> Any:
            self.step()
            result = real(*args, **kwargs)
            self.step()  # the commit is made: a kill now leaves it, and nothing after it
            return result

        return killed_around


@contextmanager
def killed_at(at: int | None) -> Iterator[Killer]:
    """Every whole-file write, appended line and commit is a step where the process may die.
    The writes are taken where every writer ends (edges/files.py), the commits where every
    commit is made (GitRepo.commit_paths)."""
    killer = Killer(at)
    with (
        mock.patch.object(files, "atomic_write_chunks", killer.before(files.atomic_write_chunks)),
        mock.patch.object(files, "_write_whole", killer.before(files._write_whole)),
        mock.patch.object(GitRepo, "commit_paths", killer.around(GitRepo.commit_paths)),
    ):
        yield killer


def attempt(action: Callable[[], object], at: int | None) -> bool:
    """Run `action`, killed at step `at`; False when it was."""
    try:
        with killed_at(at):
            action()
    except Killed:
        return False
    return True


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Site:
    """A provider priced at 20 whose skill two buyers called overpriced and poor, committed,
    and the ratings' full pass run once: the submitted rating is the third, which calls for a
    cut and lessons."""
    site = Site(tmp_path_factory.mktemp("rating-crashes") / "site")
    soul = site.agent(PROVIDER) / "SOUL.md"
    soul.parent.mkdir(parents=True)
    soul.write_text(SOUL)
    store = RatingStore(site.runtime().workspace)
    for number, buyer in enumerate(("buyer-0", "buyer-1")):
        doc = {**json.loads(PAYLOAD), "transaction_id": f"{TRANSACTION[:-1]}{number}"}
        doc["timestamp"] = iso_ms(NOW - timedelta(minutes=10 - number))
        store.append(parse_rating(doc, requester=buyer, now=NOW))
    site.git("add", "-A")
    site.git("commit", "-qm", "a provider rated twice")
    reconcile_ratings(site.runtime())
    return site


@pytest.fixture(scope="module")
def whole(template: Site, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The provider's reputation after one submit that nothing interrupted."""
    site = template.copy_to(tmp_path_factory.mktemp("whole") / "site")
    submit_rating(site.runtime(), PAYLOAD, BUYER)
    return reputation(site)


def reputation(site: Site) -> dict[str, Any]:
    runtime = site.runtime()
    store = RatingStore(runtime.workspace)
    return store.reputation_report(PROVIDER, runtime.settings.reputation, NOW + timedelta(hours=1))


def lines_with(path: Path, text: str) -> int:
    return sum(text in line for line in path.read_text().splitlines()) if path.exists() else 0


def commits_since(site: Site, start: str) -> list[tuple[str, list[str]]]:
    """(subject, paths) of each commit after `start`, oldest first."""
    shas = site.git("rev-list", "--reverse", f"{start}..HEAD").split()
    found = []
    for sha in shas:
        subject = site.git("log", "-1", "--format=%s", sha).strip()
        paths = site.git("show", "--name-only", "--format=", sha).split()
        found.append((subject, paths))
    return found


def assert_recorded_once(site: Site, start: str, whole: dict[str, Any]) -> None:
    agent = site.agent(PROVIDER)
    month = next((agent / "ratings" / SKILL).glob("*.jsonl"))
    assert lines_with(month, TRANSACTION + '"') == 1
    memory = site.agent(BUYER) / "memory"
    cases = lines_with(memory / "cases.jsonl", f"case-{TRANSACTION}")
    profiles = lines_with(memory / "entities.jsonl", f"profile-{TRANSACTION}")
    assert (cases, profiles) == (1, 1), "the buyer's memory of the rental"
    [price] = (agent / "pricing.jsonl").read_text().splitlines()
    patterns = agent / "memory" / "patterns.jsonl"
    sources = [json.loads(line)["source"] for line in patterns.read_text().splitlines()]
    assert sorted(sources) == [f"optimize:{SKILL}", f"pricing:{SKILL}"]
    assert lines_with(patterns, json.loads(price)["id"]) == 1
    lessons = agent / "prompt" / "skills" / f"{SKILL}.md"
    assert "Diff was incomplete" in lessons.read_text()
    assert (agent / "SOUL.md").read_text() == SOUL.replace("pricing: 20", "pricing: 19")
    made = commits_since(site, start)
    assert len(made) == 3, made
    [(rated, rating_paths), (priced, price_paths), (optimized, lessons_paths)] = made
    assert rated == f"rating({PROVIDER}/{SKILL}): 2/5 poor from {BUYER} (overpriced)"
    assert optimized == f"optimize({PROVIDER}/{SKILL}): 1 lesson from 3 low ratings"
    assert priced.startswith(f"pricing({PROVIDER}/{SKILL}): 20 → 19 ")
    rel = lambda path: path.relative_to(site.root).as_posix()  # noqa: E731
    assert {rel(month), rel(memory / "cases.jsonl"), rel(memory / "entities.jsonl")} <= set(
        rating_paths
    )
    expected = {rel(agent / name) for name in ("SOUL.md", "pricing.jsonl")}
    assert {*expected, rel(patterns)} == set(price_paths)
    assert {rel(lessons), rel(patterns)} == set(lessons_paths)
    assert site.git("status", "--porcelain", "--", "_data") == ""
    assert reputation(site) == whole


def run(template: Site, submit_killed_at: int, passes_killed_at: list[int], whole: Any) -> None:
    """A submit killed at a step, passes killed at theirs, the buyer's retry, a whole pass."""
    with tempfile.TemporaryDirectory() as folder:
        site = template.copy_to(Path(folder) / "site")
        start = site.git("rev-parse", "HEAD").strip()
        runtime = site.runtime()
        attempt(lambda: submit_rating(runtime, PAYLOAD, BUYER), submit_killed_at)
        for at in passes_killed_at:
            attempt(lambda: reconcile_ratings(site.runtime()), at)
        submit_again(site)
        assert attempt(lambda: reconcile_ratings(site.runtime()), None)
        assert_recorded_once(site, start, whole)


@pytest.mark.parametrize("killed_at_step", range(STEPS + 1))
def test_a_submit_killed_at_each_step_is_recorded_once(
    template: Site, whole: dict[str, Any], killed_at_step: int
) -> None:
    run(template, killed_at_step, [], whole)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    submit_killed_at=st.integers(0, STEPS),
    passes_killed_at=st.lists(st.integers(0, STEPS), min_size=1, max_size=3),
)
def test_a_rating_and_its_price_cut_killed_at_any_steps_are_recorded_once(
    template: Site, whole: dict[str, Any], submit_killed_at: int, passes_killed_at: list[int]
) -> None:
    """The passes that finish a killed submit are killed too, one after another."""
    run(template, submit_killed_at, passes_killed_at, whole)


def submit_again(site: Site) -> None:
    """The buyer's retry of a submit that never answered."""
    with suppress(AlreadySubmitted):
        submit_rating(site.runtime(), PAYLOAD, BUYER)


def test_a_whole_submit_takes_fewer_steps_than_the_kills_try(template: Site) -> None:
    """The kill points reach past the last step of a submit and its price cut."""
    with tempfile.TemporaryDirectory() as folder:
        site = template.copy_to(Path(folder) / "site")
        with killed_at(None) as killer:
            submit_rating(site.runtime(), PAYLOAD, BUYER)
        assert 6 <= killer.done < STEPS
