"""`http.users_file` on the serve application (SPEC section 15), over real HTTP: each curator's
token names them, every write is made as them, a body naming another curator is refused (403),
an unknown token is 401, and a users file that cannot be read right stops `serve` before it
listens."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from feedbackd.mcp.mounted import PATH
from tests.mcp_kit import answer as tool_answer
from tests.mcp_kit import http_client, over_http, run, served_app
from tests.reviews_kit import (
    ADA,
    ADA_TOKEN,
    BO,
    BO_TOKEN,
    bearer,
    two_drafts_two_curators,
    users_line,
)
from tests.web_kit import serving
from tests.workspace_kit import Site


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return two_drafts_two_curators(tmp_path / "ws")


def test_each_curators_token_makes_their_decisions(site: Site) -> None:
    with serving(site.root) as server:
        approve = "/api/agents/lark/queue/qi-1/approve"
        answer = server.post(
            approve, {"edits": {"title": "Release 2.1: faster"}}, headers=bearer(ADA_TOKEN)
        )
        assert answer.status == 200, answer.text
        assert site.git("log", "-1", "--format=%an <%ae>|%s").strip() == (
            f"{ADA}|approve(lark): qi-1, 1 correction (title)"
        )
        notes = {"notes": "Say what changed for users."}
        answer = server.post("/api/agents/lark/queue/qi-2/reject", notes, headers=bearer(BO_TOKEN))
        assert answer.status == 200, answer.text
        assert site.git("log", "-1", "--format=%an <%ae>").strip() == BO


def test_a_body_naming_another_curator_is_refused_and_nothing_moves(site: Site) -> None:
    queued = site.agent("lark") / "queue" / "qi-1.json"
    before, head = queued.read_bytes(), site.git("rev-parse", "HEAD")
    with serving(site.root) as server:
        body = {"curator": BO, "edits": {"title": "Mine"}}
        answer = server.post("/api/agents/lark/queue/qi-1/approve", body, headers=bearer(ADA_TOKEN))
        assert answer.status == 403
        assert answer.json() == {
            "error": "forbidden",
            "message": f"the request names curator '{BO}', but its token is {ADA}'s: over HTTP "
            "each curator writes as themselves (leave curator out (the token says who you are), "
            "or use your own token)",
        }
        # Naming themselves (any spelling of their address) is no refusal.
        same = {"curator": "Ada <ADA@example.org>", "notes": "Too long."}
        answer = server.post("/api/agents/lark/queue/qi-2/reject", same, headers=bearer(ADA_TOKEN))
        assert answer.status == 200, answer.text
        assert site.git("log", "-1", "--format=%an <%ae>").strip() == ADA
    assert queued.read_bytes() == before
    assert site.git("rev-parse", "HEAD~1") == head


def test_a_recorded_entry_is_the_tokens_curators(site: Site) -> None:
    entry = {"type": "edit", "field": "title", "original": "A", "corrected": "B"}
    with serving(site.root) as server:
        answer = server.post("/api/cms/agents/lark/feedback", entry, headers=bearer(BO_TOKEN))
        assert answer.status == 200, answer.text
    assert site.git("log", "-1", "--format=%an <%ae>|%s").strip().startswith(f"{BO}|record(lark)")


def test_without_a_known_token_every_request_is_refused(site: Site) -> None:
    with serving(site.root) as server:
        for headers in ({}, bearer("nobody-" + "3" * 40), bearer(ADA_TOKEN[:31])):
            answer = server.get("/api/agents", headers=headers)
            assert answer.status == 401, headers
            assert answer.json()["error"] == "unauthorized"
            post = server.post("/api/agents/lark/queue/qi-1/approve", {}, headers=headers)
            assert post.status == 401
        assert server.get("/healthz").status == 200
        assert server.get("/api/agents", headers=bearer(BO_TOKEN)).status == 200
    assert (site.agent("lark") / "queue" / "qi-1.json").is_file()


def test_the_login_form_signs_a_curator_in_with_a_cookie_that_is_not_their_token(
    site: Site,
) -> None:
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    with serving(site.root) as server:
        wrong = server.post("/login", raw=b"token=" + b"9" * 40, headers=form)
        assert wrong.status == 401
        signed = server.post("/login", raw=f"token={BO_TOKEN}".encode(), headers=form)
        assert signed.status == 303
        cookie = signed.headers["set-cookie"].split(";", 1)[0]
        assert BO_TOKEN not in cookie
        assert hashlib.sha256(BO_TOKEN.encode()).hexdigest() not in cookie
        page = server.get("/agents/lark", headers={"Cookie": cookie})
        assert page.status == 200 and "Bo Reviewer" in page.text
        body = {"notes": "Not for us."}
        answer = server.post("/api/agents/lark/queue/qi-2/reject", body, headers={"Cookie": cookie})
        assert answer.status == 200, answer.text
    assert site.git("log", "-1", "--format=%an <%ae>").strip() == BO


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (f"{ADA} 1234\n", "/ws/users line 1: '1234' is not a SHA-256"),
        (f"{users_line(ADA, ADA_TOKEN)}Bo <bo> {'a' * 64}\n", "line 2: 'bo' is not an email"),
        (
            users_line(ADA, ADA_TOKEN) + users_line(BO, ADA_TOKEN),
            "line 2: the same token hash as Ada Curator <ada@example.org>'s",
        ),
    ],
)
def test_a_bad_users_file_stops_serve_before_it_listens(site: Site, text: str, said: str) -> None:
    (site.root / "users").write_text(text)
    done = site.cli("serve", "--listen", "127.0.0.1:1")
    assert done.returncode == 1
    assert done.stderr.startswith("error: config_error: ")
    assert said in done.stderr


def test_an_unreadable_users_file_and_a_shared_token_beside_it_are_refused(site: Site) -> None:
    (site.root / "users").unlink()
    done = site.cli("serve", "--listen", "127.0.0.1:1")
    assert done.returncode == 1 and "config_error: http.users_file" in done.stderr
    assert "cannot read it" in done.stderr
    (site.root / "users").write_text(users_line(ADA, ADA_TOKEN))
    (site.root / "token").write_text("t" * 40)
    site.configure("http:\n  users_file: users\n  token_file: token\n")
    done = site.cli("serve", "--listen", "127.0.0.1:1")
    assert done.returncode == 1
    assert "http.users_file and http.token_file are both set" in done.stderr


def test_over_mcp_a_write_is_the_tokens_curators(site: Site) -> None:
    """/mcp sits behind the same guard: record_feedback records as the token's curator."""
    site.configure("http:\n  users_file: users\nmcp:\n  allow_writes: true\n")
    edit = {"agent": "lark", "type": "edit", "field": "title", "original": "A", "corrected": "B"}

    async def main() -> Any:
        async with over_http(served_app(site.root), bearer(ADA_TOKEN)) as client:
            return await client.call_tool("record_feedback", edit)

    tool_answer(run(main))
    assert site.git("log", "-1", "--format=%an <%ae>|%s").strip().startswith(f"{ADA}|record(lark)")


def test_over_mcp_an_unknown_token_is_refused(site: Site) -> None:
    async def main() -> int:
        async with http_client(served_app(site.root), bearer("nobody-" + "3" * 40)) as http:
            return (await http.post(PATH, json={})).status_code

    assert run(main) == 401


def test_a_curator_named_in_the_draft_does_not_outrank_the_token(site: Site) -> None:
    """A draft's own `curator` key names who decides it when a curator moves it by hand; over
    HTTP with a users file, the write is the token's curator's whatever the draft says."""
    path = site.agent("lark") / "queue" / "qi-1.json"
    doc = json.loads(path.read_text())
    site.write("lark", "qi-1.json", {**doc, "curator": "Mallory <mallory@example.org>"})
    with serving(site.root) as server:
        answer = server.post("/api/agents/lark/queue/qi-1/approve", {}, headers=bearer(BO_TOKEN))
    assert answer.status == 200, answer.text
    assert site.git("log", "-1", "--format=%an <%ae>").strip() == BO
