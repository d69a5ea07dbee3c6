"""`feedbackd serve`'s hardening (SPEC section 12), over real HTTP on loopback: the security
headers on every answer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.web_kit import Server
from tests.workspace_kit import Site, draft

pytestmark = pytest.mark.slow

TOKEN = "0f3a9c1e7b2d4f60" * 4  # 64 characters, as `openssl rand -hex 32` makes
BEARER = {"Authorization": f"Bearer {TOKEN}"}
SECURITY_HEADERS = {
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "ws")
    site.write("writer", "qi-1.json", draft({"title": "Old title"}))
    site.reconcile()
    return site


@pytest.fixture
def guarded(site: Site) -> Iterator[Server]:
    """A server that asks for the token."""
    running = Server(site.root, env={"FEEDBACKD_HTTP_TOKEN": TOKEN})
    yield running
    running.close()


def lower(headers: dict[str, str]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}


# --- security headers ---------------------------------------------------------------------------
def test_every_answer_carries_the_security_headers(guarded: Server) -> None:
    approve = "/api/agents/writer/queue/qi-1/approve"
    answers = {
        "health": guarded.get("/healthz"),
        "no token (API)": guarded.get("/api/agents"),
        "no token (page)": guarded.get("/"),
        "login form": guarded.get("/login"),
        "API": guarded.get("/api/agents", headers=BEARER),
        "page": guarded.get("/agents/writer", headers=BEARER),
        "static file": guarded.get("/static/panel.js", headers=BEARER),
        "unknown static file": guarded.get("/static/nope", headers=BEARER),
        "unknown route": guarded.get("/nope", headers=BEARER),
        "unknown item": guarded.post("/api/agents/writer/queue/nope/approve", {}, headers=BEARER),
        "foreign Host": guarded.get("/healthz", headers={"Host": "attacker.example"}),
        "foreign Origin": guarded.post(
            approve, {}, headers={**BEARER, "Origin": "http://attacker.example"}
        ),
        "body too large": guarded.request(
            "POST", approve, raw=b"x" * (1024 * 1024 + 1), headers=BEARER
        ),
    }
    statuses = {name: answer.status for name, answer in answers.items()}
    assert statuses == {
        "health": 200, "no token (API)": 401, "no token (page)": 303, "login form": 200,
        "API": 200, "page": 200, "static file": 200, "unknown static file": 404,
        "unknown route": 404, "unknown item": 404, "foreign Host": 421, "foreign Origin": 403,
        "body too large": 413,
    }  # fmt: skip
    for name, answer in answers.items():
        headers = lower(answer.headers)
        assert {key: headers.get(key) for key in SECURITY_HEADERS} == SECURITY_HEADERS, name
        policy = [rule.strip() for rule in headers.get("content-security-policy", "").split(";")]
        assert "default-src 'self'" in policy, name
        assert "frame-ancestors 'none'" in policy, name


def test_a_null_origin_is_a_write_of_our_own_only_when_the_browser_says_so(
    site: Site, guarded: Server
) -> None:
    """no-referrer makes a browser send `Origin: null` with our own login form; a sandboxed
    frame on another site sends it too, but its browser says cross-site."""
    path = "/api/agents/writer/queue/qi-1/reject"
    null = {**BEARER, "Origin": "null"}
    for fetch_site in (None, "cross-site", "same-site"):
        sent = null if fetch_site is None else {**null, "Sec-Fetch-Site": fetch_site}
        assert guarded.post(path, {"notes": "x"}, headers=sent).status == 403, fetch_site
    assert (site.agent("writer") / "queue" / "qi-1.json").is_file()  # nothing happened
    ours = {**null, "Sec-Fetch-Site": "same-origin"}
    assert guarded.post(path, {"notes": "x"}, headers=ours).status == 200
