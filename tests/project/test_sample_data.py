"""The sample workspace data in `_data/` (used by `make run` and the README tour) stays valid."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from feedbackd.app.workspace.agentfiles import read_item
from feedbackd.core.ids import is_valid_id
from feedbackd.core.ratings.records import parse_rating, rating_line
from feedbackd.core.ratings.soul import parse_soul
from feedbackd.core.workspacepaths import DECISION_FOLDERS
from tests.repo_kit import ROOT

DATA = ROOT / "_data"
AGENTS = DATA / "agents"
DRAFTS = sorted(path for path in AGENTS.glob("*/queue/*") if not path.name.startswith("."))
RATINGS = sorted(AGENTS.glob("*/ratings/*/*.jsonl"))


def test_sample_covers_every_item_format_and_two_agents() -> None:
    assert {path.suffix for path in DRAFTS} >= {".json", ".yaml", ".yml", ".md"}
    assert len({path.parts[-3] for path in DRAFTS}) >= 2
    assert (DATA / "inbox" / "ratings").is_dir()


@pytest.mark.parametrize("path", DRAFTS, ids=lambda path: path.name)
def test_every_draft_reads_and_its_id_is_its_file_name(path: Path) -> None:
    item = read_item(path)
    assert is_valid_id(path.stem)
    assert item.content, f"{path} has no content fields"


def test_only_drafts_sit_in_decision_folders() -> None:
    decided = [
        path
        for folder in DECISION_FOLDERS
        for path in AGENTS.glob(f"*/{folder}/*")
        if path.name != ".gitkeep"
    ]
    assert decided == [], "the curator decides in the tour; the sample starts with a full queue"


def test_soul_has_priced_and_unpriced_skills() -> None:
    soul = parse_soul((AGENTS / "heavylift-chengwen" / "SOUL.md").read_text(encoding="utf-8"))
    prices = {skill.skill_id: (skill.price, skill.price_explicit) for skill in soul.skills}
    assert soul.name == "HeavyLift Chengwen"
    assert prices == {
        "claude-code-run": (20, True),
        "data-cleanup": (12.5, True),
        "report-writer": (10, False),
    }


@pytest.mark.parametrize("path", RATINGS, ids=lambda path: path.parent.name)
def test_rating_lines_are_stored_records(path: Path) -> None:
    now = datetime(2027, 1, 1, tzinfo=UTC)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines
    for line in lines:
        rating = parse_rating(json.loads(line), requester=None, now=now)
        assert rating_line(rating) == line, "stored exactly as feedbackd would write it"
        assert (rating.provider_agent, rating.skill_id) == (path.parts[-4], path.parent.name)
        assert rating.month == path.stem
