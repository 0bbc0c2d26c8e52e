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
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .. import index as _index
from .. import module as _module
from .. import version as _version
from .._errors import FetchError, InvalidVersionError, NotFoundError
from ..httpclient import Credential
from ._base import FileRequest, RevInfo
from ._hosted import (
    MemoryMetaCache,
    MetaCache,
    env_secret,
    env_url,
    parse_json,
    parse_time,
    repo_elems,
    rfc3339,
    sha256_check,
    synthesise_index,
    tag_version,
    verified_get,
)

if TYPE_CHECKING:
    import httpx

    from ..httpclient import HttpClient

__all__ = [
    "DEFAULT_API_URL",
    "GitHubSource",
    "asset_name",
    "asset_path",
    "asset_problem",
    "from_host",
]

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
PER_PAGE = 100
#: A listing longer than this many pages is refused rather than followed for ever.
MAX_PAGES = 100
_ELEM = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9._-]*[A-Za-z0-9_])?\Z")
_HEX = re.compile(r"^[0-9a-f]{7,40}\Z")


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
        self.api_url = env_url(api_url, "GITHUB_API_URL", DEFAULT_API_URL)
        self.token = env_secret(token, "GITHUB_TOKEN")
        self._cred = (
            Credential(self.api_url, "Authorization", f"Bearer {self.token}")
            if self.token
            else None
        )
        self.meta_cache: MetaCache = meta_cache if meta_cache is not None else MemoryMetaCache()
        self.max_rate_wait = max_rate_wait
        self._sleep = sleep
        self._lock = threading.Lock()
        self._releases: dict[tuple[str, str], dict[str, Any]] = {}  # (repo slug, tag) -> release

    # ---- the Source protocol ---------------------------------------------

    def versions(self, path: str) -> list[str]:
        repo = _parse(path)
        out = []
        what = "listing releases"
        for rel in self._list(f"{self._repo_url(repo)}/releases", path, None, what):
            _check_release(rel, path, None, what)
            if rel.get("draft"):
                continue
            with self._lock:
                self._releases[(repo.slug, rel["tag_name"])] = rel
            v = tag_version(path, rel["tag_name"], repo.prefix)
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

    def known_files(self, path: str, version: str) -> Sequence[_index.IndexEntry]:
        return ()  # an index made from the assets' digests is ready at once

    def attestation(self, path: str, version: str) -> bytes:
        """The release's SLSA provenance statement, the asset ``wgt.slsa.json``
        (:mod:`wgtpm.publish._slsa`; not in the index, not covered by h1);
        :class:`NotFoundError` when the release has none."""
        rel = self._release(path, _parse(path), version)
        asset = _asset(rel, "wgt.slsa.json")
        if asset is None:
            raise NotFoundError(
                path, version, f"release {rel['tag_name']} has no asset 'wgt.slsa.json'"
            )
        return self._asset_bytes(path, version, asset)

    def signature(self, path: str, version: str) -> bytes:
        """The release's signature, the asset ``wgt.sig`` (a model-signing bundle,
        :mod:`wgtpm.trust`); :class:`NotFoundError` when the release has none."""
        rel = self._release(path, _parse(path), version)
        asset = _asset(rel, "wgt.sig")
        if asset is None:
            raise NotFoundError(path, version, f"release {rel['tag_name']} has no asset 'wgt.sig'")
        return self._asset_bytes(path, version, asset)

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
        url = str(asset["url"])
        return FileRequest(url, self._headers(url, "application/octet-stream"))

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
            if isinstance(t.get("commit"), dict)
            and t["commit"].get("sha") == sha
            and (v := tag_version(path, str(t.get("name")), repo.prefix)) is not None
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
                url, path, rev, f"resolving {rev}", self._headers(url, "application/vnd.github.sha")
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
            raise NotFoundError(path, version, exc.message) from exc
        tag = repo.prefix + version
        with self._lock:
            rel = self._releases.get((repo.slug, tag))
        if rel is None:
            url = f"{self._repo_url(repo)}/releases/tags/{quote(tag, safe='/')}"
            what = f"release {tag} of github.com/{repo.slug}"
            rel = parse_json(self._get(url, path, version, what).content, path, version, what)
            if isinstance(rel, dict):
                _check_release(rel, path, version, what)
            if not isinstance(rel, dict) or rel.get("draft"):
                raise NotFoundError(
                    path, version, f"no published release {tag} in github.com/{repo.slug}"
                )
            with self._lock:
                self._releases[(repo.slug, tag)] = rel
        return rel

    def _asset_bytes(
        self, path: str, version: str, asset: Mapping[str, Any], *, metadata: bool = True
    ) -> bytes:
        """The verified bytes of ``asset``: at most ``MAX_METADATA`` for metadata, else its size."""
        from ..httpclient import MAX_METADATA

        size = _size(asset)
        limit = min(size, MAX_METADATA) if metadata and size is not None else size
        if metadata and limit is None:
            limit = MAX_METADATA
        return verified_get(
            self.http,
            str(asset["url"]),
            self._headers(str(asset["url"]), "application/octet-stream"),
            sha256_check(_size(asset), _digest(asset)),
            path=path,
            version=version,
            what=f"release asset {asset.get('name')}",
            limit=limit,
            file=not metadata,
        )

    def _synthesise(self, path: str, version: str, rel: Mapping[str, Any]) -> bytes:
        entries = []
        for a in rel.get("assets") or []:
            name = a.get("name") if isinstance(a, dict) else None
            if not isinstance(name, str) or _index.check_file_path(name) is not None:
                continue
            sha = (
                _digest(a)
                or hashlib.sha256(self._asset_bytes(path, version, a, metadata=False)).hexdigest()
            )
            entries.append(_index.IndexEntry(name, _size(a) or 0, sha))
        return synthesise_index(
            path,
            version,
            entries,
            time=_release_time(rel),
            build={"synthesised": "github release assets", "tag": rel.get("tag_name")},
        )

    # ---- HTTP ---------------------------------------------------------------

    def _repo_url(self, repo: _Repo) -> str:
        return f"{self.api_url}/repos/{repo.slug}"

    def _headers(self, url: str, accept: str = "application/vnd.github+json") -> dict[str, str]:
        """Headers for a GET of ``url``: the token only when ``url`` is on the API's origin."""
        h = {"Accept": accept, "X-GitHub-Api-Version": API_VERSION}
        if self._cred is not None:
            h.update(self._cred.headers_for(url))
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
            headers = self._headers(page_url)
            if cached is not None:
                headers["If-None-Match"] = cached[0]
            resp = self._get(page_url, path, version, what, headers, ok=(200, 304))
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
        from ..httpclient import HTTPStatusError, ResponseTooLargeError, TransportError

        for attempt in range(2):
            try:
                return self.http.get(url, headers=headers or self._headers(url), ok=ok)
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


