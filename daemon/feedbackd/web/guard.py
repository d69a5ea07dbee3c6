"""The safety rules every request passes before any route sees it (SPEC section 12): the Host
check against DNS rebinding, the token (with its limit on wrong guesses), the Origin check
against cross-site writes, and the 1 MiB body limit; and the security headers every answer
carries, whichever layer made it. An ASGI middleware, so that no route can forget one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.responses import JSONResponse, Response

from feedbackd.core.websafety import (
    CURATOR_STATE,
    MAX_BODY_BYTES,
    SECURITY_HEADERS,
    ListenAddress,
    bearer_token,
    host_allowed,
    origin_allowed,
)
from feedbackd.core.webusers import Access, Caller
from feedbackd.web.attempts import FailedAttempts

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SESSION_COOKIE = "feedbackd_session"  # holds a value derived from the token, never the token
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Reachable without the token: the health check, the login form and the stylesheet and icon the
# form shows (code and a picture, no data).
OPEN_PATHS = frozenset(
    {"/healthz", "/login", "/static/panel.css", "/static/favicon.svg", "/favicon.ico"}
)
_SECURITY_NAMES = frozenset(name for name, _ in SECURITY_HEADERS)
# Paths that programs ask, answered 401 without the token where a browser is sent to the login
# form: the HTTP API's (under /api/), the metrics and the MCP server's.
PROGRAM_PATHS = frozenset({"/metrics", "/mcp"})


class Guard:
    def __init__(
        self,
        app: ASGIApp,
        listen: ListenAddress,
        access: Access | None,
        *,
        public_names: frozenset[str] = frozenset(),
        attempts: FailedAttempts | None = None,
    ) -> None:
        self.app = app
        self.listen = listen
        self.access = Access() if access is None else access
        self.public_names = public_names
        self.attempts = FailedAttempts() if attempts is None else attempts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _with_security_headers(send)
        headers = Headers(scope=scope)
        refusal = self._refusal(scope, headers)
        if refusal is None and scope["method"] not in SAFE_METHODS:
            try:
                body = await _read_body(headers, receive)
            except ClientGone:  # closed before its body was whole: no request to act on
                return
            if body is None:
                refusal = refuse(413, "too_large", "the request body is over 1 MiB")
            else:
                receive = _replay(body)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope, headers: Headers) -> Response | None:
        host = headers.get("host")
        if not host_allowed(host, self.listen, self.public_names):
            return refuse(
                421,
                "misdirected_request",
                f"this server answers to {self.listen}, localhost, a loopback address or a "
                "name in http.public_names only",
            )
        if scope["path"] not in OPEN_PATHS:
            refusal = self._token_refusal(scope, headers)
            if refusal is not None:
                return refusal
        if scope["method"] in SAFE_METHODS:
            return None
        if not origin_allowed(headers.get("origin"), host, headers.get("sec-fetch-site")):
            return refuse(403, "forbidden", "a write from another site's page is refused")
        return None

    def _token_refusal(self, scope: Scope, headers: Headers) -> Response | None:
        """Scripts present the token itself; the panel's browsers, the cookie login gave them.
        A wrong token counts against the client's address; a wrong cookie is no guess worth
        counting (it is 64 hex digits, and a stale one follows every change of token). The
        curator the token names (http.users_file) goes to the routes in the request's state."""
        if not self.access.guarded:
            return None
        presented = bearer_token(headers.get("authorization"))
        if presented is None:
            cookie = cookie_parser(headers.get("cookie", "")).get(SESSION_COOKIE)
            return _admitted(scope, self.access.by_cookie(cookie))
        address = client_address(scope)
        wait = self.attempts.wait_s(address)
        if wait is not None:
            return too_many_attempts(wait)
        caller = self.access.by_token(presented)
        if caller is None:
            self.attempts.failed(address)
        return _admitted(scope, caller)


def _admitted(scope: Scope, caller: Caller | None) -> Response | None:
    """None (go on) for a known caller, whose curator the routes then read; else 401."""
    if caller is None:
        return _unauthorised(scope)
    if caller.curator is not None:
        scope.setdefault("state", {})[CURATOR_STATE] = str(caller.curator)
    return None


def client_address(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def refuse(status: int, code: str, message: str) -> Response:
    return JSONResponse({"error": code, "message": message}, status_code=status)


def too_many_attempts(wait_s: int) -> Response:
    response = refuse(
        429,
        "too_many_attempts",
        f"too many wrong tokens from your address: try again in {wait_s} s",
    )
    response.headers["Retry-After"] = str(wait_s)
    return response


def _with_security_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            kept = [(k, v) for k, v in message.get("headers", []) if k not in _SECURITY_NAMES]
            message = {**message, "headers": [*kept, *SECURITY_HEADERS]}
        await send(message)

    return sending


def _unauthorised(scope: Scope) -> Response:
    path = str(scope["path"])
    if path.startswith("/api/") or path in PROGRAM_PATHS:
        response = refuse(401, "unauthorized", "send Authorization: Bearer TOKEN")
        response.headers["WWW-Authenticate"] = "Bearer"
        return response
    return Response(status_code=303, headers={"Location": "/login"})


class ClientGone(Exception):
    """The connection closed (by the client, or by the body timeout) before the body was
    whole: what came of it is not the request, even when it parses."""


async def _read_body(headers: Headers, receive: Receive) -> bytes | None:
    """The whole body, or None once it passes MAX_BODY_BYTES (by its length or as it arrives);
    ClientGone if the connection closes first."""
    declared = headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return None
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive
