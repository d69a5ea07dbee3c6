"""`GET /api/agents/{id}/eval?at=&against=&items=` from a real `feedbackd serve`: the JSON
`feedbackd eval --json` prints, with eval.command from the configuration (SPEC section 14)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.eval_kit import AGENT, lessons_then_later
from tests.web_kit import Server
from tests.workspace_kit import Site

pytestmark = pytest.mark.slow


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "ws")
    lessons_then_later(site)
    site.configure("eval:\n  command: builtin:apply-lessons\n")
    return site


def test_eval_over_http_is_what_the_command_prints(site: Site, server: Server) -> None:
    between = site.git("rev-parse", "HEAD~8").strip()
    answer = server.get(f"/api/agents/{AGENT}/eval?at={between}&items=3")
    assert answer.status == 200, answer.body
    done = site.cli("eval", AGENT, "--at", between, "--items", "3", "--json")
    assert answer.json() == json.loads(done.stdout)
    assert answer.json()["score"] == 1.0 and len(answer.json()["results"]) == 3
    against = server.get(f"/api/agents/{AGENT}/eval?at=HEAD~2&against={between}").json()
    assert against["against"]["at"] == between and against["delta"] == 0.0


def test_eval_over_http_refuses_what_the_command_refuses(site: Site, server: Server) -> None:
    unknown = server.get("/api/agents/nobody/eval")
    assert unknown.status == 404 and unknown.json()["error"] == "not_found"
    bad = server.get(f"/api/agents/{AGENT}/eval?at=no-such-rev")
    assert bad.status == 400 and bad.json()["error"] == "usage"
    items = server.get(f"/api/agents/{AGENT}/eval?items=many")
    assert items.status == 400 and "items" in items.json()["message"]
