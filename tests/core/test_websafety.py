"""The pure rules behind `serve`'s refusals: which Host names pass, which public names are
accepted in the configuration, how long a token must be, and what the panel's cookie holds."""

from __future__ import annotations

import pytest

from feedbackd.core.errors import ConfigError
from feedbackd.core.websafety import (
    ListenAddress,
    host_allowed,
    origin_allowed,
    parse_listen,
    public_names,
    require_strong_token,
    session_value,
)

NAMES = public_names(["Feedback.Example.org.", "192.0.2.10", "[2001:DB8::7]", "fd00::2"])


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("feedback.example.org:8788", True),
        ("FEEDBACK.EXAMPLE.ORG.", True),
        ("192.0.2.10:8788", True),
        ("[2001:db8:0::7]:8788", True),
        ("[fd00:0:0::2]", True),
        ("127.0.0.1:8788", True),
        ("localhost", True),
        ("example.org", False),
        ("feedback.example.org.attacker.example", False),
        ("192.0.2.11", False),
        ("2001:db8::7", False),  # an IPv6 address in a Host header has brackets
        ("", False),
    ],
)
def test_a_public_name_passes_as_the_listen_address_does(host: str, allowed: bool) -> None:
    assert host_allowed(host, ListenAddress("127.0.0.1", 8788), NAMES) is allowed


def test_without_public_names_only_the_listen_address_and_loopback_pass() -> None:
    listen = ListenAddress("192.0.2.10", 8788)
    assert host_allowed("192.0.2.10:8788", listen)
    assert not host_allowed("feedback.example.org:8788", listen)


@pytest.mark.parametrize("name", ["feedback.example.org:8788", "http://feedback.example.org", ""])
def test_a_public_name_with_a_port_or_scheme_is_a_config_error(name: str) -> None:
    with pytest.raises(ConfigError) as raised:
        public_names([name])
    assert "http.public_names" in str(raised.value) and "no scheme, no port" in str(raised.value)


def test_a_wildcard_listen_is_recognised() -> None:
    assert parse_listen("0.0.0.0:8788").is_wildcard
    assert parse_listen("[::]:8788").is_wildcard
    assert not parse_listen("192.0.2.10:8788").is_wildcard


def test_a_token_needs_32_characters_and_the_refusal_does_not_show_it() -> None:
    assert require_strong_token("a" * 32, "$FEEDBACKD_HTTP_TOKEN") == "a" * 32
    with pytest.raises(ConfigError) as raised:
        require_strong_token("hunter2", "$FEEDBACKD_HTTP_TOKEN")
    assert "hunter2" not in str(raised.value) and "openssl rand -hex 32" in str(raised.value)


def test_the_cookie_value_is_derived_from_the_token_and_fixed() -> None:
    token = "0123456789abcdef" * 4
    value = session_value(token)
    assert value == session_value(token) != session_value(token[::-1])
    assert len(value) == 64 and token not in value


def test_a_null_origin_passes_only_from_the_same_origin() -> None:
    assert origin_allowed("null", "127.0.0.1:8787", "same-origin")
    assert not origin_allowed("null", "127.0.0.1:8787", "cross-site")
    assert not origin_allowed("null", "127.0.0.1:8787", None)
