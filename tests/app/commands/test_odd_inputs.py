"""Inputs at the edges of what is valid are answered, never with a 500 or a traceback: the last
date there is, a field whose name holds a dot, and a snippet that is no UTF-8 beside a damaged
feedback.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.web_kit import serving
from tests.workspace_kit import Site, draft

LAST_DAYS = ["9999-12-31", "9999-12-31T23:59:59Z", "9999-12-31T23:00:00-05:00"]


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "ws")
    site.write("w", "qi-1.json", draft({"t": "first"}, {"t": "drafted"}), folder="approved")
    site.reconcile()
    return site


@pytest.mark.parametrize("at", LAST_DAYS)
def test_the_last_day_there_is_names_the_last_commit(site: Site, at: str) -> None:
    done = site.cli("prompt", "w", "--at", at)
    assert done.returncode == 0, done.stderr
    assert done.stdout == site.cli("prompt", "w").stdout
    now = site.cli("export", "w", "--format", "openai-sft")
    then = site.cli("export", "w", "--format", "openai-sft", "--at", at)
    assert then.returncode == 0, then.stderr
    assert then.stdout == now.stdout
    with serving(site.root) as client:
        answer = client.get(f"/api/agents/w/export?format=openai-sft&at={at.replace('+', '%2B')}")
    assert answer.status == 200, answer.text
    assert answer.text == now.stdout


def test_an_edit_of_a_field_named_with_a_dot_is_written(site: Site) -> None:
    site.write("w", "qi-2.json", draft({"v1.2": "old", "title": "Kept"}))
    site.reconcile()
    with serving(site.root) as client:
        answer = client.post("/api/agents/w/queue/qi-2/approve", {"edits": {"v1.2": "new"}})
    assert answer.status == 200, answer.text
    approved = json.loads((site.agent("w") / "approved" / "qi-2.json").read_text())
    assert approved["contentData"] == {"v1.2": "new", "title": "Kept"}
    lesson = [entry for entry in site.feedback("w") if entry.get("queueItemId") == "qi-2"]
    assert [(e["field"], e["original"], e["corrected"]) for e in lesson] == [("v1.2", "old", "new")]


def test_an_edit_naming_no_field_is_refused(site: Site) -> None:
    site.write("w", "qi-2.json", draft({"v1": {"2": "old"}}))
    site.reconcile()
    before = (site.agent("w") / "queue" / "qi-2.json").read_bytes()
    with serving(site.root) as client:
        answer = client.post("/api/agents/w/queue/qi-2/approve", {"edits": {"v1.3": "new"}})
    assert answer.status == 400 and answer.json()["error"] == "invalid_item", answer.text
    assert (site.agent("w") / "queue" / "qi-2.json").read_bytes() == before


def test_a_snippet_that_is_no_utf8_is_shown_beside_a_damaged_feedback_file(site: Site) -> None:
    feedback = site.agent("w") / "feedback.json"
    feedback.write_bytes(feedback.read_bytes()[:40])
    (site.agent("w") / "prompt" / "feedback.md").write_bytes(b"\xff\xfe lessons\n")
    done = site.cli("prompt", "w")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "\ufffd\ufffd lessons\n"
    with serving(site.root) as client:
        prompt = client.get("/api/agents/w/prompt")
        page = client.get("/agents/w")
    assert prompt.status == 200 and prompt.text == "\ufffd\ufffd lessons\n"
    assert page.status != 500, page.text
    assert "feedback.json" in page.text
