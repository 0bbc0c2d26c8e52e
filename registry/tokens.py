"""Bearer tokens: their shape, how they are stored, and what they cover.

A token reads ``wgt_<id>_<secret>``: ``id`` is 16 hex digits, ``secret`` 43
URL-safe base64 characters (32 random bytes). The database keeps the id, the
hex sha256 of the secret (never the secret itself), a module path prefix and
a scope; checking a token hashes the presented secret and compares in
constant time.

A token covers a module when its prefix matches a leading run of the path's
elements (``models.acme.test/team`` covers ``models.acme.test/team/enc`` but
not ``models.acme.test/teamwork``); elements may be globs, as in
``WGTPRIVATE`` (``*.acme.test``).

Case: a check that *grants* compares exactly, one that *denies* compares
folded (:func:`wgtpm.module.fold`), so that no spelling of a module reaches
more than its canonical spelling would. :func:`covers` grants (publish and
read under the prefix) and is exact: a token for ``github.com/acme`` does
not publish ``github.com/Acme/x``. :func:`reserves` denies (every token's
prefix is the hosted namespace, which the caching proxy never fetches
with the server's credentials) and is folded: GitHub and Hugging Face
resolve ``github.com/ACME/secret`` to the repository ``acme/secret``, so a
prefix ``github.com/acme`` reserves it, and ``huggingface.co/acme`` reserves
``hf.co/acme/...``. Scopes::

    read      read private modules under the prefix
    publish   publish under the prefix, and read as ``read`` does

Clients send ``Authorization: Bearer TOKEN``; ``Basic`` with the token as the
password (any user name) works too, so ``~/.netrc`` gives ``wgtpm get``
access to private modules.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from wgtpm.module import match_folded, match_patterns

__all__ = [
    "SCOPES",
    "Credentials",
    "covers",
    "hash_secret",
    "new_token",
    "parse_authorization",
    "parse_token",
    "reserves",
    "secret_matches",
]

SCOPES = ("read", "publish")
_TOKEN = re.compile(r"wgt_([0-9a-f]{16})_([A-Za-z0-9_-]{43})\Z")


@dataclass(frozen=True)
class Credentials:
    """A token as presented: its id and secret."""

    id: str
    secret: str


def new_token() -> tuple[str, Credentials]:
    """A fresh token string and its parts."""
    cred = Credentials(secrets.token_hex(8), secrets.token_urlsafe(32))
    return f"wgt_{cred.id}_{cred.secret}", cred


def parse_token(text: str) -> Credentials | None:
    """The parts of a token string, or ``None`` when it is not one."""
    m = _TOKEN.match(text.strip())
    return Credentials(m.group(1), m.group(2)) if m else None


def hash_secret(secret: str) -> str:
    """What the database keeps: the hex sha256 of the secret."""
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def secret_matches(secret: str, stored_sha256: str) -> bool:
    """Whether ``secret`` hashes to ``stored_sha256`` (a constant-time comparison)."""
    return hmac.compare_digest(hash_secret(secret), stored_sha256)


def parse_authorization(header: str | None) -> Credentials | None:
    """The token in an ``Authorization`` header (Bearer, or Basic with the token as password).

    ``None`` when there is no header; a header that holds no well-formed
    token gives ``Credentials("", "")``, which matches no stored token.
    """
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    value = value.strip()
    if scheme.lower() == "basic":
        try:
            value = base64.b64decode(value, validate=True).decode("utf-8").partition(":")[2]
        except (binascii.Error, UnicodeDecodeError):
            value = ""
    elif scheme.lower() != "bearer":
        value = ""
    return parse_token(value) or Credentials("", "")


def covers(prefix: str, module: str) -> bool:
    """Whether a token for ``prefix`` covers ``module`` (element-wise, globs allowed, exact
    case: it grants)."""
    return bool(prefix) and match_patterns(prefix, module) and "," not in prefix


def reserves(prefix: str, module: str) -> bool:
    """Whether a token's ``prefix`` puts ``module`` in the hosted namespace: :func:`covers`
    compared in folded form (it denies the proxy, so no case variant or alias slips past)."""
    return bool(prefix) and match_folded(prefix, module) and "," not in prefix
