"""Registry authentication: the credentials offered, the tokens held per scope, and the
answer to a ``401`` challenge (the **auth** part of :mod:`wgtpm.oci.client`'s docstring:
tokens from the realm a Bearer challenge names, Basic credentials, where they may go).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlencode, urlsplit

from .._errors import WgtpmError
from ..httpclient import redact, register_secret
from ._errors import RegistryAuthError
from .auth import Credentials, Keychain

if TYPE_CHECKING:
    from ..httpclient import HttpClient

#: Statuses a request's answer is handed back with instead of raising (5xx and 429 are
#: retried by the HTTP client first): the token service's, and :meth:`OciClient.request`'s.
ANSWERED = frozenset(range(200, 500)) - {429}
#: Tokens are renewed this many seconds before they expire.
_EARLY = 10.0
#: A token without ``expires_in`` lives 60 s (the distribution spec's default).
_DEFAULT_TTL = 60.0


_PARAM = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))\s*,?')


def parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    """``WWW-Authenticate: Bearer realm="...",service="..."`` -> (``bearer``, params)."""
    scheme, _, rest = header.strip().partition(" ")
    params: dict[str, str] = {}
    pos = 0
    while pos < len(rest):
        m = _PARAM.match(rest, pos)
        if m is None or m.end() == pos:
            break
        value = m.group(2) if m.group(2) is not None else m.group(3)
        params[m.group(1).lower()] = re.sub(r"\\(.)", r"\1", value)
        pos = m.end()
    return scheme.lower(), params


@dataclass
class _Token:
    value: str
    expires: float


class RegistryAuth:
    """What authorises requests to ``registry`` (served at ``base``): the credentials
    ``auth`` gives (or the default :class:`Keychain`'s), Basic once the registry asked
    for it, and the bearer tokens fetched per scope until they expire."""

    def __init__(
        self,
        http: HttpClient,
        registry: str,
        base: str,
        plain_http: bool,
        auth: Credentials | Keychain | None,
    ) -> None:
        self.http = http
        self.registry = registry
        self.base = base
        self.plain_http = plain_http
        self._auth = auth if auth is not None else Keychain()
        self._creds: Credentials | None = None
        self._looked_up = False
        self._lock = threading.Lock()
        self._tokens: dict[str, _Token] = {}
        self._basic = False  # the registry asked for Basic once: send it up front

    def credentials(self) -> Credentials | None:
        """The credentials offered to this registry (looked up once)."""
        with self._lock:
            if not self._looked_up:
                a = self._auth
                found = a.lookup(self.registry) if isinstance(a, Keychain) else a
                # Credentials() with nothing in it: anonymous, as no credentials at all
                usable = found is not None and (
                    found.basic or found.identity_token or found.registry_token
                )
                self._creds = found if usable else None
                self._looked_up = True
            return self._creds

    def held(self, scope: str) -> str | None:
        """The ``Authorization`` value this client holds for ``scope``, if any."""
        with self._lock:
            tok = self._tokens.get(scope)
            if tok is not None and tok.expires > time.monotonic():
                return "Bearer " + tok.value
            basic = self._basic
        if basic:
            creds = self.credentials()
            return creds.basic if creds is not None else None
        return None

    def answer(self, challenge: str, scope: str, url: str) -> str:
        """The ``Authorization`` value that answers ``challenge`` (from a 401 of ``url``)."""
        scheme, params = parse_challenge(challenge)
        creds = self.credentials()
        if scheme == "basic":
            value = creds.basic if creds is not None else None
            if value is None:
                raise RegistryAuthError(
                    f"{redact(url)}: the registry {self.registry} wants a user and password; "
                    f"log in (docker login {self.registry}, or a ~/.netrc entry)"
                )
            with self._lock:
                self._basic = True
            return value
        if scheme != "bearer" or not params.get("realm"):
            raise RegistryAuthError(
                f"{redact(url)}: the registry asks for {scheme or 'no'} authentication, "
                "which wgtpm does not speak (Bearer or Basic)"
            )
        if creds is not None and creds.registry_token:
            return "Bearer " + creds.registry_token
        token = self._fetch_token(params, scope, creds)
        return "Bearer " + token

    def _fetch_token(self, params: Mapping[str, str], scope: str, creds: Credentials | None) -> str:
        realm = params["realm"]
        try:
            r = urlsplit(realm)
        except ValueError:
            r = None
        if r is None or r.scheme not in ("http", "https") or not r.hostname:
            raise RegistryAuthError(
                f"{self.registry}: its token service {redact(realm)[:200]!r} is not an http(s) URL"
            )
        if r.scheme == "http" and not self.plain_http:
            raise RegistryAuthError(
                f"{self.registry}: its token service {redact(realm)[:200]} is plain HTTP; "
                "wgtpm sends no credentials over it"
            )
        # the scope the registry asked for, else the one of the request
        want = params.get("scope") or scope
        query = {"scope": want}
        if params.get("service"):
            query["service"] = params["service"]
        try:
            if creds is not None and creds.identity_token:
                form = {
                    "grant_type": "refresh_token",
                    "refresh_token": creds.identity_token,
                    "client_id": "wgtpm",
                    **query,
                }
                resp = self.http.send(
                    "POST",
                    realm,
                    content=urlencode(form).encode(),
                    headers={"Content-Type": "application/x-www-form-urlencoded"},
                    retry=True,
                )
            else:
                headers = {}
                if creds is not None and creds.basic:
                    headers["Authorization"] = creds.basic
                sep = "&" if "?" in realm else "?"
                resp = self.http.get(realm + sep + urlencode(query), headers=headers, ok=ANSWERED)
        except WgtpmError as exc:
            raise RegistryAuthError(f"{self.registry}: asking its token service: {exc}") from exc
        if resp.status_code in (401, 403):
            who = f"the credentials from {creds.source}" if creds else "anonymous access"
            raise RegistryAuthError(
                f"{self.registry}: its token service refused {who} (HTTP {resp.status_code}); "
                f"log in again (docker login {self.registry})"
            )
        if resp.status_code != 200:
            raise RegistryAuthError(
                f"{self.registry}: its token service answered HTTP {resp.status_code}"
            )
        try:
            doc = resp.json()
            value = doc.get("token") or doc.get("access_token")
            if not isinstance(value, str) or not value:
                raise TypeError
            ttl = doc.get("expires_in")
            ttl = float(ttl) if isinstance(ttl, (int, float)) and ttl > 0 else _DEFAULT_TTL
        except (ValueError, TypeError, AttributeError):
            raise RegistryAuthError(
                f"{self.registry}: its token service answered no token (want JSON with 'token')"
            ) from None
        register_secret("Bearer " + value, value)
        with self._lock:
            self._tokens[scope] = _Token(value, time.monotonic() + max(1.0, ttl - _EARLY))
        return value

    def forget(self, authorization: str) -> None:
        """Drop the token ``authorization`` (``Bearer TOKEN``) if this client holds it: the
        registry refused it before its ``expires_in`` ran out (a token revoked, or one
        handed out for a download that was cut and resumed later), so the next request of
        its scope fetches another."""
        with self._lock:
            for scope, tok in list(self._tokens.items()):
                if "Bearer " + tok.value == authorization:
                    del self._tokens[scope]
