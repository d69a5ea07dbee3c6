"""Standard Webhooks signatures: the secret as that specification writes it, and the signature
of one message. https://www.standardwebhooks.com/ : `webhook-signature` is `v1,` and the base64
HMAC-SHA256 of `{id}.{timestamp}.{body}` under the secret's bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from typing import Literal, get_args
from urllib.parse import urlsplit

SECRET_PREFIX = "whsec_"
# The specification asks for 24 to 64 random bytes; fewer are guessable.
SECRET_MIN_BYTES = 24
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})

# The events a hook may ask for (SPEC section 17); every commit of one of them is sent. The type
# is what the settings accept, the tuple what a commit's event is checked against.
EventName = Literal[
    "approve",
    "reject",
    "revise",
    "record",
    "rating",
    "pricing",
    "optimize",
    "forget",
    "rename",
    "review",
    "dispute",
    "revert",
]
EVENT_NAMES: tuple[str, ...] = get_args(EventName)


def parse_secret(text: str) -> bytes:
    """The secret's bytes from a secret file's text (`whsec_` + base64, surrounding white space
    ignored); ValueError saying what is wrong."""
    value = text.strip()
    if not value.startswith(SECRET_PREFIX):
        raise ValueError(f"a secret starts with {SECRET_PREFIX} followed by base64")
    try:
        key = base64.b64decode(value[len(SECRET_PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"the part after {SECRET_PREFIX} is not base64") from None
    if len(key) < SECRET_MIN_BYTES:
        raise ValueError(
            f"a secret of {len(key)} bytes is too short: use at least {SECRET_MIN_BYTES}"
            f" random bytes (`{SECRET_PREFIX}` + base64 of 32 bytes)"
        )
    return key


def signature(key: bytes, msg_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` header of one attempt."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def url_problem(url: str) -> str | None:
    """Why a hook URL is refused, or None: only https, or plain http to this machine, where
    nobody on the way can read or change what is sent."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 (a bad port raises here)
    except ValueError as error:
        return f"not a URL: {error}"
    if parts.scheme == "https" and host:
        return None
    if parts.scheme == "http" and host in LOOPBACK_HOSTS | {"[::1]"}:
        return None
    if parts.scheme == "http" and host and host.startswith("127."):
        return None
    return "use https://, or plain http:// only to this machine (127.0.0.1, localhost, ::1)"
