"""`feedbackd serve`: build the web application for one workspace and serve it with uvicorn.

Refusals come before anything listens: a bad listen address, a missing token for a non-loopback
address, a port already taken. SIGTERM and SIGINT stop it cleanly: reads in flight have GRACE_S
to finish, writes in flight are waited for (web/stopping.py), and the exit status is 0.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import secrets
import signal
import socket
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from feedbackd.app.commands import learningstats, queries
from feedbackd.app.daemon.statusfile import pass_times
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.config import HttpSettings
from feedbackd.core.errors import ConfigError, FeedbackdError, InvalidId
from feedbackd.core.ids import ID_RULE
from feedbackd.core.websafety import (
    ListenAddress,
    host_names,
    parse_listen,
    public_names,
    require_strong_token,
)
from feedbackd.core.webusers import Access, parse_users
from feedbackd.edges.files import read_file_text
from feedbackd.edges.hostnames import machine_names
from feedbackd.web import api, panel
from feedbackd.web.attempts import FailedAttempts
from feedbackd.web.connections import Connections, accept_backlog, raise_open_file_limit
from feedbackd.web.guard import ASGIApp, Guard
from feedbackd.web.metrics import (
    RequestCounter,
    events_lines,
    learning_lines,
    pass_lines,
    status_lines,
)
from feedbackd.web.stopping import GracefulServer, Stopping

log = logging.getLogger("feedbackd")
TOKEN_ENV = "FEEDBACKD_HTTP_TOKEN"
GRACE_S = 10  # how long reads in flight may take to finish after SIGTERM (writes are waited for)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def serve(
    runtime: Runtime,
    config: str | None,
    listen_text: str | None,
    mounted: Mapping[str, ASGIApp] | None = None,
) -> int:
    """Serve the workspace; `mounted`: other faces' ASGI apps by the path they answer (launch.py
    hands over the MCP server's `/mcp`), behind the same guard as every route."""
    listen = parse_listen(
        listen_text or runtime.settings.http.listen,
        "--listen" if listen_text else "http.listen",
    )
    app, stopping = application(runtime, config, listen, mounted or {})
    sock = _bind(listen)
    server = _server(app, runtime.settings.http, stopping)
    log.info("serving http://%s/ for %s", listen, runtime.workspace.root)
    with _clean_stop():
        server.run(sockets=[sock])
    log.info("stopped")
    return 0


def application(
    runtime: Runtime,
    config: str | None,
    listen: ListenAddress,
    mounted: Mapping[str, ASGIApp] | None = None,
) -> tuple[Guard, Stopping]:
    """What `serve` answers with on `listen`: the routes behind the safety rules, and the gate
    that holds back a stop for the writes in flight. A listen beyond loopback needs a token."""
    access = load_access(runtime)
    if not access.guarded and not listen.is_loopback:
        raise ConfigError(
            f"listening on {listen} (not a loopback address) needs a token",
            hint=f"put one in a file named by http.token_file, or set ${TOKEN_ENV}; or name "
            "each curator's in http.users_file",
        )
    names = _public_names(runtime, listen)
    stopping = Stopping()
    site = api.Site(str(runtime.workspace.root), config)
    return build_app(site, listen, access, stopping, names, mounted or {}), stopping


def _server(app: Guard, http: HttpSettings, stopping: Stopping) -> GracefulServer:
    """uvicorn with the connection cap, the request and send timeouts, the proxies it believes
    and the stop that waits for writes."""
    open_files = raise_open_file_limit(http.max_connections)
    settings = uvicorn.Config(
        app,
        http=Connections(http.max_connections).protocol(),
        backlog=accept_backlog(http.max_connections, open_files),
        log_level="warning",
        access_log=False,
        lifespan="off",
        **forwarding(http.trusted_proxies),
    )
    return GracefulServer(settings, stopping, GRACE_S)


def forwarding(trusted: Sequence[str]) -> dict[str, Any]:
    """uvicorn's settings for X-Forwarded-For and X-Forwarded-Proto: believed from
    http.trusted_proxies only. uvicorn's own default believes 127.0.0.1, so any loopback
    client could name another address for itself and escape the limit on wrong tokens."""
    if not trusted:
        return {"proxy_headers": False}
    # uvicorn reads a network with host bits set (10.0.0.1/8) as a name: give it the network.
    allowed = [str(ipaddress.ip_network(entry, strict=False)) for entry in trusted]
    return {"proxy_headers": True, "forwarded_allow_ips": allowed}


