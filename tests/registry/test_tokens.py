"""Tokens: their shape, hashing, the Authorization header, and what a prefix covers."""

from __future__ import annotations

import base64

import pytest

from registry.tokens import (
    Credentials,
    covers,
    hash_secret,
    new_token,
    parse_authorization,
    parse_token,
    reserves,
    secret_matches,
)


def test_new_token_round_trips() -> None:
    text, cred = new_token()
    assert text.startswith("wgt_") and parse_token(text) == cred
    assert secret_matches(cred.secret, hash_secret(cred.secret))
    assert not secret_matches(cred.secret + "x", hash_secret(cred.secret))
    assert new_token()[0] != text


def test_authorization_header() -> None:
    text, cred = new_token()
    basic = base64.b64encode(f"anyone:{text}".encode()).decode()
    assert parse_authorization(None) is None
    assert parse_authorization(f"Bearer {text}") == cred
    assert parse_authorization(f"bearer   {text} ") == cred
    assert parse_authorization(f"Basic {basic}") == cred
    for bad in ("Bearer", "Bearer nope", f"Token {text}", "Basic !!!", f"Bearer {text}x"):
        assert parse_authorization(bad) == Credentials("", "")


@pytest.mark.parametrize(
    ("prefix", "module", "want"),
    [
        ("example.com/acme", "example.com/acme", True),
        ("example.com/acme", "example.com/acme/enc", True),
        ("example.com/acme", "example.com/acme/enc/v2", True),
        ("example.com/acme", "example.com/acmeco/enc", False),
        ("example.com/acme", "example.com", False),
        ("example.com", "example.com/anything", True),
        ("*.acme.test", "models.acme.test/team/m", True),
        ("*.acme.test", "acme.test/m", False),
        ("example.com/acme/enc/v2", "example.com/acme/enc", False),
        ("", "example.com/acme", False),
        ("example.com/acme,other.org", "other.org/x", False),
    ],
)
def test_covers(prefix: str, module: str, want: bool) -> None:
    assert covers(prefix, module) is want


@pytest.mark.parametrize(
    ("prefix", "module", "covered", "reserved"),
    [
        # grants are exact; the hosted namespace is folded on hosts that ignore case
        ("github.com/acme", "github.com/acme/x", True, True),
        ("github.com/acme", "github.com/Acme/x", False, True),
        ("github.com/Acme", "github.com/acme/x", False, True),
        ("github.com/acme/*", "github.com/ACME/Secret", False, True),
        ("hf.co/acme", "hf.co/ACME/m", False, True),
        ("huggingface.co/acme", "hf.co/acme/m", False, True),
        ("hf.co/acme", "huggingface.co/acme/m", False, True),
        ("github.com/acme", "github.com/acmeco/x", False, False),
        ("example.com/team", "example.com/Team/x", False, False),
        ("", "github.com/acme/x", False, False),
        ("github.com/acme,other.org", "github.com/Acme/x", False, False),
    ],
)
def test_covers_is_exact_and_reserves_is_folded(
    prefix: str, module: str, covered: bool, reserved: bool
) -> None:
    assert covers(prefix, module) is covered
    assert reserves(prefix, module) is reserved
