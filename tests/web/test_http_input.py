"""`feedbackd serve` refuses malformed and hostile input with a 400 JSON error, answers every
error in the shape `{"error": code, "message": text}` whatever layer finds it, never shows a path
of the server's disk, and follows no symbolic link out of the workspace (SPEC section 12)."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.web_kit import Answer, Client, Server, serving
from tests.workspace_kit import Site, draft

RATING = {
    "transaction_id": "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f",
    "provider_agent": "writer",
    "skill_id": "summarise",
    "rating": 5,
    "result_quality": "excellent",
    "would_reuse": True,
    "cost_value_ratio": "fair",
    "requester_agent": "buyer-1",
}
DEEP = '{"type": "edit", "original": "a", "corrected": "b", "x": ' + "[" * 2000 + "]" * 2000 + "}"
HUGE_NUMBER = "9" * 5000
APPROVE = "/api/agents/writer/queue/qi-1/approve"
REJECT = "/api/agents/writer/queue/qi-1/reject"
CMS = "/api/cms/agents/writer/feedback"


class Bad(NamedTuple):
    """A request a client might send, the status it must get and what its error says (in
    `{code}: {message}`)."""

    method: str
    path: str
    body: str | None
    status: int
    says: str


NESTED_65 = '{"edits": {"title": ' + "[" * 64 + "]" * 64 + "}}"
BAD_REQUESTS = {
    "nested 2,000 deep": Bad("POST", CMS, DEEP, 400, "invalid_feedback: the JSON is nested"),
    "nested 65 deep": Bad("POST", APPROVE, NESTED_65, 400, "nested more than 64 levels"),
    "a 5,000-digit integer": Bad(
        "POST", "/api/feedback", f'{{"rating": {HUGE_NUMBER}}}', 400, "of 5,000 digits"
    ),
    "a 101-digit integer": Bad("POST", APPROVE, f'{{"curator": {"1" * 101}}}', 400, "101 digits"),
    "limit of 5,000 nines": Bad("GET", f"{CMS}?limit={HUGE_NUMBER}", None, 400, "limit '999"),
    "limit superscript two": Bad("GET", f"{CMS}?limit=%C2%B2", None, 400, "limit '²'"),
    "limit negative": Bad("GET", "/api/feedback/summarise?limit=-1", None, 400, "limit '-1'"),
    "ratings limit nines": Bad(
        "GET", f"/api/feedback/summarise?limit={HUGE_NUMBER}", None, 400, "limit '999"
    ),
    "ratings since banana": Bad(
        "GET", "/api/feedback/summarise?since=banana", None, 400, "since 'banana'"
    ),
    "ratings agent bad id": Bad(
        "GET", "/api/feedback/summarise?agent=..%2Fx", None, 400, "invalid_id"
    ),
    "log since banana": Bad("GET", "/api/log?since=banana", None, 400, "'banana'"),
    "log agent bad id": Bad("GET", "/api/log?agent=a%20b", None, 400, "invalid_id"),
    "agreement since banana": Bad("GET", "/api/agreement?since=banana", None, 400, "'banana'"),
    "agreement agent bad id": Bad("GET", "/api/agreement?agent=..%2Fx", None, 400, "invalid_id"),
    "agreement agent unknown": Bad("GET", "/api/agreement?agent=nobody", None, 404, "not_found"),
    "rating given twice": Bad(
        "POST",
        "/api/feedback",
        json.dumps(RATING)[:-1] + ', "rating": 1}',
        400,
        "the key 'rating' appears twice",
    ),
    "curator given twice": Bad(
        "POST",
        APPROVE,
        '{"curator": "A <a@x.org>", "curator": "B <b@x.org>"}',
        400,
        "the key 'curator' appears twice",
    ),
    "approve unknown key": Bad(
        "POST", APPROVE, '{"edit": {"title": "New"}}', 400, "`edit` (did you mean `edits`?)"
    ),
    "reject unknown key": Bad(
        "POST", REJECT, '{"notes": "dry", "note": "dry"}', 400, "unknown field `note`"
    ),
    "approve edits not text": Bad("POST", APPROVE, '{"edits": {"title": 3}}', 400, "edits"),
    "approve not an object": Bad("POST", APPROVE, "[]", 400, "must be a JSON object"),
    "approve not JSON": Bad("POST", APPROVE, "{", 400, "the JSON ends before it is complete"),
    "approve not UTF-8": Bad("POST", APPROVE, '{"curator": "\udcff"}', 400, "not UTF-8"),
    "approve NaN": Bad("POST", APPROVE, '{"edits": NaN}', 400, "NaN is not a JSON value"),
    "cms unknown type": Bad(
        "POST", CMS, '{"type": "x"}', 400, "invalid_feedback: type must be one of"
    ),
    "static file missing": Bad("GET", "/static/nope", None, 404, "not_found"),
    "no such route": Bad("GET", "/api/nothing", None, 404, "not_found"),
    "wrong method": Bad("DELETE", "/api/agents", None, 405, "method_not_allowed"),
    "id with an encoded slash": Bad("GET", "/api/agents/a%2Fb", None, 400, "invalid_id"),
    "queue id with an encoded slash": Bad(
        "GET", "/api/agents/a%2Fb/queue", None, 400, "invalid_id"
    ),
    "item id with an encoded slash": Bad(
        "POST", "/api/agents/writer/queue/..%2F..%2Fx/approve", "{}", 400, "invalid_id"
    ),
    "unknown agent": Bad("GET", "/api/agents/nobody/queue", None, 404, "not_found"),
    "unknown draft": Bad(
        "POST", "/api/agents/writer/queue/qi-9/approve", "{}", 404, "`ls _data/agents/writer/queue`"
    ),
    "draft already decided": Bad(
        "POST",
        "/api/agents/writer/queue/qi-done/approve",
        "{}",
        409,
        "move _data/agents/writer/approved/qi-done.json back",
    ),
    "a bug in the server": Bad("GET", "/api/agents/broken/prompt", None, 500, "internal"),
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    site = Site(tmp_path_factory.mktemp("input") / "ws")
    site.write("writer", "qi-1.json", draft({"title": "Old title"}))
    site.write("writer", "qi-done.json", draft({"title": "Done"}), folder="approved")
    site.write("broken", "qi-1.json", draft({"title": "Broken"}))
    site.reconcile()
    # A folder where the snippet file should be: reading it fails in a way no route expects.
    prompt = site.agent("broken") / "prompt" / "feedback.md"
    prompt.unlink()
    prompt.mkdir()
    return site


@pytest.fixture(scope="module")
def served(site: Site) -> Iterator[Client]:
    with serving(site.root) as client:
        yield client


def send(server: Client, bad: Bad) -> Answer:
    raw = None if bad.body is None else bad.body.encode("utf-8", "surrogateescape")
    return server.request(bad.method, bad.path, raw=raw)


@pytest.mark.parametrize("bad", BAD_REQUESTS.values(), ids=BAD_REQUESTS.keys())
def test_a_bad_request_gets_a_json_error_without_server_paths(
    site: Site, served: Client, bad: Bad
) -> None:
    answer = send(served, bad)
    assert answer.status == bad.status, answer.body[:300]
    assert answer.headers["content-type"].startswith("application/json"), answer.body[:300]
    error = answer.json()
    assert set(error) == {"error", "message"}, error
    assert all(isinstance(value, str) and value for value in error.values()), error
    assert bad.says in f"{error['error']}: {error['message']}", error
    assert str(site.root.parent) not in error["message"]
    assert "Traceback" not in answer.text


def test_nothing_was_decided_by_the_refused_requests(site: Site, served: Client) -> None:
    for bad in BAD_REQUESTS.values():
        send(served, bad)
    assert (site.agent("writer") / "queue" / "qi-1.json").is_file()
    assert site.feedback("writer") == []


@pytest.mark.slow
def test_an_unexpected_error_keeps_its_traceback_in_the_log(site: Site) -> None:
    running = Server(site.root)
    try:
        answer = running.get("/api/agents/broken/prompt")
        running.process.send_signal(signal.SIGTERM)
        _, log = running.process.communicate(timeout=20)
    finally:
        running.close()
    assert answer.status == 500 and "Traceback" not in answer.text
    assert b"Traceback" in log and b"IsADirectoryError" in log


# --- symbolic links: none is followed out of the workspace ---------------------------------------
SECRET = "outside-secret-7f3a"


@pytest.fixture
def linked(tmp_path: Path) -> Iterator[tuple[Site, Client]]:
    """A workspace with a draft that links to a file outside it, an agent folder that is a link
    to a folder outside it (with a draft of its own), and an agent whose queue/ is such a link."""
    site = Site(tmp_path / "ws")
    site.write("writer", "qi-1.json", draft({"title": "Inside"}))
    site.reconcile()
    outside = tmp_path / "outside"
    (outside / "agent" / "queue").mkdir(parents=True)
    (outside / "draft.json").write_text(json.dumps(draft({"title": SECRET})))
    (outside / "agent" / "queue" / "qi-1.json").write_text(json.dumps(draft({"title": SECRET})))
    ratings = outside / "agent" / "ratings" / "summarise"
    ratings.mkdir(parents=True)
    rated = {**RATING, "provider_agent": "elsewhere", "quality_details": SECRET}
    (ratings / "2026-12.jsonl").write_text(
        json.dumps({**rated, "timestamp": "2026-12-01T10:00:00.000Z"}) + "\n"
    )
    (site.agent("writer") / "queue" / "qi-link.json").symlink_to(outside / "draft.json")
    site.agent("elsewhere").symlink_to(outside / "agent", target_is_directory=True)
    site.agent("linked-queue").mkdir()
    (site.agent("linked-queue") / "queue").symlink_to(outside / "agent" / "queue")
    with serving(site.root) as client:
        yield site, client


def test_a_draft_linking_outside_is_neither_shown_nor_approved(
    linked: tuple[Site, Client],
) -> None:
    site, server = linked
    listed = server.get("/api/agents/writer/queue")
    assert listed.status == 200
    assert [d["id"] for d in listed.json()["drafts"]] == ["qi-1"]
    assert server.get("/api/agents/writer").json()["queued"] == 1
    assert SECRET not in server.get("/agents/writer").text
    for decision, body in (("approve", {}), ("reject", {"notes": "no"})):
        refused = server.post(f"/api/agents/writer/queue/qi-link/{decision}", body)
        assert refused.status == 404 and refused.json()["error"] == "not_found"
        assert SECRET not in refused.text
    assert not (site.agent("writer") / "approved" / "qi-link.json").exists()
    site.reconcile()  # the daemon's pass ignores them too
    assert SECRET not in site.git("log", "--all", "-p")


def test_a_queue_folder_linking_outside_is_neither_shown_nor_approved(
    linked: tuple[Site, Client],
) -> None:
    site, server = linked
    assert server.get("/api/agents/linked-queue/queue").json()["drafts"] == []
    assert server.get("/api/agents/linked-queue").json()["queued"] == 0
    refused = server.post("/api/agents/linked-queue/queue/qi-1/approve", {})
    assert refused.status == 404 and SECRET not in refused.text
    warnings = site.reconcile().warnings
    assert (
        "_data/agents/linked-queue/queue: symbolic link leads outside the workspace; ignored"
        in (warnings)
    )
    assert SECRET not in site.git("log", "--all", "-p")


def test_an_agent_folder_linking_outside_is_not_served(linked: tuple[Site, Client]) -> None:
    site, server = linked
    listed = [a["agent_id"] for a in server.get("/api/agents").json()["agents"]]
    assert listed == ["linked-queue", "writer"]
    for path in (
        "/api/agents/elsewhere",
        "/api/agents/elsewhere/queue",
        "/api/agents/elsewhere/prompt",
        "/api/cms/agents/elsewhere/feedback",
    ):
        answer = server.get(path)
        assert answer.status == 404 and answer.json()["error"] == "not_found", path
        assert SECRET not in answer.text
    assert server.get("/agents/elsewhere").status == 404
    for path in ("/api/feedback/summarise?agent=elsewhere", "/api/reputation/elsewhere"):
        answer = server.get(path)
        assert answer.status == 404 and answer.json()["error"] == "not_found", path
    assert server.get("/api/feedback/summarise").json()["count"] == 0
    for decision, body in (("approve", {}), ("reject", {"notes": "no"})):
        refused = server.post(f"/api/agents/elsewhere/queue/qi-1/{decision}", body)
        assert refused.status == 404 and SECRET not in refused.text
    recorded = server.post(
        "/api/cms/agents/elsewhere/feedback", {"type": "rejection", "notes": "x"}
    )
    assert recorded.status == 404
    assert sorted(p.name for p in site.agent("elsewhere").iterdir()) == ["queue", "ratings"]
    assert SECRET not in site.git("log", "--all", "-p")


def test_problems_in_answers_name_files_inside_the_workspace(tmp_path: Path) -> None:
    site = Site(tmp_path / "ws")
    site.write("writer", "qi-1.json", draft({"title": "Fine"}))
    site.write("writer", "qi-bad.json", "{bad")
    site.reconcile()  # the daemon's pass, which explains the bad draft beside it
    with serving(site.root) as server:
        approved = server.post(APPROVE, {})
        status = server.get("/api/status")
    # An approval's pass reads its own item only: the other draft's problem is the daemon's.
    assert approved.status == 200 and approved.json()["problems"] == []
    expected = "_data/agents/writer/queue/qi-bad.json: invalid JSON"
    assert [line[: len(expected)] for line in status.json()["problems"]] == [expected]


def test_a_configuration_error_names_the_file_without_its_folder(tmp_path: Path) -> None:
    site = Site(tmp_path / "ws")
    with serving(site.root) as server:
        site.configure("feedback:\n  max_entries: 200\nbogus: 1\n")
        answer = server.get("/api/agents")
    assert answer.status == 500
    error = answer.json()
    assert error["error"] == "config_error"
    assert error["message"].startswith("feedbackd.yaml, line 3: unknown key `bogus`")
    assert str(tmp_path) not in error["message"]
