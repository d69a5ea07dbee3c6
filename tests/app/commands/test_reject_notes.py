"""A rejection says why: the command refuses an empty or blank note, as the panel and the API
do, before anything is moved or committed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.workspace_kit import Site, draft


@pytest.mark.parametrize("notes", ["", "   ", "\n\t"])
def test_reject_without_a_note_is_refused_and_changes_nothing(tmp_path: Path, notes: str) -> None:
    site = Site(tmp_path / "site")
    site.write("w", "qi-1.json", draft({"t": "meh"}))
    site.reconcile()
    head = site.git("rev-parse", "HEAD")
    done = site.cli("reject", "w", "qi-1", "--notes", notes)
    assert done.returncode == 1, done.stdout
    assert done.stderr.startswith("error: invalid_feedback: notes are required"), done.stderr
    assert (site.agent("w") / "queue" / "qi-1.json").exists()
    # rejected/ holds only the .gitkeep that the agent's first commit put there
    assert [p.name for p in (site.agent("w") / "rejected").iterdir()] == [".gitkeep"]
    assert site.git("rev-parse", "HEAD") == head
    assert site.git("status", "--porcelain") == ""