# ---- helpers ---------------------------------------------------------------


def from_host(http: HttpClient, meta: MetaCache) -> GitHubSource:
    """The source :mod:`wgtpm.sources.hosts` makes for ``github.com``."""
    return GitHubSource(http, meta_cache=meta)


def _parse(path: str) -> _Repo:
    elems = repo_elems(path, "github.com")
    if elems is None or len(elems) < 2:
        raise NotFoundError(
            path, None, "not a GitHub module path (want github.com/OWNER/REPO[/DIR])"
        )
    prefix = "/".join(elems[2:])
    return _Repo(elems[0], elems[1], prefix + "/" if prefix else "")


def _check_release(rel: Mapping[str, Any], path: str, version: str | None, what: str) -> None:
    """Refuse a release object whose fields have the wrong type (a hostile or broken API)."""
    problem = ""
    if not isinstance(rel.get("tag_name"), str):
        problem = "tag_name is not a string"
    elif not isinstance(rel.get("assets", []), list):
        problem = "assets is not a list"
    else:
        try:
            _release_time(rel)
        except ValueError as exc:
            problem = f"published_at: {exc}"
    if problem:
        raise FetchError(path, version, f"{what}: malformed release from the API ({problem})")


def _asset(rel: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    for a in rel.get("assets") or []:
        if isinstance(a, dict) and a.get("name") == name:
            return a
    return None


def _size(asset: Mapping[str, Any]) -> int | None:
    n = asset.get("size")
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else None


def _digest(asset: Mapping[str, Any]) -> str | None:
    d = asset.get("digest")
    if isinstance(d, str) and d.startswith("sha256:") and re.fullmatch(r"[0-9a-f]{64}", d[7:]):
        return d[7:]
    return None


def _release_time(rel: Mapping[str, Any]) -> str | None:
    """The release's time in RFC 3339; ``ValueError`` for a malformed one."""
    t = rel.get("published_at") or rel.get("created_at")
    if t is None:
        return None
    if not isinstance(t, str):
        raise ValueError(f"{t!r} is not a time")
    return rfc3339(parse_time(t))


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
