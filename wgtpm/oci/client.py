"""An OCI distribution-spec client over wgtpm's own HTTP client.

Everything goes through :class:`wgtpm.httpclient.HttpClient`: its retries,
deadlines, redirect rules, pacing of file bodies and redaction of secrets.
This module adds what a registry needs on top:

* **auth**: a request goes out with what this client already holds for the
  registry (a bearer token of the request's scope, or Basic credentials);
  a ``401`` with ``WWW-Authenticate: Bearer realm=...,service=...,scope=...``
  is answered once, by asking the realm for a token (with the registry's
  credentials from :class:`~wgtpm.oci.auth.Keychain`, or anonymously), and
  the request is sent again; ``Basic`` is answered with the credentials.
  Tokens are kept per (registry, scope) until they expire.
* **where secrets go**: the ``Authorization`` header goes to the registry's
  own origin only; :class:`HttpClient` drops it on a redirect to any other
  origin (blob storage: S3, a CDN), and this client never sends it to a URL
  of another origin. Credentials go to the registry and to the token realm
  it names, and to a plain-HTTP realm only when the registry is plain HTTP too.
* **plain HTTP** only for a loopback registry (``localhost``, ``127.0.0.1``,
  ``::1``), as ORAS and Docker allow, unless the caller says ``plain_http=True``
  (``WGTOCI_INSECURE``, docs/guides/oci.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, overload
from urllib.parse import urlencode, urljoin, urlsplit

from .._errors import UsageError, WgtpmError
from ..httpclient import HTTPStatusError, origin, redact
from .auth import Credentials, Keychain, normalise_host
from .manifest import ACCEPT

if TYPE_CHECKING:
    import httpx

    from ..httpclient import HttpClient

__all__ = [
    "OciClient",
    "OciError",
    "OciNotFoundError",
    "RegistryAuthError",
    "is_loopback",
    "parse_challenge",
]

#: Statuses :meth:`OciClient.request` hands back instead of raising (5xx and 429 are
#: retried by the HTTP client first).
_ANSWERED = frozenset(range(200, 500)) - {429}
#: Tokens are renewed this many seconds before they expire.
_EARLY = 10.0
#: A token without ``expires_in`` lives 60 s (the distribution spec's default).
_DEFAULT_TTL = 60.0
#: At most this many pages of a tags list.
MAX_PAGES = 1000
PAGE = 1000
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}\Z")
_LINK_NEXT = re.compile(r'<([^>]*)>\s*;\s*rel="?next"?')


class OciError(WgtpmError):
    """A registry answered something wgtpm cannot use (the message says what)."""


class OciNotFoundError(OciError):
    """The repository, tag, manifest or blob does not exist (HTTP 404)."""


class RegistryAuthError(OciError):
    """The registry refused the credentials, or wants some and none were found."""


def is_loopback(registry: str) -> bool:
    """Whether ``registry`` (``host[:port]``) names this machine."""
    host = urlsplit("//" + registry).hostname or ""
    return (
        host == "localhost"
        or host.endswith(".localhost")
        or host in ("::1",)
        or (host.startswith("127.") and host.replace(".", "").isdigit())
    )


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


@dataclass(frozen=True)
class ManifestResponse:
    """A manifest as the registry served it: its bytes, media type and (checked) digest."""

    data: bytes
    media_type: str
    digest: str


class OciClient:
    """A client for one registry (``registry`` is ``host[:port]``).

    ``plain_http``: ``None`` (plain HTTP for a loopback registry, HTTPS for any other),
    or ``True``/``False`` as the user said. ``auth``: the credentials to offer, a
    :class:`Keychain` to find them, or ``None`` for the default keychain (the
    environment's ``config.json`` files and ``~/.netrc``).
    """

    def __init__(
        self,
        http: HttpClient,
        registry: str,
        *,
        plain_http: bool | None = None,
        auth: Credentials | Keychain | None = None,
    ) -> None:
        self.http = http
        self.registry = normalise_host(registry)
        if not self.registry or "/" in self.registry:
            raise UsageError(f"{registry!r} is not a registry host (host or host:port)")
        self.plain_http = is_loopback(self.registry) if plain_http is None else plain_http
        self.base = f"{'http' if self.plain_http else 'https'}://{self.registry}"
        self._auth = auth if auth is not None else Keychain()
        self._creds: Credentials | None = None
        self._looked_up = False
        self._lock = threading.Lock()
        self._tokens: dict[str, _Token] = {}
        self._basic = False  # the registry asked for Basic once: send it up front
        self._open: set[str] = set()  # scopes answered without any Authorization

    # ---- auth ---------------------------------------------------------------------

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

    @staticmethod
    def scope(repository: str, actions: Sequence[str]) -> str:
        return f"repository:{repository}:{','.join(actions)}"

    def _held(self, scope: str) -> str | None:
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

    def _answer(self, challenge: str, scope: str, url: str) -> str:
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
        from ..httpclient import Credential

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
                resp = self.http.get(realm + sep + urlencode(query), headers=headers, ok=_ANSWERED)
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
        Credential(self.base, "Authorization", "Bearer " + value)  # registered for redaction
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

    def authorization(self, repository: str, actions: Sequence[str] = ("pull",)) -> dict[str, str]:
        """The headers that authorise ``actions`` on ``repository`` now (a token is fetched
        if the registry wants one): for a request made elsewhere (a download by the fetcher).
        ``{}`` for an open registry."""
        scope = self.scope(repository, actions)
        held = self._held(scope)
        if held:
            return {"Authorization": held}
        with self._lock:
            if scope in self._open:
                return {}
        resp = self.request("GET", repository, "tags/list?n=1", actions=actions)
        held = self._held(scope)
        if resp.status_code in (401, 403):
            raise self._denied(resp, repository, actions)
        return {"Authorization": held} if held else {}

    # ---- requests -----------------------------------------------------------------

    def url(self, repository: str, path: str) -> str:
        """The URL of ``path`` under ``/v2/REPOSITORY/`` (an absolute path or URL as is,
        joined to the registry: what a ``Location`` header says)."""
        if path.startswith(("http://", "https://", "/")):
            return urljoin(self.base + "/", path)
        return f"{self.base}/v2/{repository}/{path}"

    @overload
    def request(
        self,
        method: str,
        repository: str,
        path: str,
        *,
        actions: Sequence[str] = ...,
        headers: Mapping[str, str] | None = ...,
        content: bytes | None = ...,
        stream: Literal[False] = ...,
    ) -> httpx.Response: ...

    @overload
    def request(
        self,
        method: str,
        repository: str,
        path: str,
        *,
        actions: Sequence[str] = ...,
        headers: Mapping[str, str] | None = ...,
        content: bytes | None = ...,
        stream: Literal[True],
    ) -> contextlib.AbstractContextManager[httpx.Response]: ...

    def request(
        self,
        method: str,
        repository: str,
        path: str,
        *,
        actions: Sequence[str] = ("pull",),
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
        stream: bool = False,
    ) -> httpx.Response | contextlib.AbstractContextManager[httpx.Response]:
        """``method`` ``path`` of ``repository`` with auth (see the module docstring).

        Without ``stream``: the answer, read (any status below 500 but 429 is answered;
        those are retried by the HTTP client, then raised). With ``stream`` (GET only):
        a context manager of a 200 or 206 response whose body is read as it comes
        (``Range`` in ``headers`` resumes); another status raises :class:`HTTPStatusError`.
        Transport failures raise :class:`~wgtpm.httpclient.TransportError`.
        """
        url = self.url(repository, path)
        if stream:
            return self._stream(url, repository, actions, headers or {})
        scope = self.scope(repository, actions)
        held = self._held(scope)
        resp = self._once(method, url, scope, headers, content, held)
        if resp.status_code == 401 and "www-authenticate" in resp.headers:
            auth = self._answer(resp.headers["www-authenticate"], scope, url)
            resp = self._once(method, url, scope, headers, content, auth)
        elif held is None and resp.status_code != 403 and self._own(url):
            with self._lock:
                self._open.add(scope)  # answered without credentials
        return resp

    def _own(self, url: str) -> bool:
        return origin(url) == origin(self.base)

    def _once(
        self,
        method: str,
        url: str,
        scope: str,
        headers: Mapping[str, str] | None,
        content: bytes | None,
        auth: str | None = None,
    ) -> httpx.Response:
        hdrs = dict(headers or {})
        value = auth or self._held(scope)
        if value and self._own(url):
            hdrs["Authorization"] = value
        if method in ("GET", "HEAD"):
            return self.http.get(url, headers=hdrs, ok=_ANSWERED, method=method)
        return self.http.send(method, url, content=content, headers=hdrs)

    @contextlib.contextmanager
    def _stream(
        self, url: str, repository: str, actions: Sequence[str], headers: Mapping[str, str]
    ) -> Iterator[httpx.Response]:
        scope = self.scope(repository, actions)
        # "bytes=N-" is the HTTP client's resume (offset); any other range goes as it is
        offset = 0
        plain = dict(headers)
        for k in [k for k in plain if k.lower() == "range"]:
            m = re.fullmatch(r"bytes=(\d+)-", plain[k].strip())
            if m is not None:
                offset = int(m.group(1))
                del plain[k]
        auth: str | None = None
        with contextlib.ExitStack() as stack:
            for attempt in range(2):
                hdrs = dict(plain)
                value = auth or self._held(scope)
                if value and self._own(url):
                    hdrs["Authorization"] = value
                try:
                    resp = stack.enter_context(self.http.stream(url, headers=hdrs, offset=offset))
                    break
                except HTTPStatusError as exc:
                    challenge = exc.headers.get("www-authenticate") or exc.headers.get(
                        "WWW-Authenticate"
                    )
                    if exc.status != 401 or not challenge or attempt:
                        raise
                    auth = self._answer(challenge, scope, url)
            # outside the try: an error of the caller's while it reads is not a challenge
            yield resp

    def _denied(
        self, resp: httpx.Response, repository: str, actions: Sequence[str]
    ) -> RegistryAuthError:
        creds = self.credentials()
        who = f"the credentials from {creds.source}" if creds else "no credentials"
        return RegistryAuthError(
            f"{self.registry}/{repository}: {'/'.join(actions)} refused with {who} "
            f"(HTTP {resp.status_code}); check the name, and log in "
            f"(docker login {self.registry}, or ~/.netrc)"
        )

    def _check(
        self, resp: httpx.Response, repository: str, what: str, actions: Sequence[str] = ("pull",)
    ) -> None:
        """Raise for an answer other than 2xx: :class:`OciNotFoundError` for 404, auth errors."""
        if 200 <= resp.status_code < 300:
            return
        if resp.status_code in (401, 403):
            raise self._denied(resp, repository, actions)
        if resp.status_code == 404:
            raise OciNotFoundError(f"{self.registry}/{repository}: {what}: not found (HTTP 404)")
        raise OciError(
            redact(
                f"{self.registry}/{repository}: {what}: HTTP {resp.status_code}"
                f"{_error_detail(resp)}"
            )
        )

    # ---- reads ----------------------------------------------------------------------

    def tags(self, repository: str) -> list[str]:
        """Every tag of ``repository`` (the paginated ``tags/list``, following ``Link``);
        :class:`OciNotFoundError` when the repository does not exist."""
        out: list[str] = []
        path = f"tags/list?n={PAGE}"
        for _ in range(MAX_PAGES):
            resp = self.request("GET", repository, path)
            self._check(resp, repository, "tags")
            try:
                doc = resp.json()
                page = doc.get("tags") or []
                if not isinstance(page, list) or not all(isinstance(t, str) for t in page):
                    raise TypeError
            except (ValueError, TypeError, AttributeError):
                raise OciError(
                    f"{self.registry}/{repository}: the tags list is not JSON with a 'tags' list"
                ) from None
            out.extend(page)
            m = _LINK_NEXT.search(resp.headers.get("link", ""))
            if m is None or not page:
                return out
            nxt = m.group(1)
            if not self._own(urljoin(self.url(repository, path), nxt)):
                raise OciError(
                    f"{self.registry}/{repository}: the tags list's next page lies on another "
                    "host; refusing to follow it"
                )
            path = nxt
        raise OciError(f"{self.registry}/{repository}: more than {MAX_PAGES} pages of tags")

    def manifest(self, repository: str, reference: str) -> ManifestResponse:
        """The manifest ``reference`` (a tag or ``sha256:`` digest) names: its bytes, media
        type and digest. The digest is computed from the bytes; it must equal the reference
        when that is a digest, and the registry's ``Docker-Content-Digest`` when it says one."""
        resp = self.request("GET", repository, f"manifests/{reference}", headers={"Accept": ACCEPT})
        self._check(resp, repository, f"manifest {reference}")
        data = resp.content
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        said = resp.headers.get("docker-content-digest")
        if reference.startswith("sha256:") and digest != reference:
            raise OciError(
                f"{self.registry}/{repository}@{reference}: the manifest served has digest "
                f"{digest}, not the one asked for; the registry or a proxy altered it"
            )
        if said and said.startswith("sha256:") and said != digest:
            raise OciError(
                f"{self.registry}/{repository}:{reference}: the registry says the manifest's "
                f"digest is {said[:80]}, but its bytes hash to {digest}; refusing it"
            )
        media_type = resp.headers.get("content-type", "").split(";", 1)[0].strip()
        return ManifestResponse(data, media_type, digest)

    def blob_size(self, repository: str, digest: str) -> int:
        """The size the registry states for a blob; :class:`OciNotFoundError` if absent.

        Asked as ``GET`` of the first byte (``Range: bytes=0-0``), whose ``Content-Range``
        states the whole size: :class:`HttpClient` hands back a read answer (``HEAD``'s too)
        without its ``Content-Length``, and a streamed one with its headers as they came.
        """
        _check_digest(digest)
        try:
            with self.request(
                "GET", repository, f"blobs/{digest}", headers={"Range": "bytes=0-0"}, stream=True
            ) as resp:
                total = resp.headers.get("content-range", "").rpartition("/")[2]
                if resp.status_code == 200:
                    total = resp.headers.get("content-length", "")
        except HTTPStatusError as exc:
            if exc.status == 404:
                raise OciNotFoundError(
                    f"{self.registry}/{repository}: blob {digest}: not found (HTTP 404)"
                ) from None
            raise OciError(f"{self.registry}/{repository}: blob {digest}: {exc}") from None
        if not total.isdigit():
            raise OciError(f"{self.registry}/{repository}: blob {digest}: no size stated")
        return int(total)

    def blob_url(self, repository: str, digest: str) -> str:
        _check_digest(digest)
        return self.url(repository, f"blobs/{digest}")

    def blob_chunks(
        self, repository: str, digest: str, size: int, *, offset: int = 0, tries: int = 5
    ) -> Iterator[bytes]:
        """The bytes of a blob from ``offset``, as they come, resumed with ``Range`` after a
        cut (at most ``tries`` times); checked against ``size`` and, when read from 0,
        against ``digest`` at the end. Raises :class:`OciError` on a mismatch."""
        from ..httpclient import network_errors

        url = self.blob_url(repository, digest)
        h = hashlib.sha256() if offset == 0 else None
        have = offset
        for attempt in range(tries):
            try:
                rng = {"Range": f"bytes={have}-"} if have else {}
                with self.request("GET", repository, url, headers=rng, stream=True) as resp:
                    # a 200 to a Range request: the whole blob again, whose first bytes the
                    # caller has had already (and the hash has seen)
                    skip = have if have and resp.status_code != 206 else 0
                    if skip and h is None:
                        raise OciError(f"{redact(url)}: the registry ignored Range; cannot resume")
                    for chunk in resp.iter_bytes():
                        if skip:
                            n = min(skip, len(chunk))
                            chunk, skip = chunk[n:], skip - n
                            if not chunk:
                                continue
                        if have + len(chunk) > size:
                            raise OciError(
                                f"{self.registry}/{repository}: blob {digest} is longer than the "
                                f"{size} bytes stated for it; refusing it"
                            )
                        if h is not None:
                            h.update(chunk)
                        have += len(chunk)
                        yield chunk
                break
            except network_errors():
                if attempt == tries - 1 or have >= size:
                    raise
        if have != size:
            raise OciError(
                f"{self.registry}/{repository}: blob {digest} ended at {have} of {size} bytes"
            )
        if h is not None and "sha256:" + h.hexdigest() != digest:
            raise OciError(
                f"{self.registry}/{repository}: blob {digest} has other bytes (sha256 "
                f"{h.hexdigest()}); refusing it"
            )


def _check_digest(digest: str) -> None:
    if not _DIGEST.match(digest):
        raise UsageError(f"{digest[:80]!r} is not a sha256 digest (sha256:<64 hex>)")


def _error_detail(resp: httpx.Response) -> str:
    """``: CODE message`` from a distribution-spec error body, if it has one."""
    try:
        errors = resp.json().get("errors") or []
        first = errors[0]
        return f": {str(first.get('code', ''))[:40]} {str(first.get('message', ''))[:160]}".rstrip()
    except (ValueError, AttributeError, IndexError, TypeError):
        return ""
