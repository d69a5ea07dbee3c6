"""A soak at a size CI can afford: 96 decisions and 96 ratings through one running daemon.

The same waves as `python -m tests.bench.bench_soak` (drafts, edits then moves, rejections with
notes, rating files and `feedback submit` beside the daemon), checked from git history and the
files: each decision and each rating recorded exactly once. Open files, threads and child
processes, sampled whenever the daemon is quiet after a wave, stay flat after the warm-up wave.
Memory is not asserted here: RSS figures belong to the benchmark, not to a timed test.
"""

from __future__ import annotations

import argparse
from collections import Counter

import pytest

from tests.bench.bench_soak import (
    AGENTS,
    TARGET_FD_SPREAD,
    Soak,
    build_workspace,
    check_clean,
    check_history,
    check_ledgers,
    check_ratings,
    ledger_lines,
    rating_lines,
    soak_daemon,
)

pytestmark = pytest.mark.slow

DECISIONS, RATINGS, WAVES = 96, 96, 4
# Every file of the soak is written whole: the default 2 s for a file to settle would only wait,
# twice a wave (the drafts, then the decisions), and was a third of the soak's time.
SETTLE_MS = 300
# A rating through `feedback submit` beside the daemon: one in the warm-up wave, one after it
# (a command is a Python process of its own: 1.5 s each on a loaded machine).
CLI_EVERY = 48


@pytest.fixture(scope="module")
def soaked(tmp_path_factory: pytest.TempPathFactory) -> Soak:
    """One daemon, fed in waves; the checks run after it stopped."""
    work = tmp_path_factory.mktemp("soak")
    soak = Soak(work / "workspace", warm_waves=1)
    build_workspace(soak.root, settle_ms=SETTLE_MS)
    args = argparse.Namespace(
        decisions=DECISIONS, ratings=RATINGS, waves=WAVES, cli_every=CLI_EVERY, warmup_pct=20.0
    )
    soak_daemon(soak, args)
    for check in (check_history, check_ledgers, check_ratings, check_clean):
        check(soak)
    return soak


def test_every_decision_and_rating_is_recorded_exactly_once(soaked: Soak) -> None:
    assert soaked.problems == []
    assert soaked.log_errors == []  # e.g. a pass failing on a draft moved in the middle of it
    assert len(soaked.decided) == DECISIONS and len(soaked.rated) == RATINGS
    assert Counter(d.state for d in soaked.decided) == {"approved": 64, "rejected": 32}
    assert {d.agent for d in soaked.decided} == set(AGENTS)
    assert soaked.via_cli == len(range(0, RATINGS, CLI_EVERY)) == 2  # the first included
    assert ledger_lines(soaked.root) == DECISIONS and rating_lines(soaked.root) == RATINGS


def test_open_files_threads_and_children_stay_flat_after_warm_up(soaked: Soak) -> None:
    assert len(soaked.quiet) == WAVES
    warm, after = soaked.quiet[0], soaked.quiet[1:]
    assert max(s.fds for s in after) <= warm.fds + TARGET_FD_SPREAD, soaked.quiet
    assert {s.threads for s in after} == {warm.threads}, soaked.quiet
    assert max(s.children for s in after) <= warm.children, soaked.quiet
    # While busy too, nothing piles up: a git child or two at a time, never a growing heap.
    busiest = max(s.children for s in soaked.samples)
    assert busiest <= warm.children + 4, busiest
    assert max(s.fds for s in soaked.samples) <= warm.fds + 16, max(s.fds for s in soaked.samples)


def test_the_soak_checks_see_a_decision_recorded_twice(soaked: Soak) -> None:
    """The exactly-once checks are not vacuous: a second ledger line for an item is caught."""
    copy = Soak(soaked.root, decided=list(soaked.decided), rated=dict(soaked.rated))
    ledger = soaked.root / "_data" / "agents" / AGENTS[0] / "decisions.jsonl"
    original = ledger.read_bytes()
    try:
        ledger.write_bytes(original + original.splitlines(keepends=True)[-1])
        check_ledgers(copy)
    finally:
        ledger.write_bytes(original)
    assert any("decisions.jsonl" in problem and "1 extra" in problem for problem in copy.problems)
