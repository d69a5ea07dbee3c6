"""Nothing is read or moved through a symbolic link that leads out of `_data/` (SPEC section 2):
a decision folder (`approved/`, `rejected/`) linked elsewhere takes no draft, from the commands
and the HTTP API alike, and a draft linked to a file outside `_data/` is not read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.web_kit import serving
from tests.workspace_kit import Site, draft

FOLDERS = {"approve": "approved", "reject": "rejected"}
NOTES = {"approve": [], "reject": ["--notes", "too long"]}
BODIES = {"approve": {"edits": {"title": "Edited"}}, "reject": {"notes": "too long"}}


def _linked_site(tmp_path: Path, decision: str, leads_to: str) -> tuple[Site, Path]:
    """A workspace whose agent `writer` has a draft qi-1 and a decision folder that is a link:
    to a folder outside the workspace, or inside it but outside `_data/`."""
    site = Site(tmp_path / "site")
    site.write("writer", "qi-1.json", draft({"title": "Inside"}))
    site.reconcile()
    elsewhere = tmp_path / "elsewhere" if leads_to == "outside" else site.root / "notes"
    elsewhere.mkdir()
    folder = site.agent("writer") / FOLDERS[decision]
    if folder.exists():
        shutil.rmtree(folder)
    folder.symlink_to(elsewhere, target_is_directory=True)
    return site, elsewhere


def _decide(site: Site, decision: str, face: str) -> tuple[int, str]:
    """The decision on qi-1 as the command or the HTTP API takes it: (status, error code)."""
    if face == "cli":
        done = site.cli(decision, "writer", "qi-1", *NOTES[decision])
        return done.returncode, done.stderr
    with serving(site.root) as client:
        answer = client.post(f"/api/agents/writer/queue/qi-1/{decision}", BODIES[decision])
    return answer.status, answer.json().get("error", "") + ": " + answer.json().get("message", "")


@pytest.mark.parametrize("leads_to", ["outside", "beside _data"])
@pytest.mark.parametrize("face", ["cli", "http"])
@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_a_decision_folder_linking_out_of_data_takes_no_draft(
    tmp_path: Path, decision: str, face: str, leads_to: str
) -> None:
    site, elsewhere = _linked_site(tmp_path, decision, leads_to)
    queued = site.agent("writer") / "queue" / "qi-1.json"
    before = queued.read_bytes()
    status, said = _decide(site, decision, face)
    assert status == (1 if face == "cli" else 404), said
    assert "not_found" in said and f"_data/agents/writer/{FOLDERS[decision]}" in said
    assert "symbolic link" in said and str(tmp_path) not in said
    assert list(elsewhere.iterdir()) == []
    assert queued.read_bytes() == before
    assert site.git("status", "--porcelain", "--", "_data/agents/writer/queue") == ""
    # The draft was not taken: with the folder made a real one, it is decided as usual.
    (site.agent("writer") / FOLDERS[decision]).unlink()
    status, said = _decide(site, decision, face)
    assert status in (0, 200), said
    assert (site.agent("writer") / FOLDERS[decision] / "qi-1.json").is_file()
    assert '"item": "qi-1"' in (site.agent("writer") / "decisions.jsonl").read_text()


def test_a_file_in_a_linked_decision_folder_does_not_say_already_decided(tmp_path: Path) -> None:
    site, elsewhere = _linked_site(tmp_path, "approve", "outside")
    (elsewhere / "qi-1.json").write_text(json.dumps(draft({"title": "Elsewhere"})))
    done = site.cli("reject", "writer", "qi-1", "--notes", "too long")
    assert done.returncode == 0, done.stderr
    assert "already" not in done.stderr


def test_a_draft_linking_beside_data_is_not_read(tmp_path: Path) -> None:
    site = Site(tmp_path / "site")
    site.write("writer", "qi-1.json", draft({"title": "Inside"}))
    secret = site.root / "private" / "draft.json"
    secret.parent.mkdir()
    secret.write_text(json.dumps(draft({"title": "Private"}, {"title": "Before"})))
    (site.agent("writer") / "queue" / "qi-2.json").symlink_to(secret)
    warnings = site.reconcile().warnings
    assert "_data/agents/writer/queue/qi-2.json: symbolic link leads outside _data/; ignored" in (
        warnings
    )
    with serving(site.root) as client:
        listed = client.get("/api/agents/writer/queue").json()["drafts"]
        assert [each["id"] for each in listed] == ["qi-1"]
        refused = client.post("/api/agents/writer/queue/qi-2/approve", {})
    assert refused.status == 404 and "Private" not in refused.text
    assert secret.exists() and not (site.agent("writer") / "approved" / "qi-2.json").exists()
