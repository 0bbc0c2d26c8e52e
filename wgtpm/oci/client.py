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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, overload
from urllib.parse import urljoin, urlsplit

from .._errors import UsageError
from ..httpclient import HTTPStatusError, origin, redact
from . import _blobread
from ._errors import OciError, OciNotFoundError, RegistryAuthError
from ._tokens import ANSWERED, RegistryAuth, parse_challenge
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

#: At most this many pages of a tags list.
MAX_PAGES = 1000
PAGE = 1000
_LINK_NEXT = re.compile(r'<([^>]*)>\s*;\s*rel="?next"?')


def is_loopback(registry: str) -> bool:
    """Whether ``registry`` (``host[:port]``) names this machine."""
    host = urlsplit("//" + registry).hostname or ""
    return (
        host == "localhost"
        or host.endswith(".localhost")
        or host in ("::1",)
        or (host.startswith("127.") and host.replace(".", "").isdigit())
    )


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
        self.auth = RegistryAuth(http, self.registry, self.base, self.plain_http, auth)
        self._lock = threading.Lock()
        self._open: set[str] = set()  # scopes answered without any Authorization

    # ---- auth ---------------------------------------------------------------------

    @staticmethod
    def scope(repository: str, actions: Sequence[str]) -> str:
        return f"repository:{repository}:{','.join(actions)}"

    def authorization(self, repository: str, actions: Sequence[str] = ("pull",)) -> dict[str, str]:
        """The headers that authorise ``actions`` on ``repository`` now (a token is fetched
        if the registry wants one): for a request made elsewhere (a download by the fetcher).
        ``{}`` for an open registry."""
        scope = self.scope(repository, actions)
        held = self.auth.held(scope)
        if held:
            return {"Authorization": held}
        with self._lock:
            if scope in self._open:
                return {}
        resp = self.request("GET", repository, "tags/list?n=1", actions=actions)
        held = self.auth.held(scope)
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
        held = self.auth.held(scope)
        resp = self._once(method, url, scope, headers, content, held)
        if resp.status_code == 401 and "www-authenticate" in resp.headers:
            auth = self.auth.answer(resp.headers["www-authenticate"], scope, url)
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
        value = auth or self.auth.held(scope)
        if value and self._own(url):
            hdrs["Authorization"] = value
        if method in ("GET", "HEAD"):
            return self.http.get(url, headers=hdrs, ok=ANSWERED, method=method)
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
                value = auth or self.auth.held(scope)
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
                    auth = self.auth.answer(challenge, scope, url)
            # outside the try: an error of the caller's while it reads is not a challenge
            yield resp

    def _denied(
        self, resp: httpx.Response, repository: str, actions: Sequence[str]
    ) -> RegistryAuthError:
        creds = self.auth.credentials()
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
        """The size the registry states for a blob (:func:`wgtpm.oci._blobread.blob_size`)."""
        return _blobread.blob_size(self, repository, digest)

    def blob_url(self, repository: str, digest: str) -> str:
        _blobread.check_digest(digest)
        return self.url(repository, f"blobs/{digest}")

    def blob_chunks(
        self, repository: str, digest: str, size: int, *, offset: int = 0, tries: int = 5
    ) -> Iterator[bytes]:
        """The checked bytes of a blob from ``offset``, resumed after a cut
        (:func:`wgtpm.oci._blobread.blob_chunks`)."""
        return _blobread.blob_chunks(self, repository, digest, size, offset=offset, tries=tries)


def _error_detail(resp: httpx.Response) -> str:
    """``: CODE message`` from a distribution-spec error body, if it has one."""
    try:
        errors = resp.json().get("errors") or []
        first = errors[0]
        return f": {str(first.get('code', ''))[:40]} {str(first.get('message', ''))[:160]}".rstrip()
    except (ValueError, AttributeError, IndexError, TypeError):
        return ""
