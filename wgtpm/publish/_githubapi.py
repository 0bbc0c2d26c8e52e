"""The GitHub REST API of one repository, as :mod:`wgtpm.publish.github` writes releases.

:class:`ReleasesApi` holds the repository, the token and the credentials made
from it (for the API's origin, and for a draft's upload host once trusted),
and makes every request: GETs and listings with errors as module errors, and
writes (:meth:`ReleasesApi.send`) that raise :class:`WriteFailed` for the
target to decide whether to try again. Which requests make a release, and in
what order, is the target's business.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._errors import ModuleError
from ..httpclient import Credential, TransportError, origin, redact, register_userinfo
from ..sources.github import API_VERSION, MAX_PAGES
from ._http import Answer, send
from ._target import Release

if TYPE_CHECKING:
    import httpx

    from ..httpclient import Body, HttpClient

__all__ = ["ReleasesApi", "WriteFailed"]

_JSON = "application/vnd.github+json"


class WriteFailed(Exception):
    """A write that GitHub refused (``status``) or that did not complete (``status`` 0)."""

    def __init__(
        self, status: int, message: str, body: Any = None, retry_after: float | None = None
    ) -> None:
        self.status = status
        self.body = body
        self.retry_after = retry_after  # a rate limit that lifts this many seconds from now
        super().__init__(redact(message))

    def retryable(self, max_retry_after: float) -> bool:
        """A network failure, a 5xx, or a rate limit that lifts within ``max_retry_after``."""
        if self.retry_after is not None:
            return self.retry_after <= max_retry_after
        return self.status == 0 or self.status == 429 or self.status >= 500

    def code(self) -> str | None:
        """The ``code`` of GitHub's first validation error (``already_exists``), if any."""
        errs = self.body.get("errors") if isinstance(self.body, dict) else None
        if isinstance(errs, list) and errs and isinstance(errs[0], dict):
            code = errs[0].get("code")
            return code if isinstance(code, str) else None
        return None


