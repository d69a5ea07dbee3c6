"""Who may talk to `feedbackd serve`: the listen address, and the Host and Origin checks that keep
a web page on another site from reaching the API through the user's browser (SPEC section 12).

Pure: strings in, answers out; the HTTP face applies them to every request.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from feedbackd.core.errors import ConfigError

MAX_BODY_BYTES = 1024 * 1024
# Where the guard leaves, in a request's ASGI state, the curator its token names
# (http.users_file): the routes and the MCP tools make every write as them.
CURATOR_STATE = "feedbackd.curator"

# The page may be framed by no one (another site's page would have a curator click Approve
# unawares), and loads nothing but its own files; no answer is sniffed as another type, and no
# address leaks to other sites in a Referer.
SECURITY_HEADERS = (
    (
        b"content-security-policy",
        b"default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)
_LISTEN_HINT = "use HOST:PORT, e.g. 127.0.0.1:8787, localhost:8787 or [::1]:8787"
MIN_TOKEN_CHARS = 32  # 32 random hex digits are 128 bits: beyond guessing at 10 tries a minute
_TOKEN_HINT = (
    "make one with `openssl rand -hex 32` (or "
    "`python3 -c 'import secrets; print(secrets.token_hex(32))'`) and put it there"
)
# What the panel's cookie holds: a value only the token's holder can make, so that a stolen
# cookie (a browser profile, a backup) does not give away the token scripts use.
_SESSION_LABEL = b"feedbackd web panel session"


@dataclass(frozen=True)
class ListenAddress:
    host: str
    port: int

    @property
    def is_loopback(self) -> bool:
        return is_loopback_host(self.host)

    @property
    def is_wildcard(self) -> bool:
        """0.0.0.0 or [::]: every address of the machine is served."""
        try:
            return ipaddress.ip_address(self.host).is_unspecified
        except ValueError:
            return False

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_listen(text: str, source: str = "--listen") -> ListenAddress:
    """HOST:PORT (an IPv6 host in brackets); ConfigError naming what is wrong otherwise."""
    host, port = _split_host_port(text.strip())
    if host is None or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"{source} {text!r} is not an address to listen on", hint=_LISTEN_HINT)
    if not _is_host_name(host):
        raise ConfigError(
            f"{source} {text!r}: {host!r} is not a host name or IP address", hint=_LISTEN_HINT
        )
    return ListenAddress(host, int(port))


def _split_host_port(text: str) -> tuple[str | None, str]:
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        return (host or None), rest.removeprefix(":") if rest.startswith(":") else "-"
    host, sep, port = text.rpartition(":")
    return (host if sep and host and ":" not in host else None), port


def _is_host_name(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        labels = host.rstrip(".").split(".")
        return all(label and len(label) < 64 and _is_label(label) for label in labels)


def _is_label(label: str) -> bool:
    return label.replace("-", "").isalnum() and label.isascii() and not label.startswith("-")


def host_of_header(text: str) -> str | None:
    """The host a Host header names, read strictly (RFC 9110: `host [":" port]`, the host a
    name, an IPv4 address or an IPv6 address in brackets, the port digits only); None for
    anything else. A lenient split let `127.0.0.1:80@evil.com` or `[::1]evil` pass as loopback,
    though a client may read such a name as another host."""
    if text.startswith("["):
        host, bracket, port = text[1:].partition("]")
        if not bracket or not _is_ipv6(host):
            return None
    else:
        host = text.partition(":")[0]
        port = text[len(host) :]
        if not host or not _is_host_name(host):
            return None
    if port and not (port.startswith(":") and _is_port(port[1:])):
        return None
    return host


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _is_port(text: str) -> bool:
    """An empty port stands for the scheme's own (RFC 3986); else at most 65535."""
    return not text or (len(text) <= 5 and text.isascii() and text.isdigit() and int(text) < 65536)


def is_loopback_host(host: str) -> bool:
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_allowed(
    host_header: str | None, listen: ListenAddress, public_names: frozenset[str] = frozenset()
) -> bool:
    """A request's Host must name the listen address, localhost, a loopback address or one of
    the public names (as host_names() spells them): a DNS-rebinding page reaches us under its own
    name and is refused."""
    host = host_of_header(host_header or "")
    if host is None:
        return False
    named = normal_host(host)
    return named == normal_host(listen.host) or is_loopback_host(host) or named in public_names


def normal_host(name: str) -> str:
    """One spelling per host: lower case, no final dot, no brackets, an IP address compressed."""
    bare = name.strip().lower().rstrip(".").removeprefix("[").removesuffix("]")
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        return bare


def host_names(names: Iterable[str]) -> frozenset[str]:
    """The machine's own names and addresses, spelled as host_allowed compares them."""
    return frozenset(normal_host(name) for name in names if name.strip())


def public_names(configured: Iterable[str], source: str = "http.public_names") -> frozenset[str]:
    """http.public_names, checked: a host name or an IP address each, without port or scheme."""
    for name in configured:
        bare = name.strip().removeprefix("[").removesuffix("]")
        if not bare or not _is_host_name(bare):
            raise ConfigError(
                f"{source}: {name!r} is not a host name or IP address",
                hint="list names and addresses alone, e.g. feedback.example.org or 192.0.2.10 "
                "(no scheme, no port)",
            )
    return host_names(configured)


def origin_allowed(
    origin: str | None, host_header: str | None, fetch_site: str | None = None
) -> bool:
    """A write from a browser must come from our own pages: its Origin names the same host and
    port the request was sent to. Clients that send no Origin (curl, agents) are not browsers.

    Our pages' referrer policy (no-referrer) makes a browser send `Origin: null` with their form
    posts (the login form); such a write is ours only when the browser's own Sec-Fetch-Site,
    which no page can set, says it came from the same origin."""
    if origin is None:
        return True
    if origin == "null":
        return fetch_site == "same-origin"
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.netloc or not host_header:
        return False
    return parts.netloc.lower() == host_header.lower()


def token_matches(presented: str | None, token: str) -> bool:
    """In constant time, so that the time an answer takes does not tell how much was right."""
    return presented is not None and hmac.compare_digest(presented.encode(), token.encode())


def require_strong_token(token: str, source: str) -> str:
    """The token, if it is long enough to resist guessing; ConfigError (not showing it) else."""
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"{source}: the token is {len(token)} characters; it must be at least "
            f"{MIN_TOKEN_CHARS}",
            hint=_TOKEN_HINT,
        )
    return token


def session_value(token: str) -> str:
    """What the panel's cookie holds: HMAC-SHA256 of a fixed label, keyed by the token."""
    return hmac.new(token.encode(), _SESSION_LABEL, hashlib.sha256).hexdigest()


def bearer_token(authorization: str | None) -> str | None:
    scheme, _, value = (authorization or "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None
