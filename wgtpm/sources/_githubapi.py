"""The GitHub REST API, as :mod:`wgtpm.sources.github` reads it.

:class:`GitHubApi` holds the API's URL, the token and the listing cache, and
makes every request: a GET with the token sent to the API's origin only, a
rate limit waited out or explained, errors turned into module errors, and
paginated listings revalidated page by page with ``If-None-Match``. What the
answers mean (releases, assets, versions) is the source's business.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .._errors import FetchError, NotFoundError
from ..httpclient import Credential
from ._hosted import MetaCache, parse_json

if TYPE_CHECKING:
    import httpx

    from ..httpclient import HttpClient

__all__ = ["API_VERSION", "DEFAULT_API_URL", "MAX_PAGES", "PER_PAGE", "GitHubApi", "Repo"]

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
PER_PAGE = 100
#: A listing longer than this many pages is refused rather than followed for ever.
MAX_PAGES = 100
_HEX = re.compile(r"^[0-9a-f]{7,40}\Z")


@dataclass(frozen=True)
class Repo:
    """A repository, and the directory a module sits in."""

    owner: str
    name: str
    prefix: str  # "" or "DIR/": what tags start with

    @property
    def slug(self) -> str:
        return f"{self.owner}/{self.name}"


class GitHubApi:
    """The REST API at ``api_url``; ``token`` (``None``: none) goes to its origin only;
    listings revalidate through ``meta_cache``; a rate limit that resets within
    ``max_rate_wait`` seconds is waited out with ``sleep``."""

    def __init__(
        self,
        http: HttpClient,
        api_url: str,
        token: str | None,
        meta_cache: MetaCache,
        max_rate_wait: float,
        sleep: Callable[[float], None],
    ) -> None:
        self.http = http
        self.api_url = api_url
        self.token = token
        self._cred = Credential(api_url, "Authorization", f"Bearer {token}") if token else None
        self.meta_cache = meta_cache
        self.max_rate_wait = max_rate_wait
        self._sleep = sleep

    def repo_url(self, repo: Repo) -> str:
        return f"{self.api_url}/repos/{repo.slug}"

    def headers(self, url: str, accept: str = "application/vnd.github+json") -> dict[str, str]:
        """Headers for a GET of ``url``: the token only when ``url`` is on the API's origin."""
        h = {"Accept": accept, "X-GitHub-Api-Version": API_VERSION}
        if self._cred is not None:
            h.update(self._cred.headers_for(url))
        return h

    def _token_hint(self) -> str:
        return "" if self.token else "if the repository is private, set GITHUB_TOKEN"

    def list(self, url: str, path: str, version: str | None, what: str) -> list[dict[str, Any]]:
        """Every item of a paginated listing, revalidating each page by its ETag."""
        items: list[dict[str, Any]] = []
        page_url: str | None = f"{url}?per_page={PER_PAGE}"
        for _ in range(MAX_PAGES):
            if page_url is None:
                return items
            key = f"github:{page_url}"
            cached = self.meta_cache.get(key)
            headers = self.headers(page_url)
            if cached is not None:
                headers["If-None-Match"] = cached[0]
            resp = self.get(page_url, path, version, what, headers, ok=(200, 304))
            if resp.status_code == 304 and cached is not None:
                envelope = json.loads(cached[1])
            else:
                page = parse_json(resp.content, path, version, what)
                if not isinstance(page, list):
                    raise FetchError(path, version, f"{what}: the API answered with no list")
                envelope = {"next": resp.links.get("next", {}).get("url"), "items": page}
                etag = resp.headers.get("etag")
                if etag:
                    self.meta_cache.put(key, etag, json.dumps(envelope).encode())
            items.extend(i for i in envelope["items"] if isinstance(i, dict))
            page_url = envelope["next"]
        raise FetchError(path, version, f"{what}: more than {MAX_PAGES} pages")

    def get(
        self,
        url: str,
        path: str,
        version: str | None,
        what: str,
        headers: Mapping[str, str] | None = None,
        ok: tuple[int, ...] = (200,),
    ) -> httpx.Response:
        """GET from the API, waiting out a short rate limit and translating errors."""
        from ..httpclient import HTTPStatusError, ResponseTooLargeError, TransportError

        for attempt in range(2):
            try:
                return self.http.get(url, headers=headers or self.headers(url), ok=ok)
            except (TransportError, ResponseTooLargeError) as exc:
                raise FetchError(path, version, f"{what}: {exc}") from exc
            except HTTPStatusError as exc:
                wait = _rate_wait(exc.status, exc.headers, exc.body)
                if wait is not None:
                    if attempt == 0 and wait <= self.max_rate_wait:
                        self._sleep(wait + 0.5)
                        continue
                    raise FetchError(path, version, self._rate_message(exc.headers, wait)) from exc
                if exc.status == 401:
                    raise FetchError(
                        path,
                        version,
                        f"{what}: GitHub refused GITHUB_TOKEN (HTTP 401 Bad credentials); "
                        "check the token, or unset GITHUB_TOKEN for public repositories",
                    ) from exc
                if exc.status in (404, 410, 422):
                    hint = f" ({self._token_hint()})" if self._token_hint() else ""
                    raise NotFoundError(path, version, f"{what}: not found{hint}") from exc
                hint = "; set GITHUB_TOKEN to a token that can read it" if exc.status == 403 else ""
                raise FetchError(path, version, f"{what}: {exc}{hint}") from exc
        raise AssertionError("unreachable")

    def _rate_message(self, headers: Mapping[str, str], wait: float) -> str:
        h = {k.lower(): v for k, v in headers.items()}
        when = datetime.fromtimestamp(time.time() + wait, timezone.utc).strftime("%H:%M:%S UTC")
        limit = h.get("x-ratelimit-limit")
        per = f" ({limit} requests an hour)" if limit else ""
        msg = f"GitHub API rate limit exceeded{per}; it resets at {when}, in {_minutes(wait)}. "
        if self.token:
            return msg + "Wait until then, or use a GITHUB_TOKEN with a higher limit."
        return msg + "Set GITHUB_TOKEN to a GitHub token to raise the limit to 5,000 an hour."

    def commit(self, path: str, repo: Repo, rev: str) -> str | None:
        """The commit ``rev`` (a branch, tag or commit) names, or ``None`` when none."""
        url = f"{self.repo_url(repo)}/commits/{quote(rev, safe='/')}"
        try:
            resp = self.get(
                url, path, rev, f"resolving {rev}", self.headers(url, "application/vnd.github.sha")
            )
        except NotFoundError:
            return None
        sha = resp.text.strip()
        return sha if _HEX.match(sha) else None


def _rate_wait(status: int, headers: Mapping[str, str], body: bytes) -> float | None:
    """Seconds until a rate limit lifts, or ``None`` when the answer is not a rate limit."""
    from ..httpclient import retry_after

    if status not in (403, 429):
        return None
    h = {k.lower(): v for k, v in headers.items()}
    if h.get("x-ratelimit-remaining") == "0" and h.get("x-ratelimit-reset", "").isdigit():
        return max(0.0, int(h["x-ratelimit-reset"]) - time.time())
    wait = retry_after(h)
    if wait is not None:
        return wait
    if status == 429 or b"rate limit" in body.lower():
        return 60.0  # GitHub: without headers, wait at least a minute
    return None


def _minutes(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f}s"
    return f"{seconds / 60:.0f} min"
