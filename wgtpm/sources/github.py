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
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .. import index as _index
from .. import module as _module
from .. import version as _version
from .._errors import FetchError, InvalidVersionError, NotFoundError
from ._base import FileRequest, RevInfo
from ._githubapi import API_VERSION, DEFAULT_API_URL, MAX_PAGES, GitHubApi, Repo
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
    from ..httpclient import HttpClient

__all__ = [
    "API_VERSION",
    "DEFAULT_API_URL",
    "MAX_PAGES",
    "GitHubSource",
    "asset_name",
    "asset_path",
    "asset_problem",
    "from_host",
]

_ELEM = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9._-]*[A-Za-z0-9_])?\Z")


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
        self.meta_cache: MetaCache = meta_cache if meta_cache is not None else MemoryMetaCache()
        self.api = GitHubApi(http, self.api_url, self.token, self.meta_cache, max_rate_wait, sleep)
        self._lock = threading.Lock()
        self._releases: dict[tuple[str, str], dict[str, Any]] = {}  # (repo slug, tag) -> release

    # ---- the Source protocol ---------------------------------------------

    def versions(self, path: str) -> list[str]:
        repo = _parse(path)
        out = []
        what = "listing releases"
        for rel in self.api.list(f"{self.api.repo_url(repo)}/releases", path, None, what):
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
        return FileRequest(url, self.api.headers(url, "application/octet-stream"))

    # ---- queries -----------------------------------------------------------

    def _latest(self, path: str, repo: Repo) -> RevInfo:
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

    def _from_revision(self, path: str, repo: Repo, rev: str) -> RevInfo:
        """A branch, tag or commit: the released version whose tag points at that commit."""
        sha = self.api.commit(path, repo, rev)
        if sha is None:
            raise NotFoundError(path, rev, f"unknown revision {rev!r} in github.com/{repo.slug}")
        tagged = [
            v
            for t in self.api.list(f"{self.api.repo_url(repo)}/tags", path, rev, "listing tags")
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

    def _commit_of(self, path: str, version: str, repo: Repo, tag: str) -> str | None:
        try:
            return self.api.commit(path, repo, tag)
        except FetchError:
            return None  # the commit is informational; the release is what counts

    # ---- releases and assets ----------------------------------------------

    def _release(self, path: str, repo: Repo, version: str) -> dict[str, Any]:
        try:
            _module.check_path_major(_module.normalise(path), version)
        except InvalidVersionError as exc:
            raise NotFoundError(path, version, exc.message) from exc
        tag = repo.prefix + version
        with self._lock:
            rel = self._releases.get((repo.slug, tag))
        if rel is None:
            url = f"{self.api.repo_url(repo)}/releases/tags/{quote(tag, safe='/')}"
            what = f"release {tag} of github.com/{repo.slug}"
            rel = parse_json(self.api.get(url, path, version, what).content, path, version, what)
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
            self.api.headers(str(asset["url"]), "application/octet-stream"),
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


# ---- helpers ---------------------------------------------------------------


def from_host(http: HttpClient, meta: MetaCache) -> GitHubSource:
    """The source :mod:`wgtpm.sources.hosts` makes for ``github.com``."""
    return GitHubSource(http, meta_cache=meta)


def _parse(path: str) -> Repo:
    elems = repo_elems(path, "github.com")
    if elems is None or len(elems) < 2:
        raise NotFoundError(
            path, None, "not a GitHub module path (want github.com/OWNER/REPO[/DIR])"
        )
    prefix = "/".join(elems[2:])
    return Repo(elems[0], elems[1], prefix + "/" if prefix else "")


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
