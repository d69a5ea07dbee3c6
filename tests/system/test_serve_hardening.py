"""`feedbackd serve`'s hardening (SPEC section 12), over real HTTP on loopback: the security
headers on every answer, the names a server reached from other machines answers to, and the
token's hygiene (its length, the limit on guesses, the cookie, the login page's stylesheet)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.web_kit import Answer, Server, free_port
from tests.workspace_kit import Site, draft

pytestmark = pytest.mark.slow

TOKEN = "0f3a9c1e7b2d4f60" * 4  # 64 characters, as `openssl rand -hex 32` makes
BEARER = {"Authorization": f"Bearer {TOKEN}"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
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


def login(server: Server, token: str, source: str | None = None) -> Answer:
    body = f"token={token}".encode()
    return server.request("POST", "/login", raw=body, headers=FORM, source=source)


def serve(root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    listen = f"127.0.0.1:{free_port()}"
    argv = [sys.executable, "-m", "feedbackd", "-w", str(root), "serve", "--listen", listen]
    clean = {k: v for k, v in os.environ.items() if k != "FEEDBACKD_HTTP_TOKEN"}
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env={**clean, **env})


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


# --- public names -------------------------------------------------------------------------------
def test_a_public_name_passes_the_host_check_on_any_listen(site: Site) -> None:
    site.configure("http:\n  public_names: [feedback.example.org, 192.0.2.10, '[2001:db8::7]']\n")
    server = Server(site.root)
    try:
        for name in (
            "feedback.example.org",
            "FEEDBACK.example.org.",
            "192.0.2.10",
            "[2001:db8::7]",
        ):
            answer = server.get("/api/agents", headers={"Host": f"{name}:{server.port}"})
            assert answer.status == 200, name
        for name in ("other.example.org", "192.0.2.11", "example.org"):
            answer = server.get("/api/agents", headers={"Host": f"{name}:{server.port}"})
            assert answer.status == 421, name
    finally:
        server.close()


def machine_addresses() -> list[str]:
    """The addresses a user reads with `hostname -I`: the machine's own, not loopback."""
    if shutil.which("hostname") is None:
        return []
    shown = subprocess.run(["hostname", "-I"], capture_output=True, text=True, check=False)
    return shown.stdout.split()


def test_on_a_wildcard_listen_the_machines_own_names_pass(site: Site) -> None:
    site.configure("http:\n  public_names: [feedback.example.org]\n")
    server = Server(site.root, env={"FEEDBACKD_HTTP_TOKEN": TOKEN}, listen_host="0.0.0.0")
    try:
        names = [socket.gethostname(), socket.getfqdn(), "feedback.example.org"]
        hosts = [*names, *(f"[{a}]" if ":" in a else a for a in machine_addresses())]
        for host in hosts:
            answer = server.get("/api/agents", headers={**BEARER, "Host": f"{host}:{server.port}"})
            assert answer.status == 200, host
        rebinding = server.get("/api/agents", headers={**BEARER, "Host": "attacker.example"})
        assert rebinding.status == 421
        assert server.get("/api/agents", headers={"Host": socket.gethostname()}).status == 401
    finally:
        server.close()


def test_a_public_name_with_a_port_stops_serve_with_a_clear_error(site: Site) -> None:
    site.configure("http:\n  public_names: ['feedback.example.org:8788']\n")
    done = serve(site.root, {})
    assert done.returncode == 1
    assert done.stderr.startswith("error: config_error: http.public_names: ")
    assert "no scheme, no port" in done.stderr


# --- the token ----------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["environment", "token_file"])
def test_a_token_under_32_characters_is_refused(site: Site, where: str) -> None:
    short = "x" * 31
    if where == "token_file":
        (site.root / "http-token").write_text(short + "\n")
        site.configure("http:\n  token_file: http-token\n")
        done = serve(site.root, {})
    else:
        done = serve(site.root, {"FEEDBACKD_HTTP_TOKEN": short})
    assert done.returncode == 1
    assert done.stderr.startswith("error: config_error: ")
    assert "31 characters" in done.stderr and "at least 32" in done.stderr
    assert "openssl rand -hex 32" in done.stderr
    assert short not in done.stderr  # a refused token is not written to the log