class ReleasesApi:
    """The API at ``api_url`` for ``owner/repo``; ``token`` (``None``: none) goes to the
    API's origin, and to a draft's upload host once :meth:`trust_upload_url` allows it."""

    def __init__(
        self, http: HttpClient, api_url: str, owner: str, repo: str, token: str | None
    ) -> None:
        self.http = http
        self.api_url = api_url
        self.owner, self.repo = owner, repo
        register_userinfo(api_url)  # a password in the URL is hidden as the token is
        self.token = token
        self._cred = Credential(api_url, "Authorization", f"Bearer {token}") if token else None
        self._upload_cred: Credential | None = None  # for the upload host, once a draft names it

    @property
    def name(self) -> str:
        return f"github.com/{self.owner}/{self.repo}"

    def repo_url(self) -> str:
        return f"{self.api_url}/repos/{self.owner}/{self.repo}"

    def credentials(self) -> list[Credential]:
        return [c for c in (self._cred, self._upload_cred) if c is not None]

    def headers(self, url: str) -> dict[str, str]:
        h = {"Accept": _JSON, "X-GitHub-Api-Version": API_VERSION}
        for cred in self.credentials():
            h.update(cred.headers_for(url))
        return h

    def trust_upload_url(self, url: str) -> None:
        """Let the token go to the origin of a draft's ``upload_url`` too, when that is on
        the API's host or is ``uploads.github.com`` (for ``api.github.com``)."""
        scheme, host, _ = origin(url)
        api_scheme, api_host, _ = origin(self.api_url)
        if self._cred is None or scheme != api_scheme:
            return
        if host == api_host or (api_host == "api.github.com" and host == "uploads.github.com"):
            self._upload_cred = Credential(url, "Authorization", self._cred.value)

    def get(
        self, url: str, release: Release, what: str, *, missing_ok: bool = False
    ) -> dict[str, Any] | None:
        from ..httpclient import HTTPStatusError, ResponseTooLargeError, TransportError

        try:
            resp = self.http.get(url, headers=self.headers(url))
        except HTTPStatusError as exc:
            if missing_ok and exc.status == 404:
                return None
            hint = ""
            if exc.status == 404:
                hint = f"; check that {self.owner}/{self.repo} exists and GITHUB_TOKEN can see it"
            raise ModuleError(release.module, release.version, f"{what}: {exc}{hint}") from exc
        except (TransportError, ResponseTooLargeError) as exc:
            raise ModuleError(release.module, release.version, f"{what}: {exc}") from exc
        doc = _json_of(resp)
        if not isinstance(doc, dict):
            raise ModuleError(release.module, release.version, f"{what}: not a JSON object")
        return doc

    def list(self, url: str, release: Release, what: str) -> list[dict[str, Any]]:
        from ..httpclient import HTTPStatusError, ResponseTooLargeError, TransportError

        items: list[dict[str, Any]] = []
        page: str | None = f"{url}?per_page=100"
        for _ in range(MAX_PAGES):
            if page is None:
                return items
            try:
                resp = self.http.get(page, headers=self.headers(page))
            except (HTTPStatusError, TransportError, ResponseTooLargeError) as exc:
                raise ModuleError(release.module, release.version, f"{what}: {exc}") from exc
            doc = _json_of(resp)
            if not isinstance(doc, list):
                raise ModuleError(release.module, release.version, f"{what}: not a JSON list")
            items.extend(i for i in doc if isinstance(i, dict))
            page = resp.links.get("next", {}).get("url")
        raise ModuleError(release.module, release.version, f"{what}: more than {MAX_PAGES} pages")

    def send_json(
        self, method: str, url: str, body: dict[str, Any], release: Release
    ) -> dict[str, Any]:
        what = f"{method} {urlsplit(url).path}"
        try:
            doc = self.send(
                method,
                url,
                content=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            ).body
        except WriteFailed as exc:
            raise self.error(release, what, exc) from exc
        if not isinstance(doc, dict):
            raise ModuleError(release.module, release.version, f"{what}: not a JSON object")
        return doc

    def send(
        self,
        method: str,
        url: str,
        *,
        content: Body = None,
        headers: Mapping[str, str] | None = None,
    ) -> Answer:
        """One write request (the client retries only a DELETE); :class:`WriteFailed` unless 2xx."""
        h = {"Accept": _JSON, "X-GitHub-Api-Version": API_VERSION, **(headers or {})}
        try:
            answer = send(
                self.http, method, url, credentials=self.credentials(), headers=h, content=content
            )
        except TransportError as exc:
            raise WriteFailed(0, str(exc)) from exc
        if answer.ok:
            return answer
        detail = f": {answer.error}" if answer.doc.get("message") else ""
        if isinstance(answer.doc.get("errors"), list):
            detail += " " + json.dumps(answer.doc["errors"])[:300]
        raise WriteFailed(
            answer.status,
            f"{method} {url}: HTTP {answer.status}{detail}",
            answer.body,
            _rate_wait(answer.status, answer.headers),
        )

    def error(self, release: Release, what: str, exc: WriteFailed) -> ModuleError:
        hint = ""
        if exc.status in (401, 403):
            hint = "; GITHUB_TOKEN must be able to write releases of " + self.name
        return ModuleError(
            release.module,
            release.version,
            f"{what}: {exc}{hint}; nothing was published (at most a draft release is left, "
            "which the next `wgtpm publish` reuses)",
        )

    def delete(self, asset: Mapping[str, Any], release: Release) -> None:
        try:
            self.send("DELETE", str(asset["url"]))
        except WriteFailed as exc:
            if exc.status != 404:
                raise self.error(release, f"deleting asset {asset.get('name')}", exc) from exc


def _rate_wait(status: int, headers: Mapping[str, str]) -> float | None:
    """Seconds until a rate limit (primary or secondary) lifts; ``None`` if this is none."""
    import time

    from ..httpclient import retry_after

    if status not in (403, 429):
        return None
    h = {k.lower(): v for k, v in headers.items()}
    wait = retry_after(h)
    if wait is None and h.get("x-ratelimit-remaining") == "0":
        reset = h.get("x-ratelimit-reset", "")
        wait = max(0.0, int(reset) - time.time()) if reset.isdigit() else None
    return wait


def _json_of(resp: httpx.Response) -> Any:
    try:
        return json.loads(resp.content or b"null")
    except ValueError:
        return None
