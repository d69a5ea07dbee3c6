"""The web panel's pages over real HTTP, without a browser: what a page says when there is nothing
to show (an unknown agent), its icon, the skill lessons, the learning history's rows, and the
refusal a curator reads when a draft was decided meanwhile. The layout is the browser's to check
(test_web_panel.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.web_kit import Client
from tests.workspace_kit import Site, draft

SOUL = (
    "# Ledger Lark\n\nWrites release notes.\n\n## Release Notes\n\nTurns changelogs into notes.\n"
)


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "ws")
    site.write("lark", "qi-1.json", draft({"title": "Release 2.1", "summary": "Bug fixes."}))
    site.write("lark", "qi-2.json", draft({"title": "Release 2.2", "summary": "More fixes."}))
    (site.agent("lark") / "SOUL.md").write_text(SOUL)
    site.reconcile()
    return site


# --- a decision refused ---------------------------------------------------------------------------
def test_a_draft_decided_meanwhile_is_refused_in_one_plain_sentence(
    site: Site, served: Client
) -> None:
    site.move("lark", "qi-1.json", "approved")
    site.reconcile()
    answer = served.post("/api/agents/lark/queue/qi-1/approve", {})
    assert (answer.status, answer.json()["error"]) == (409, "already_decided")
    message = answer.json()["message"]
    assert re.fullmatch(
        r"qi-1 was already approved on \d{4}-\d\d-\d\d at \d\d:\d\d UTC; to decide it again,"
        r" move _data/agents/lark/approved/qi-1\.json back to _data/agents/lark/queue/",
        message,
    ), message
    assert str(site.root) not in message
