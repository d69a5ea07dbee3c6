"""The chaos test: users doing what users do around a running daemon, with a seed to replay.

`FEEDBACKD_CHAOS_SEED=N` replays one run; `FEEDBACKD_CHAOS_STEPS` makes runs longer.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tests.chaos_kit import Chaos, end, make_site
from tests.daemon_kit import NotifyListener

pytestmark = pytest.mark.slow

STEPS = int(os.environ.get("FEEDBACKD_CHAOS_STEPS", "120"))
ACTIONS = {
    "draft": 10,
    "approve": 12,
    "approve_slowly": 3,
    "reject": 5,
    "rate": 8,
    "kill": 2,
    "reset": 1,
    "drop": 1,
    "revert": 2,
    "stash": 2,
    "rename": 1,
}


for skipped in os.environ.get("FEEDBACKD_CHAOS_SKIP", "").split(","):
    ACTIONS.pop(skipped, None)


def seeds() -> list[int]:
    chosen = os.environ.get("FEEDBACKD_CHAOS_SEED")
    if chosen:
        return [int(chosen)]
    return [random.randrange(1_000_000) for _ in range(2)]


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