@contextmanager
def _clean_stop() -> Iterator[None]:
    """The server finishes the requests in flight on SIGTERM or SIGINT, then uvicorn sends the
    signal again to the handler it found; this one lets that pass, so a clean stop exits 0 (as
    systemd expects of a service it stopped)."""
    previous = {number: signal.signal(number, _stopped) for number in STOP_SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _stopped(number: int, frame: FrameType | None) -> None:
    """The server has already stopped by the time this runs: nothing is left to do."""


def _public_names(runtime: Runtime, listen: ListenAddress) -> frozenset[str]:
    """http.public_names, and on a wildcard listen the machine's own names and addresses."""
    configured = public_names(runtime.settings.http.public_names)
    return configured | host_names(machine_names()) if listen.is_wildcard else configured


def load_access(runtime: Runtime) -> Access:
    """Who may use the server: the curators of http.users_file, or the holder of the shared
    token, or (neither set) everyone. Not both: a shared token names no curator, so its holder
    could write as anyone, which is what the users file is there to prevent."""
    token = load_token(runtime)
    name = runtime.settings.http.users_file
    if name is None:
        return Access(token=token)
    if token is not None:
        source = "http.token_file" if runtime.settings.http.token_file else f"${TOKEN_ENV}"
        raise ConfigError(
            f"http.users_file and {source} are both set: with a users file every request "
            "names its curator by their own token",
            hint=f"remove {source}, or give each program a line of its own in the users file",
        )
    path = runtime.workspace.root / Path(name).expanduser()
    users = parse_users(_secret_text(path, "http.users_file"), f"http.users_file {path}")
    # The panel's cookies are signed with a key of this server's: they hold no token, and a
    # restart (a new key) signs every curator out.
    return Access(users=users, key=secrets.token_bytes(32))


def _secret_text(path: Path, setting: str) -> str:
    try:
        return read_file_text(path)
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(
            f"{setting} {path}: cannot read it ({error})",
            hint="create the file, readable by feedbackd",
        ) from None


def load_token(runtime: Runtime) -> str | None:
    """The token from http.token_file (relative to the workspace), else $FEEDBACKD_HTTP_TOKEN."""
    name = runtime.settings.http.token_file
    if name is None:
        value = os.environ.get(TOKEN_ENV, "").strip()
        return require_strong_token(value, f"${TOKEN_ENV}") if value else None
    path = runtime.workspace.root / Path(name).expanduser()
    try:
        token = read_file_text(path).strip()
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(
            f"http.token_file {path}: cannot read it ({error})",
            hint="create the file with the token on its first line, readable by feedbackd",
        ) from None
    if not token:
        raise ConfigError(f"http.token_file {path} is empty", hint="write the token into it")
    return require_strong_token(token, f"http.token_file {path}")


def _bind(listen: ListenAddress) -> socket.socket:
    family = socket.AF_INET6 if ":" in listen.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((listen.host, listen.port))
    except OSError as error:
        sock.close()
        raise ConfigError(
            f"cannot listen on {listen}: {error.strerror or error}",
            hint="choose another address or port with --listen HOST:PORT",
        ) from None
    sock.set_inheritable(True)
    return sock


async def no_route(request: Request, error: Exception) -> Response:
    """Routing's refusals (no such route, a method the route does not take) in the shape every
    error has. An id holding an encoded `/` (`a%2Fb`) splits the path and matches no route:
    it is a bad id, said as such."""
    assert isinstance(error, HTTPException)
    raw_path = bytes(request.scope.get("raw_path") or b"")
    if error.status_code == 404 and b"%2f" in raw_path.lower():
        refusal = InvalidId("an id in the path holds a / (sent as %2F)", hint=f"ids are {ID_RULE}")
        return api.error_response(refusal)
    if error.status_code == 404 and panel.wants_page(request):
        return panel.missing_page(request)
    code = {404: "not_found", 405: "method_not_allowed"}.get(error.status_code, "usage")
    message = f"{request.method} {request.url.path}: {error.detail}"
    body = {"error": code, "message": message}
    return JSONResponse(body, status_code=error.status_code, headers=error.headers)


async def unexpected(request: Request, error: Exception) -> Response:
    """A bug: a 500 that says so without any detail of the server (Starlette then raises the
    exception again, and uvicorn logs it with its traceback)."""
    message = "the server failed unexpectedly; its log has the details"
    return JSONResponse({"error": "internal", "message": message}, status_code=500)


def build_app(
    site: api.Site,
    listen: ListenAddress,
    access: Access,
    stopping: Stopping,
    names: frozenset[str] = frozenset(),
    mounted: Mapping[str, ASGIApp] | None = None,
) -> Guard:
    counter: RequestCounter
    attempts = FailedAttempts()  # wrong tokens, shared by the login form and the bearer check

    async def metrics(request: Request) -> Response:
        runtime = await api.work(site.runtime)
        state = await api.work(lambda: queries.workspace_status(runtime, []))
        passes = await api.work(lambda: pass_times(runtime.workspace.state_dir))
        ratios = await api.work(lambda: learningstats.unedited_ratios(runtime))
        lines = [*status_lines(state), *events_lines(state), *pass_lines(passes)]
        lines += learning_lines(ratios)
        text = "\n".join([*lines, *counter.lines()]) + "\n"
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    async def refused(request: Request, error: Exception) -> Response:
        assert isinstance(error, FeedbackdError)
        return api.error_response(error, site.workspace, site.config)

    starlette = Starlette(
        routes=[
            *api.routes(site),
            *panel.routes(site, access, attempts),
            Route("/metrics", metrics, methods=["GET"]),
            # An ASGI app as endpoint: it answers every method of its path itself.
            *(Route(path, face) for path, face in (mounted or {}).items()),
        ],
        exception_handlers={
            FeedbackdError: refused,
            HTTPException: no_route,
            Exception: unexpected,
        },
    )
    counter = RequestCounter(starlette)  # the metrics route reads it when called
    return Guard(stopping.gate(counter), listen, access, public_names=names, attempts=attempts)
