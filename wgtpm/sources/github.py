"""Modules published as GitHub releases: ``github.com/OWNER/REPO[/DIR][/vN]``.

Versions are release tags: ``vX.Y.Z`` for a module at the repository root,
``DIR/vX.Y.Z`` for one in a subdirectory (as Go tags submodules), with the
major version agreeing with a ``/vN`` suffix of the path. Draft releases are
ignored; a tag without a release is not a version. The release's assets hold
the module: ``wgt.mod``, ``wgt.index.json`` and the files the index lists.

Asset names
-----------
GitHub asset names are flat, so a logical path of the index is stored under
the asset name made by writing each ``/`` as ``--``::

    wgt.mod                     ->  wgt.mod
    xor/weights.safetensors     ->  xor--weights.safetensors
    data/en/vocab.json          ->  data--en--vocab.json

The rule is one-to-one for the paths a release may hold:
:func:`asset_problem` accepts a path only when every element uses ASCII
letters, digits, ``.``, ``_`` and ``-``, neither starts nor ends with ``-`` or
``.``, and holds no ``--``. (GitHub renames other characters, turning spaces,
``~`` and parentheses into ``.``, so they could not round-trip anyway.)
``wgtpm publish`` refuses paths that break it; :func:`asset_path` inverts it.

A release without ``wgt.mod`` gets ``module PATH\\n``. A release without
``wgt.index.json`` (one wgtpm did not publish) gets an index synthesised from
its assets, with each asset's name as its path and the sha256 from the
asset's ``digest`` (``sha256:<hex>``, listed by GitHub since 2025), or from
hashing the asset when it has none.

The REST API
------------
``GITHUB_API_URL`` names the API (default ``https://api.github.com``; GitHub
Enterprise uses ``https://HOST/api/v3``); ``GITHUB_TOKEN``, when set, is sent
as ``Authorization: Bearer`` to that origin only. Requests::

    GET /repos/O/R/releases?per_page=100     every page, following Link: rel="next"
    GET /repos/O/R/releases/tags/TAG         one release
    GET /repos/O/R/tags?per_page=100         tag -> commit, to resolve a branch or commit
    GET /repos/O/R/commits/REF               Accept: application/vnd.github.sha -> the commit
    GET /repos/O/R/releases/assets/ID        Accept: application/octet-stream -> 200, or 302
                                             to a storage host (credentials are not forwarded)

Listings are revalidated with ``If-None-Match`` through a :class:`MetaCache`
(a ``304`` costs no rate limit). A rate-limit answer (403 or 429 with
``x-ratelimit-remaining: 0`` or ``Retry-After``) is waited out when the reset
is at most ``max_rate_wait`` seconds away, and otherwise reported with the
reset time and the advice to set ``GITHUB_TOKEN``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .. import index as _index
from .. import module as _module
from .. import version as _version
from .._errors import FetchError, InvalidVersionError, NotFoundError
from ._base import FileRequest, RevInfo
from ._remote import MemoryMetaCache, MetaCache, parse_time, rfc3339, sha256_check, verified_get

if TYPE_CHECKING:
    import httpx

    from ..httpclient import HttpClient

__all__ = ["DEFAULT_API_URL", "GitHubSource", "asset_name", "asset_path", "asset_problem"]

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
PER_PAGE = 100
#: A listing longer than this many pages is refused rather than followed for ever.
MAX_PAGES = 100
_ELEM = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9._-]*[A-Za-z0-9_])?$")
_HEX = re.compile(r"^[0-9a-f]{7,40}$")


def asset_name(path: str) -> str:
    """The asset that holds logical path ``path``: each ``/`` written ``--``."""
    return path.replace("/", "--")


def asset_path(name: str) -> str:
    """The logical path stored under asset ``name`` (the inverse of :func:`asset_name`)."""
    return name.replace("--", "/")


def asset_problem(path: str) -> str | None:
    """Why ``path`` cannot be stored as a GitHub asset by the rule, or ``None`` when it can."""
    for elem in path.split("/"):
        if "--" in elem:
            return f"element {elem!r} contains '--', which the asset-name rule reserves for '/'"
        if not _ELEM.match(elem):
            return (
                f"element {elem!r} must use only ASCII letters, digits, '.', '_' and '-', "
                "and neither start nor end with '-' or '.'"
            )
    return None


@dataclass(frozen=True)
class _Repo:
    owner: str
    name: str
    prefix: str  # "" or "DIR/": what tags start with

    @property
    def slug(self) -> str:
        return f"{self.owner}/{self.name}"


class GitHubSource:
    """Modules from GitHub releases through the REST API.

    ``api_url`` and ``token`` default to ``GITHUB_API_URL`` and
    ``GITHUB_TOKEN``; ``meta_cache`` keeps ETags of listings (in memory when
    omitted); a rate limit that resets within ``max_rate_wait`` seconds is
    waited out with ``sleep``.
    """

    name = "direct"

    def __init__(
        self,
        http: HttpClient,
        *,
        api_url: str | None = None,
        token: str | None = None,
        meta_cache: MetaCache | None = None,
        max_rate_wait: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.http = http
        self.api_url = (api_url or os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
        self.token = token if token is not None else (os.environ.get("GITHUB_TOKEN") or None)
        self.meta_cache: MetaCache = meta_cache if meta_cache is not None else MemoryMetaCache()
        self.max_rate_wait = max_rate_wait
        self._sleep = sleep
        self._lock = threading.Lock()
        self._releases: dict[tuple[str, str], dict[str, Any]] = {}  # (repo slug, tag) -> release

    # ---- the Source protocol ---------------------------------------------

    def versions(self, path: str) -> list[str]:
        repo = _parse(path)
        out = []
        for rel in self._list(f"{self._repo_url(repo)}/releases", path, None, "listing releases"):
            if rel.get("draft"):
                continue
            with self._lock:
                self._releases[(repo.slug, rel["tag_name"])] = rel
            v = _tag_version(path, repo, rel["tag_name"])
            if v is not None:
                out.append(v)
        return out

    def info(self, path: str, query: str) -> RevInfo:
        repo = _parse(path)
        if query == "latest":
            return self._latest(path, repo)
        if _version.is_valid(query):
            if _version.is_pseudo(query):
                raise NotFoundError(
                    path,
                    query,
                    "GitHub modules are versioned by release tags; a pseudo-version names no "
                    "release. Require a released version instead",
                )
            rel = self._release(path, repo, query)
            return RevInfo(
                query, _release_time(rel), self._commit_of(path, query, repo, rel["tag_name"])
            )
        return self._from_revision(path, repo, query)

    def mod(self, path: str, version: str) -> bytes:
        repo = _parse(path)
        asset = _asset(self._release(path, repo, version), "wgt.mod")
        if asset is None:
            return _index.synthetic_mod(_module.normalise(path))
        return self._asset_bytes(path, version, asset)

    def index(self, path: str, version: str) -> bytes:
        repo = _parse(path)
        rel = self._release(path, repo, version)
        asset = _asset(rel, "wgt.index.json")
        if asset is not None:
            return self._asset_bytes(path, version, asset)
        return self._synthesise(path, version, rel)

    def file(self, path: str, version: str, name: str) -> FileRequest:
        repo = _parse(path)
        rel = self._release(path, repo, version)
        asset = _asset(rel, asset_name(name))
        if asset is None:
            raise NotFoundError(
                path,
                version,
                f"{name}: release {rel['tag_name']} has no asset {asset_name(name)!r}",
            )
        return FileRequest(str(asset["url"]), self._headers("application/octet-stream"))

    # ---- queries -----------------------------------------------------------

    def _latest(self, path: str, repo: _Repo) -> RevInfo:
        versions = self.versions(path)
        with self._lock:
            flagged = {
                v
                for v in versions
                if self._releases.get((repo.slug, repo.prefix + v), {}).get("prerelease")
            }
        releases = [v for v in versions if not _version.is_prerelease(v) and v not in flagged]
        pool = releases or versions
        if not pool:
            raise NotFoundError(
                path, "latest", f"no releases tagged {repo.prefix}vX.Y.Z in github.com/{repo.slug}"
            )
        best = _version.sort_versions(pool)[-1]
        return self.info(path, best)

    def _from_revision(self, path: str, repo: _Repo, rev: str) -> RevInfo:
        """A branch, tag or commit: the released version whose tag points at that commit."""
        sha = self._resolve_commit(path, repo, rev)
        if sha is None:
            raise NotFoundError(path, rev, f"unknown revision {rev!r} in github.com/{repo.slug}")
        tagged = [
            v
            for t in self._list(f"{self._repo_url(repo)}/tags", path, rev, "listing tags")
            if t.get("commit", {}).get("sha") == sha
            and (v := _tag_version(path, repo, str(t.get("name")))) is not None
        ]
        for v in reversed(_version.sort_versions(tagged)):
            try:
                rel = self._release(path, repo, v)
            except NotFoundError:
                continue
            return RevInfo(v, _release_time(rel), sha)
        raise NotFoundError(
            path,
            rev,
            f"revision {rev} (commit {sha[:12]}) has no release: GitHub modules are fetched from "
            f"release assets, so publish a release of it or require a released version",
        )

    def _resolve_commit(self, path: str, repo: _Repo, rev: str) -> str | None:
        url = f"{self._repo_url(repo)}/commits/{quote(rev, safe='/')}"
        try:
            resp = self._get(
                url, path, rev, f"resolving {rev}", self._headers("application/vnd.github.sha")
            )
        except NotFoundError:
            return None
        sha = resp.text.strip()
        return sha if _HEX.match(sha) else None

    def _commit_of(self, path: str, version: str, repo: _Repo, tag: str) -> str | None:
        try:
            return self._resolve_commit(path, repo, tag)
        except FetchError:
            return None  # the commit is informational; the release is what counts

    # ---- releases and assets ----------------------------------------------

    def _release(self, path: str, repo: _Repo, version: str) -> dict[str, Any]:
        try:
            _module.check_path_major(_module.normalise(path), version)
        except InvalidVersionError as exc:
            raise NotFoundError(path, version, exc.message) from None
        tag = repo.prefix + version
        with self._lock:
            rel = self._releases.get((repo.slug, tag))
        if rel is None:
            url = f"{self._repo_url(repo)}/releases/tags/{quote(tag, safe='/')}"
            rel = self._get(url, path, version, f"release {tag} of github.com/{repo.slug}").json()
            if not isinstance(rel, dict) or rel.get("draft"):
                raise NotFoundError(
                    path, version, f"no published release {tag} in github.com/{repo.slug}"
                )
            with self._lock:
                self._releases[(repo.slug, tag)] = rel
        return rel

    def _asset_bytes(self, path: str, version: str, asset: Mapping[str, Any]) -> bytes:
        return verified_get(
            self.http,
            str(asset["url"]),
            self._headers("application/octet-stream"),
            sha256_check(asset.get("size"), _digest(asset)),
            path=path,
            version=version,
            what=f"release asset {asset.get('name')}",
        )

    def _synthesise(self, path: str, version: str, rel: Mapping[str, Any]) -> bytes:
        entries = []
        for a in rel.get("assets") or []:
            name = str(a.get("name"))
            if _index.check_file_path(name) is not None:
                continue
            sha = _digest(a) or hashlib.sha256(self._asset_bytes(path, version, a)).hexdigest()
            entries.append(_index.IndexEntry(name, int(a.get("size") or 0), sha))
        idx = _index.build_index(
            _module.normalise(path),
            version,
            entries,
            time=_release_time(rel),
            build={"synthesised": "github release assets", "tag": rel.get("tag_name")},
        )
        return idx.to_json()

    # ---- HTTP ---------------------------------------------------------------

    def _repo_url(self, repo: _Repo) -> str:
        return f"{self.api_url}/repos/{repo.slug}"

    def _headers(self, accept: str = "application/vnd.github+json") -> dict[str, str]:
        h = {"Accept": accept, "X-GitHub-Api-Version": API_VERSION}
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        return h

    def _token_hint(self) -> str:
        return "" if self.token else "if the repository is private, set GITHUB_TOKEN"

    def _list(self, url: str, path: str, version: str | None, what: str) -> list[dict[str, Any]]:
        """Every item of a paginated listing, revalidating each page by its ETag."""
        items: list[dict[str, Any]] = []
        page_url: str | None = f"{url}?per_page={PER_PAGE}"
        for _ in range(MAX_PAGES):
            if page_url is None:
                return items
            key = f"github:{page_url}"
            cached = self.meta_cache.get(key)
            headers = self._headers()
            if cached is not None:
                headers["If-None-Match"] = cached[0]
            resp = self._get(page_url, path, version, what, headers, ok=(200, 304))
            if resp.status_code == 304 and cached is not None:
                envelope = json.loads(cached[1])
            else:
                envelope = {"next": resp.links.get("next", {}).get("url"), "items": resp.json()}
                etag = resp.headers.get("etag")
                if etag:
                    self.meta_cache.put(key, etag, json.dumps(envelope).encode())
            items.extend(i for i in envelope["items"] if isinstance(i, dict))
            page_url = envelope["next"]
        raise FetchError(path, version, f"{what}: more than {MAX_PAGES} pages")

    def _get(
        self,
        url: str,
        path: str,
        version: str | None,
        what: str,
        headers: Mapping[str, str] | None = None,
        ok: tuple[int, ...] = (200,),
    ) -> httpx.Response:
        """GET from the API, waiting out a short rate limit and translating errors."""
        from ..httpclient import HTTPStatusError, TransportError

        for attempt in range(2):
            try:
                return self.http.get(url, headers=headers or self._headers(), ok=ok)
            except TransportError as exc:
                raise FetchError(path, version, f"{what}: {exc}") from None
            except HTTPStatusError as exc:
                wait = _rate_wait(exc.status, exc.headers, exc.body)
                if wait is not None:
                    if attempt == 0 and wait <= self.max_rate_wait:
                        self._sleep(wait + 0.5)
                        continue
                    raise FetchError(path, version, self._rate_message(exc.headers, wait)) from None
                if exc.status == 401:
                    raise FetchError(
                        path,
                        version,
                        f"{what}: GitHub refused GITHUB_TOKEN (HTTP 401 Bad credentials); "
                        "check the token, or unset GITHUB_TOKEN for public repositories",
                    ) from None
                if exc.status in (404, 410, 422):
                    hint = f" ({self._token_hint()})" if self._token_hint() else ""
                    raise NotFoundError(path, version, f"{what}: not found{hint}") from None
                hint = "; set GITHUB_TOKEN to a token that can read it" if exc.status == 403 else ""
                raise FetchError(path, version, f"{what}: {exc}{hint}") from None
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


# ---- helpers ---------------------------------------------------------------


def _parse(path: str) -> _Repo:
    p = _module.normalise(path)
    base, _major = _module.split_path_major(p)
    if base.count("/") < 2:
        base = p  # github.com/acme/v2 is a repository named v2, not a major suffix
    elems = base.split("/")
    if elems[0] != "github.com" or len(elems) < 3:
        raise NotFoundError(
            path, None, "not a GitHub module path (want github.com/OWNER/REPO[/DIR])"
        )
    prefix = "/".join(elems[3:])
    return _Repo(elems[1], elems[2], prefix + "/" if prefix else "")


def _tag_version(path: str, repo: _Repo, tag: str) -> str | None:
    """The module version a tag names, or ``None`` if it belongs to another module or none."""
    if not tag.startswith(repo.prefix):
        return None
    v = tag[len(repo.prefix) :]
    if not _version.is_valid(v) or _version.is_pseudo(v):
        return None
    try:
        _module.check_path_major(_module.normalise(path), v)
    except InvalidVersionError:
        return None
    return v


def _asset(rel: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    for a in rel.get("assets") or []:
        if isinstance(a, dict) and a.get("name") == name:
            return a
    return None


def _digest(asset: Mapping[str, Any]) -> str | None:
    d = asset.get("digest")
    if isinstance(d, str) and d.startswith("sha256:") and re.fullmatch(r"[0-9a-f]{64}", d[7:]):
        return d[7:]
    return None


def _release_time(rel: Mapping[str, Any]) -> str | None:
    t = rel.get("published_at") or rel.get("created_at")
    return rfc3339(parse_time(t)) if isinstance(t, str) else None


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
