"""`feedbackd serve` end to end over real HTTP: the seeds' routes with their shapes, feedbackd's own
routes, the same files and commits as the commands, and the safety rules (SPEC section 12)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_kit import DaemonProcess, NotifyListener, wait_for
from tests.web_kit import Client, Server, serving
from tests.workspace_kit import Site, draft

RATING = {
    "provider_agent": "provider-1",
    "skill_id": "summarise",
    "rating": 2,
    "result_quality": "poor",
    "quality_details": "missed the second half",
    "would_reuse": False,
    "cost_value_ratio": "overpriced",
    "requester_agent": "buyer-1",
}


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "ws")
    site.write("writer", "qi-1.json", draft({"title": "Old title", "seo": {"metaTitle": "Meta"}}))
    site.write("writer", "qi-2.json", draft({"title": "Second"}))
    site.reconcile()  # the drafts are on record, as the daemon would have them
    return site


def rating(**changes: Any) -> dict[str, Any]:
    return {**RATING, "transaction_id": str(uuid.uuid4()), **changes}


# --- webhouse CMS -------------------------------------------------------------------------------
def test_webhouse_post_stores_the_entry_and_get_lists_newest_first(
    site: Site, served: Client
) -> None:
    body = {"type": "edit", "field": "title", "original": "a", "corrected": "b"}
    stored = served.post("/api/cms/agents/writer/feedback", body)
    assert stored.status == 200
    entry = stored.json()
    assert entry["id"].startswith("fb-") and entry["type"] == "edit"
    assert site.feedback("writer") == [entry]
    assert site.git("log", "-1", "--format=%s").strip() == "record(writer): edit of title"
    served.post("/api/cms/agents/writer/feedback", {"type": "rejection", "notes": "dry"})
    listed = served.get("/api/cms/agents/writer/feedback?limit=1").json()
    assert listed["total"] == 2
    assert [e["type"] for e in listed["entries"]] == ["rejection"]


@pytest.mark.parametrize("body", [{}, {"type": "praise"}, {"type": 3}])
def test_webhouse_post_without_a_known_type_is_400(served: Client, body: dict[str, Any]) -> None:
    answer = served.post("/api/cms/agents/writer/feedback", body)
    assert answer.status == 400
    assert answer.json()["error"] == "invalid_feedback"
    assert answer.json()["message"].startswith("type must be one of correction, rejection, edit")


def test_webhouse_limit_is_capped_at_100(site: Site, served: Client) -> None:
    answer = served.get("/api/cms/agents/writer/feedback?limit=5000")
    assert answer.status == 200 and answer.json() == {"entries": [], "total": 0}
    assert served.get("/api/cms/agents/writer/feedback?limit=ten").status == 400


# --- AgentBnB ---------------------------------------------------------------------------------
def test_agentbnb_submit_is_201_and_a_repeat_is_409(site: Site, served: Client) -> None:
    sent = rating()
    first = served.post("/api/feedback", sent)
    assert first.status == 201
    assert first.json()["feedback_id"] == sent["transaction_id"]
    assert first.json()["received_at"].endswith("Z")
    again = served.post("/api/feedback", sent)
    assert (again.status, again.json()["error"]) == (409, "feedback_already_submitted")
    month_files = list((site.agent("provider-1") / "ratings" / "summarise").glob("*.jsonl"))
    assert len(month_files) == 1 and len(month_files[0].read_text().splitlines()) == 1


@pytest.mark.parametrize(
    "changes",
    [{"rating": 9}, {"result_quality": "meh"}, {"surprise": 1}, {"requester_agent": None}],
)
def test_agentbnb_invalid_rating_is_400_with_issues(
    served: Client, changes: dict[str, Any]
) -> None:
    body = {k: v for k, v in rating(**changes).items() if v is not None}
    answer = served.post("/api/feedback", body)
    assert answer.status == 400
    assert answer.json()["error"] == "Validation failed"
    assert answer.json()["issues"] and all(isinstance(i, str) for i in answer.json()["issues"])


def test_agentbnb_list_and_reputation_equal_the_commands(site: Site, served: Client) -> None:
    for stars in (2, 5, 4):
        assert served.post("/api/feedback", rating(rating=stars)).status == 201
    listed = served.get("/api/feedback/summarise?limit=2&since=7d").json()
    command = json.loads(site.cli("feedback", "list", "--skill", "summarise", "--since", "7d",
                                  "--limit", "2", "--json").stdout)  # fmt: skip
    assert listed == command
    assert listed["count"] == 3 and len(listed["feedbacks"]) == 2
    reputation = served.get("/api/reputation/provider-1").json()
    assert reputation["score"] == reputation["reputation_score"]
    command = json.loads(site.cli("reputation", "provider-1", "--json").stdout)
    assert {k: v for k, v in reputation.items() if k != "score"} == command


def test_an_unrated_provider_has_the_cold_start_score(served: Client) -> None:
    assert served.get("/api/reputation/nobody").json()["score"] == 0.5


# --- curation ---------------------------------------------------------------------------------
def test_agents_and_queue_show_counts_and_fields(served: Client) -> None:
    [agent] = served.get("/api/agents").json()["agents"]
    assert (agent["agent_id"], agent["queued"], agent["approved"]) == ("writer", 2, 0)
    drafts = served.get("/api/agents/writer/queue").json()["drafts"]
    assert [d["id"] for d in drafts] == ["qi-1", "qi-2"]
    fields = {f["field"]: f for f in drafts[0]["fields"]}
    assert fields["seo.metaTitle"] == {
        "field": "seo.metaTitle", "original": "Meta", "current": "Meta", "changed": False,
    }  # fmt: skip


def test_approve_with_edits_makes_one_commit_by_the_curator(site: Site, served: Client) -> None:
    before = site.commit_count()
    answer = served.post(
        "/api/agents/writer/queue/qi-1/approve",
        {"edits": {"title": "New title", "seo.metaTitle": "New meta"},
         "curator": "Bo Reviewer <bo@example.org>"},
    )  # fmt: skip
    assert answer.status == 200, answer.text
    assert answer.json()["events"][0]["summary"] == "qi-1, 2 corrections (title, seo.metaTitle)"
    assert site.commit_count() == before + 1
    assert site.git("log", "-1", "--format=%an <%ae>").strip() == "Bo Reviewer <bo@example.org>"
    assert site.trailers()["Feedback-Fields"] == ["title, seo.metaTitle"]
    assert [e["corrected"] for e in site.feedback("writer")] == ["New title", "New meta"]
    assert "Corrected: New title" in site.prompt("writer")
    assert (site.agent("writer") / "approved" / "qi-1.json").is_file()


def test_http_and_command_line_make_the_same_decision(tmp_path: Path) -> None:
    """The same reject, once through the command line and once over HTTP: same files, same
    commit text and trailers."""
    results = []
    for face in ("cli", "http"):
        site = Site(tmp_path / face)
        site.write("writer", "qi-9.json", draft({"title": "T"}))
        site.reconcile()
        if face == "cli":
            done = site.cli(
                "reject", "writer", "qi-9", "--notes", "Too dry", "--curator", "C <c@x.org>"
            )
            assert done.returncode == 0, done.stderr
        else:
            with serving(site.root) as served:
                answer = served.post(
                    "/api/agents/writer/queue/qi-9/reject",
                    {"notes": "Too dry", "curator": "C <c@x.org>"},
                )
            assert answer.status == 200, answer.text
        entries = [{k: v for k, v in e.items() if k not in ("id", "createdAt")}
                   for e in site.feedback("writer")]  # fmt: skip
        message = site.git("log", "-1", "--format=%an%n%B")
        files = site.git("show", "--name-status", "--format=", "HEAD")
        item = (site.agent("writer") / "rejected" / "qi-9.json").read_text()
        results.append((entries, message, files, item))
    assert results[0] == results[1]


def test_reject_needs_notes_and_a_decided_item_is_409(site: Site, served: Client) -> None:
    assert served.post("/api/agents/writer/queue/qi-2/reject", {}).status == 400
    assert served.post("/api/agents/writer/queue/qi-2/reject", {"notes": "  "}).status == 400
    assert served.post("/api/agents/writer/queue/qi-2/reject", {"notes": "No"}).status == 200
    again = served.post("/api/agents/writer/queue/qi-2/approve", {})
    assert (again.status, again.json()["error"]) == (409, "already_decided")
    assert "rejected/" in again.json()["message"]


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/api/agents/nobody", 404),
        ("GET", "/api/agents/nobody/queue", 404),
        ("POST", "/api/agents/writer/queue/qi-404/approve", 404),
        ("GET", "/api/agents/..%2F..%2Fetc/queue", 400),  # a bad id: nothing is read
        ("POST", "/api/agents/writer/queue/bad%20id/approve", 400),
        ("GET", "/api/feedback/..", 400),
        ("GET", "/api/agents/..", 400),
        ("GET", "/api/reputation/a%00b", 400),
    ],
)
def test_unknown_agents_and_bad_ids(served: Client, method: str, path: str, status: int) -> None:
    answer = served.request(method, path, {} if method == "POST" else None)
    assert answer.status == status, answer.text
    assert "error" in answer.json()


def test_prompt_log_and_status_answer_as_the_commands(site: Site, served: Client) -> None:
    served.post("/api/agents/writer/queue/qi-1/approve", {"edits": {"title": "Better"}})
    prompt = served.get("/api/agents/writer/prompt")
    assert prompt.headers["content-type"].startswith("text/markdown")
    assert prompt.text == site.cli("prompt", "writer").stdout
    assert served.get("/api/log?agent=writer").json() == json.loads(
        site.cli("log", "writer", "--json").stdout
    )
    status = served.get("/api/status").json()
    assert set(status) >= {"running", "pid", "uptime_s", "last_event", "counts", "pending"}


def test_agreement_answers_as_the_command(site: Site, served: Client) -> None:
    reviews = site.agent("writer") / "reviews.jsonl"
    lines = [
        {"id": "rv-1", "item": "qi-1", "curator": "Ada <ada@example.org>", "verdict": "reject"},
        {"id": "rv-2", "item": "qi-1", "curator": "Bo <bo@example.org>", "verdict": "reject"},
    ]
    text = "".join(
        json.dumps({**line, "notes": "no", "at": f"2026-04-01T10:0{n}:00Z"}) + "\n"
        for n, line in enumerate(lines)
    )
    reviews.write_text(text)
    site.git("add", str(reviews))
    site.git("commit", "-q", "-m", "two reviews")
    answer = served.get("/api/agreement?agent=writer")
    assert answer.status == 200, answer.text
    assert answer.json() == json.loads(site.cli("agreement", "writer", "--json").stdout)
    assert (answer.json()["items"], answer.json()["agreed"]) == (1, 1)
    assert served.get("/api/agreement").json()["items"] == 1


def test_metrics_count_requests_by_route_and_status(served: Client) -> None:
    served.get("/api/agents")
    served.get("/api/agents/nobody")
    text = served.get("/metrics").text
    assert 'feedbackd_http_requests_total{method="GET",route="/api/agents",status="200"} 1' in text
    assert 'route="/api/agents/{agent}",status="404"} 1' in text
    assert "# TYPE feedbackd_events_total counter" in text


# --- safety -----------------------------------------------------------------------------------
def test_a_foreign_host_header_is_421(served: Client) -> None:
    assert served.get("/api/agents", headers={"Host": "attacker.example:80"}).status == 421
    assert served.get("/api/agents", headers={"Host": f"localhost:{served.port}"}).status == 200


def test_a_write_from_another_site_is_403(site: Site, served: Client) -> None:
    path = "/api/agents/writer/queue/qi-2/reject"
    evil = served.post(path, {"notes": "x"}, headers={"Origin": "https://attacker.example"})
    assert evil.status == 403
    assert (site.agent("writer") / "queue" / "qi-2.json").is_file()  # nothing happened
    own = served.post(path, {"notes": "x"}, headers={"Origin": f"http://{served.host}"})
    assert own.status == 200


def test_a_body_over_1_mib_is_413_and_malformed_json_400(site: Site, served: Client) -> None:
    path = "/api/cms/agents/writer/feedback"
    huge = b'{"type": "edit", "original": "' + b"x" * (1024 * 1024) + b'", "corrected": "y"}'
    assert served.request("POST", path, raw=huge).status == 413
    assert served.request("POST", path, raw=b'{"type": "edit",').status == 400
    assert served.request("POST", path, raw=b"[1, 2]").status == 400
    assert site.feedback("writer") == []


def test_with_a_token_every_request_but_healthz_needs_it(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "c0ffee42" * 8  # as `openssl rand -hex 32` makes one
    monkeypatch.setenv("FEEDBACKD_HTTP_TOKEN", token)
    with serving(site.root) as server:
        assert server.get("/healthz").status == 200
        assert server.get("/api/agents").status == 401
        wrong = {"Authorization": "Bearer nope"}
        assert server.get("/api/agents", headers=wrong).status == 401
        right = {"Authorization": f"Bearer {token}"}
        assert server.get("/api/agents", headers=right).status == 200
        assert server.get("/").status == 303  # the page sends a person to its login form
        login = server.request(
            "POST", "/login", raw=f"token={token}".encode(),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )  # fmt: skip
        cookie = login.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
        session = {"Cookie": cookie.split(";", 1)[0]}
        assert server.get("/api/agents", headers=session).status == 200


def serve(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "feedbackd", "-w", str(root), "serve", *args],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("listen", "message"),
    [
        ("0.0.0.0:8787", "needs a token"),
        ("localhost", "not an address to listen on"),
        ("127.0.0.1:99999", "not an address to listen on"),
        ("bad host!:80", "not a host name"),
    ],
)
def test_a_bad_listen_or_a_missing_token_is_a_clear_error(
    site: Site, listen: str, message: str
) -> None:
    done = serve(site.root, "--listen", listen)
    assert done.returncode == 1
    assert done.stderr.startswith("error: config_error: ")
    assert message in done.stderr


@pytest.mark.slow
def test_a_port_in_use_is_a_clear_error(site: Site, server: Server) -> None:
    done = serve(site.root, "--listen", server.host)
    assert done.returncode == 1
    assert "cannot listen on" in done.stderr


@pytest.mark.slow
def test_sigterm_stops_the_server_with_status_0(server: Server) -> None:
    assert server.stop() == 0


@pytest.mark.slow
def test_metrics_show_the_running_daemons_passes(site: Site, served: Client) -> None:
    """The daemon and the server side by side, as their two units run them: a decision made by
    moving a file shows in /metrics as an event and a pass."""
    listener = NotifyListener(site.root.parent)
    daemon = DaemonProcess(site, listener)
    try:
        daemon.wait_ready()
        site.move("writer", "qi-2.json", "approved")
        wait_for(lambda: 'feedbackd_events_total{event="approve"} 1' in served.get("/metrics").text,
                 what="the approval in /metrics")  # fmt: skip
        text = served.get("/metrics").text
        assert "feedbackd_daemon_running 1" in text
        passes = [line for line in text.splitlines() if line.startswith("feedbackd_passes_total")]
        assert passes and int(passes[0].split()[1]) >= 2  # the start-up pass and the approval's
    finally:
        assert daemon.stop() == 0
        listener.close()


def test_an_edited_configuration_counts_at_the_next_request(site: Site, served: Client) -> None:
    for n in range(3):
        edit = {"type": "edit", "field": "title", "original": f"a{n}", "corrected": f"b{n}"}
        assert served.post("/api/cms/agents/writer/feedback", edit).status == 200
    assert served.get("/api/agents/writer").json()["examples_injected"] == 3
    site.configure("prompt:\n  max_examples: 2\n")
    assert served.get("/api/agents/writer").json()["examples_injected"] == 2
    site.configure("prompt:\n  max_exampels: 2\n")
    broken = served.get("/api/agents/writer")
    assert broken.status == 500 and broken.json()["error"] == "config_error"
    assert "max_examples" in broken.json()["message"]  # the closest key is suggested
