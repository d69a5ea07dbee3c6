"""The chaos test: users doing what users do around a running daemon, with a seed to replay.

`FEEDBACKD_CHAOS_SEED=N` replays one run; `FEEDBACKD_CHAOS_STEPS` makes runs longer;
`FEEDBACKD_CHAOS_ALSO=reset,drop` adds kinds of step (the names are chaos_kit.WEIGHTS').
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tests.chaos_kit import WEIGHTS, Chaos, end, make_site
from tests.daemon_kit import NotifyListener

pytestmark = pytest.mark.slow

STEPS = int(os.environ.get("FEEDBACKD_CHAOS_STEPS", "120"))
# What the run does, and how often; FEEDBACKD_CHAOS_ALSO=stash,rename adds more of WEIGHTS.
CHECKED = (
    "draft",
    "approve",
    "approve_slowly",
    "reject",
    "rate",
    "kill",
    "reset",
    "drop",
    "stash",
    "rename",
    "revert",
    "review",
    "settle_dispute",
)
ACTIONS = {
    name: WEIGHTS[name]
    for name in (*CHECKED, *filter(None, os.environ.get("FEEDBACKD_CHAOS_ALSO", "").split(",")))
}


def seeds() -> list[int]:
    chosen = os.environ.get("FEEDBACKD_CHAOS_SEED")
    if chosen:
        return [int(chosen)]
    # Each pytest-xdist worker collects the tests itself, and all must name the same ones: the
    # workers of one run share its id, and draw the seeds from it.
    draw = random.Random(os.environ.get("PYTEST_XDIST_TESTRUNUID"))
    return [draw.randrange(1_000_000) for _ in range(2)]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("seed", seeds())
def test_the_workspace_agrees_with_its_history_whatever_users_do(tmp_path: Path, seed: int) -> None:
    listener = NotifyListener(tmp_path)
    chaos = Chaos(make_site(tmp_path / "ws"), seed, listener)
    try:
        chaos.start()
        chaos.run(STEPS, ACTIONS)
        chaos.settle()
        assert chaos.problems() == [], chaos.replay()
    finally:
        end(chaos)
        listener.close()
