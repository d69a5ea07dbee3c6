"""`http.users_file`: the curators of `feedbackd serve`, each named by the hash of their token; the
cookie the panel keeps for them; and the curator a write is made as."""

from __future__ import annotations

import hashlib

import pytest

from feedbackd.core.errors import ConfigError, InvalidItem
from feedbackd.core.people import Person
from feedbackd.core.websafety import session_value
from feedbackd.core.webusers import (
    ANYONE,
    Access,
    Caller,
    NotThisCurator,
    acting_curator,
    parse_users,
    token_sha256,
)

ADA_TOKEN = "a" * 40
BO_TOKEN = "b" * 40
ADA = Person("Ada Curator", "ada@example.org")
BO = Person("Bo Reviewer", "bo@example.org")
SOURCE = "http.users_file users"


def line(person: Person, token: str) -> str:
    return f"{person} {hashlib.sha256(token.encode()).hexdigest()}"


def test_each_line_names_a_curator_by_the_hash_of_their_token() -> None:
    text = f"# the team\n{line(ADA, ADA_TOKEN)}\n\n  {line(BO, BO_TOKEN)}\n"
    users = parse_users(text, SOURCE)
    assert [user.person for user in users] == [ADA, BO]
    access = Access(users=users, key=b"k" * 32)
    assert access.by_token(ADA_TOKEN) == Caller(ADA)
    assert access.by_token(BO_TOKEN) == Caller(BO)
    assert access.by_token("c" * 40) is None
    assert token_sha256(ADA_TOKEN) == hashlib.sha256(ADA_TOKEN.encode()).hexdigest()


def test_a_hash_in_capitals_is_the_same_hash() -> None:
    digest = token_sha256(ADA_TOKEN).upper()
    [user] = parse_users(f"{ADA} {digest}", SOURCE)
    assert Access(users=(user,)).by_token(ADA_TOKEN) == Caller(ADA)


def test_a_token_shorter_than_32_characters_is_no_ones_even_if_listed() -> None:
    short = "s" * 31
    access = Access(users=parse_users(line(ADA, short), SOURCE))
    assert access.by_token(short) is None
    assert access.cookie_for(short) is None


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Ada <ada@example.org>", "line 1: the token's SHA-256 is missing after the email"),
        (f"Ada <ada@example.org> {'g' * 64}", "line 1: 'gggg"),
        (f"Ada <ada@example.org> {'a' * 63}", "is not a SHA-256 (64 hexadecimal digits)"),
        (f"{'a' * 64}", "line 1: not `NAME <EMAIL> TOKEN_SHA256`"),
        (f"Ada ada@example.org {'a' * 64}", "line 1: 'Ada ada@example.org' is not `Name <email>`"),
        (f"Ada <ada> {'a' * 64}", "line 1: 'ada' is not an email address"),
        (f"<ada@example.org> {'a' * 64}", "line 1: '<ada@example.org>' is not `Name <email>`"),
        ("# nobody\n\n", "names no curator"),
    ],
)
def test_a_bad_line_is_a_config_error_naming_it(text: str, said: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_users(text, SOURCE)
    assert said in refused.value.message
    assert refused.value.message.startswith(SOURCE)
    assert "sha256sum" in refused.value.hint or "names no curator" in said


def test_two_curators_with_one_hash_are_refused_naming_the_second_line() -> None:
    text = f"{line(ADA, ADA_TOKEN)}\n{line(BO, ADA_TOKEN)}\n"
    with pytest.raises(ConfigError) as refused:
        parse_users(text, SOURCE)
    assert refused.value.message == (
        f"{SOURCE} line 2: the same token hash as {ADA}'s: a token names one curator"
    )


def test_one_address_is_one_curator_who_may_hold_several_tokens() -> None:
    users = parse_users(f"{line(ADA, ADA_TOKEN)}\n{line(ADA, BO_TOKEN)}\n", SOURCE)
    assert Access(users=users).by_token(BO_TOKEN) == Caller(ADA)
    renamed = Person("Someone Else", "ADA@example.org")
    with pytest.raises(ConfigError, match=r"line 2: ADA@example\.org is Ada Curator"):
        parse_users(f"{line(ADA, ADA_TOKEN)}\n{line(renamed, BO_TOKEN)}\n", SOURCE)


def test_the_cookie_is_derived_from_the_token_and_the_servers_key_never_the_token() -> None:
    users = parse_users(f"{line(ADA, ADA_TOKEN)}\n{line(BO, BO_TOKEN)}", SOURCE)
    access = Access(users=users, key=b"k" * 32)
    cookie = access.cookie_for(ADA_TOKEN)
    assert cookie is not None and ADA_TOKEN not in cookie and token_sha256(ADA_TOKEN) != cookie
    assert access.by_cookie(cookie) == Caller(ADA)
    assert access.by_cookie(access.cookie_for(BO_TOKEN)) == Caller(BO)
    # Another server's key (a restart) makes another cookie: the old one is no one's.
    assert Access(users=users, key=b"x" * 32).by_cookie(cookie) is None
    assert access.by_cookie(None) is None and access.by_cookie("0" * 64) is None


def test_the_shared_token_names_no_curator() -> None:
    shared = "t" * 40
    access = Access(token=shared)
    assert access.by_token(shared) == ANYONE and access.by_token("u" * 40) is None
    assert access.cookie_for(shared) == session_value(shared)
    assert access.by_cookie(session_value(shared)) == ANYONE
    assert not Access().guarded and access.guarded


def test_a_write_is_made_as_the_tokens_curator() -> None:
    assert acting_curator(ADA, None) == str(ADA)
    # The same address under another spelling is the same curator: their own name counts.
    assert acting_curator(ADA, "Ada <ADA@example.org>") == str(ADA)
    with pytest.raises(NotThisCurator) as refused:
        acting_curator(ADA, str(BO))
    assert refused.value.code == "forbidden"
    assert refused.value.message == (
        "the request names curator 'Bo Reviewer <bo@example.org>', but its token is "
        "Ada Curator <ada@example.org>'s: over HTTP each curator writes as themselves"
    )
    with pytest.raises(InvalidItem):
        acting_curator(ADA, "not a person")
