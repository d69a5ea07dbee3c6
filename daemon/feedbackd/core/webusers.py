"""Who is asking `feedbackd serve`: nobody in particular (loopback without a token), the holder
of the one shared token (`http.token_file`), or one of the curators of `http.users_file`, each
with a token of their own (SPEC sections 12 and 15).

The users file holds a line per curator, `NAME <EMAIL> TOKEN_SHA256`: the SHA-256 of the token
in hexadecimal, never the token, so the file can be read (even committed) without giving any
token away. With it, the token of a request names its curator, and every write is made as them.

Pure: the text of the file and the tokens presented in; curators and cookie values out. The key
that signs the panel's cookies is handed in by the server (random, made at its start).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass

from feedbackd.core.errors import ConfigError, FeedbackdError, Forbidden
from feedbackd.core.people import Person, parse_person
from feedbackd.core.websafety import MIN_TOKEN_CHARS, session_value, token_matches
from feedbackd.core.wording import quoted

_HASH = re.compile(r"[0-9a-fA-F]{64}")
# An address mail can reach: something, one @, a domain. Person itself only refuses spaces
# and brackets; a login names a person the team can write to.
_EMAIL = re.compile(r"[^@\s<>]+@[^@\s<>]+")
_LINE_HINT = (
    "write one curator a line: `Ada Curator <ada@example.org> SHA256`, the SHA-256 of their "
    "token in hex (`printf %s TOKEN | sha256sum`); # starts a comment"
)
# What a users' cookie is made from besides the token's hash: the server's key.
_USER_SESSION_LABEL = b"feedbackd web panel curator session "


class NotThisCurator(Forbidden):
    """A write over HTTP that names a curator other than the one its token names (403)."""


@dataclass(frozen=True)
class WebUser:
    person: Person
    token_sha256: str  # lower-case hex


def token_sha256(token: str) -> str:
    """What the users file holds for a token: its SHA-256, in lower-case hexadecimal."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def parse_users(text: str, source: str) -> tuple[WebUser, ...]:
    """The curators of a users file; ConfigError naming the first bad line. Blank lines and
    lines starting with # are skipped."""
    users: list[WebUser] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip() and not line.lstrip().startswith("#"):
            users.append(_user(line.strip(), f"{source} line {number}", users))
    if not users:
        raise ConfigError(f"{source} names no curator", hint=_LINE_HINT)
    return tuple(users)


def _user(line: str, where: str, earlier: list[WebUser]) -> WebUser:
    named, _, digest = line.rpartition(" ")
    if digest.endswith(">"):
        raise ConfigError(
            f"{where}: the token's SHA-256 is missing after the email", hint=_LINE_HINT
        )
    if not named.strip():
        raise ConfigError(f"{where}: not `NAME <EMAIL> TOKEN_SHA256`", hint=_LINE_HINT)
    if not _HASH.fullmatch(digest):
        raise ConfigError(
            f"{where}: {quoted(digest)} is not a SHA-256 (64 hexadecimal digits)", hint=_LINE_HINT
        )
    try:
        person = parse_person(named.strip(), where)
    except FeedbackdError as error:
        raise ConfigError(error.message, hint=_LINE_HINT) from None
    if not _EMAIL.fullmatch(person.email):
        raise ConfigError(
            f"{where}: {quoted(person.email)} is not an email address", hint=_LINE_HINT
        )
    user = WebUser(person, digest.lower())
    _refuse_clash(user, earlier, where)
    return user


def _refuse_clash(user: WebUser, earlier: list[WebUser], where: str) -> None:
    """One token names one curator; one address is one curator (reviews count a curator by
    their email), whatever name a line gives them."""
    for other in earlier:
        if other.token_sha256 == user.token_sha256 and other.person != user.person:
            raise ConfigError(
                f"{where}: the same token hash as {other.person}'s: a token names one curator",
                hint="give each curator a token of their own",
            )
        if _same_address(other.person, user.person) and other.person.name != user.person.name:
            raise ConfigError(
                f"{where}: {user.person.email} is {other.person}'s address already",
                hint="a curator may have several tokens (a line each), under one name",
            )


def _same_address(a: Person, b: Person) -> bool:
    return a.email.lower() == b.email.lower()


@dataclass(frozen=True)
class Caller:
    """Whom a request's token (or cookie) stands for: a curator of the users file, or (curator
    None) the holder of the shared token, or anyone where no token is asked."""

    curator: Person | None = None


ANYONE = Caller()


@dataclass(frozen=True)
class Access:
    """Who may use the server, and who each request is. `token`: the shared token
    (http.token_file), or `users`: the curators of http.users_file, whose cookies `key` signs;
    neither: everyone (loopback only)."""

    token: str | None = None
    users: tuple[WebUser, ...] = ()
    key: bytes = b""

    @property
    def guarded(self) -> bool:
        return self.token is not None or bool(self.users)

    def by_token(self, presented: str) -> Caller | None:
        """Whom a token stands for; None when it is no one's. A token shorter than the least
        length is no one's, whatever its hash: the server can check the length of a curator's
        token only when it is presented."""
        if self.token is not None:
            return ANYONE if token_matches(presented, self.token) else None
        if len(presented) < MIN_TOKEN_CHARS:
            return None
        digest = token_sha256(presented)
        # Every line compared in constant time, so the time taken tells nothing of the hashes.
        found = [u for u in self.users if hmac.compare_digest(u.token_sha256, digest)]
        return Caller(found[0].person) if found else None

    def by_cookie(self, cookie: str | None) -> Caller | None:
        """Whom a panel cookie stands for; None when it is no one's."""
        if cookie is None:
            return None
        if self.token is not None:
            return ANYONE if token_matches(cookie, session_value(self.token)) else None
        found = [u for u in self.users if token_matches(cookie, self._session(u.token_sha256))]
        return Caller(found[0].person) if found else None

    def cookie_for(self, presented: str) -> str | None:
        """The cookie value the login form sets for a token: derived from it, never the token
        itself; None when the token is no one's."""
        if self.by_token(presented) is None:
            return None
        if self.token is not None:
            return session_value(self.token)
        return self._session(token_sha256(presented))

    def _session(self, digest: str) -> str:
        """HMAC-SHA256 of the token's hash, keyed by the server's own key: the users file alone
        (which holds the hashes) is not enough to make one."""
        return hmac.new(self.key, _USER_SESSION_LABEL + digest.encode(), hashlib.sha256).hexdigest()


def acting_curator(token_curator: Person, named: str | None) -> str:
    """The curator a write is made as: the token's. A body naming another (by email, as
    reviews count curators) is refused; naming the same one, it is the token's name that
    counts."""
    if named is not None:
        person = parse_person(named, "curator")
        if not _same_address(person, token_curator):
            raise NotThisCurator(
                f"the request names curator {quoted(named, 80)}, but its token is "
                f"{token_curator}'s: over HTTP each curator writes as themselves",
                hint="leave curator out (the token says who you are), or use your own token",
            )
    return str(token_curator)