def test_wrong_tokens_are_limited_to_ten_a_minute_per_address(guarded: Server) -> None:
    statuses = [login(guarded, f"guess-{n}").status for n in range(30)]
    assert statuses == [401] * 10 + [429] * 20
    refused = login(guarded, TOKEN)  # even the right token, while guessing is refused
    assert refused.status == 429
    assert 0 < int(lower(refused.headers)["retry-after"]) <= 60
    assert "Too many wrong tokens" in refused.text and "<form" not in refused.text
    api = guarded.get("/api/agents", headers=BEARER)
    assert api.status == 429 and lower(api.headers)["retry-after"].isdigit()
    assert set(api.json()) == {"error", "message"} and api.json()["error"] == "too_many_attempts"
    # another address is not held up by this one's guesses
    assert guarded.get("/api/agents", headers=BEARER, source="127.0.0.2").status == 200
    assert login(guarded, TOKEN, source="127.0.0.2").status == 303


def test_wrong_bearer_tokens_count_as_guesses_too(guarded: Server) -> None:
    wrong = {"Authorization": "Bearer not-the-token"}
    statuses = [guarded.get("/api/agents", headers=wrong).status for _ in range(12)]
    assert statuses == [401] * 10 + [429] * 2
    assert login(guarded, TOKEN).status == 429


def test_a_forwarded_address_does_not_escape_the_limit_on_wrong_tokens(guarded: Server) -> None:
    """No proxy is trusted by default: a loopback client that names a new address in each
    X-Forwarded-For is still the one address it connects from."""
    wrong = {"Authorization": "Bearer not-the-token"}
    statuses = [
        guarded.get("/api/agents", headers={**wrong, "X-Forwarded-For": f"198.51.100.{n}"}).status
        for n in range(12)
    ]
    assert statuses == [401] * 10 + [429] * 2
    forged = {**BEARER, "X-Forwarded-For": "198.51.100.99"}
    assert guarded.get("/api/agents", headers=forged).status == 429


def test_a_trusted_proxy_names_the_client_it_forwards_for(site: Site) -> None:
    """With http.trusted_proxies, the address a proxy forwards for is the client's: one client's
    guesses behind the proxy do not hold up another's."""
    site.configure("http:\n  trusted_proxies: [127.0.0.0/8]\n")
    server = Server(site.root, env={"FEEDBACKD_HTTP_TOKEN": TOKEN})
    try:
        guesser = {"Authorization": "Bearer not-the-token", "X-Forwarded-For": "198.51.100.7"}
        statuses = [server.get("/api/agents", headers=guesser).status for _ in range(11)]
        assert statuses == [401] * 10 + [429]
        other = {**BEARER, "X-Forwarded-For": "198.51.100.8"}
        assert server.get("/api/agents", headers=other).status == 200
    finally:
        server.close()


def test_a_trusted_proxy_that_is_not_an_address_stops_serve_with_a_clear_error(
    site: Site,
) -> None:
    site.configure("http:\n  trusted_proxies: [proxy.example.org]\n")
    done = serve(site.root, {})
    assert done.returncode != 0
    assert "trusted_proxies" in done.stderr and "not an IP address or network" in done.stderr


def test_the_cookie_holds_a_value_derived_from_the_token(guarded: Server) -> None:
    cookie = lower(login(guarded, TOKEN).headers)["set-cookie"]
    assert TOKEN not in cookie
    name, _, value = cookie.split(";", 1)[0].partition("=")
    assert len(value) >= 32
    assert guarded.get("/api/agents", headers={"Cookie": f"{name}={value}"}).status == 200
    assert guarded.get("/api/agents", headers={"Cookie": f"{name}={TOKEN}"}).status == 401
    old_cookie = {"Cookie": f"feedbackd_token={TOKEN}"}  # what earlier versions set
    assert guarded.get("/api/agents", headers=old_cookie).status == 401
    assert guarded.get("/api/agents", headers={"Authorization": f"Bearer {value}"}).status == 401
    assert guarded.get("/api/agents", headers=BEARER).status == 200


def test_the_login_page_gets_its_stylesheet_and_nothing_more(guarded: Server) -> None:
    form = guarded.get("/login")
    assert 'href="/static/panel.css"' in form.text
    assert "panel.js" not in form.text  # the form needs no script
    style = guarded.get("/static/panel.css")
    assert style.status == 200 and lower(style.headers)["content-type"].startswith("text/css")
    assert guarded.get("/static/panel.js").status == 303
    assert guarded.get("/static/panel.css/../panel.js").status in (303, 404)
    assert guarded.get("/api/agents").status == 401
