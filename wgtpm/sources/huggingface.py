"""Modules that are Hugging Face model repositories: ``hf.co/OWNER/REPO[/vN]``.

``huggingface.co/OWNER/REPO`` is the same module, normalised to ``hf.co``.

Versions
--------
Git tags ``vX.Y.Z`` on the repository are the versions (the major agreeing
with a ``/vN`` suffix of the path). Any other revision (a branch, another
tag, a commit) becomes a pseudo-version pinned to its commit, as Go makes
them, unless a version tag points at that very commit::

    hf.co/acme/tiny@main     ->  v0.1.1-0.20260301020000-c2801788655d   (main is after tag v0.1.0)
    hf.co/acme/tiny@3f9a2b7  ->  v0.0.0-20260301010000-3f9a2b7c1d0e      (no version tag before it)

The time is the commit's time and the base is the highest version tag among
the commit's ancestors. ``latest`` is the highest release tag, else the
highest pre-release tag, else the pseudo-version of the default branch.

Files
-----
The repository's ``wgt.mod`` and ``wgt.index.json`` are used when it has
them. Otherwise wgt.mod is ``module PATH\\n`` and the index is synthesised
from the tree at the pinned commit: every file, with the sha256 and size the
API states for LFS files and, for the other (small) files, the sha256 of their
bytes, downloaded once and checked against the git blob id the API states.
Those bytes are handed to the fetcher with the file's download request
(:attr:`FileRequest.body`), so a small file crosses the network once; the
fetcher verifies them against the index like any download.
Files whose path a module may not hold (dot files such as ``.gitattributes``)
are left out and named under ``build.skipped``. Every file downloads from
``ENDPOINT/OWNER/REPO/resolve/COMMIT/PATH``, which answers with the bytes or a
redirect to a CDN; ``HF_TOKEN`` goes to the endpoint's origin only.

Metadata comes through ``huggingface_hub`` (``HfApi``: refs, model info at a
revision, the recursive tree, the commit history), imported only when a
Hugging Face module is used. ``HF_ENDPOINT`` and ``HF_TOKEN`` are honoured as
the Hugging Face tools honour them.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from .. import index as _index
from .. import module as _module
from .. import version as _version
from .._errors import FetchError, InvalidVersionError, NotFoundError, WgtpmError
from .._retry import Backoff
from ..httpclient import Credential
from ._base import FileRequest, RevInfo
from ._hosted import (
    BodyKeeper,
    MetaCache,
    env_url,
    git_blob_id,
    repo_elems,
    rfc3339,
    sha256_check,
    synthesise_index,
    tag_version,
    verified_get,
)

if TYPE_CHECKING:
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    from ..httpclient import HttpClient

__all__ = ["DEFAULT_ENDPOINT", "HuggingFaceSource", "from_host"]

DEFAULT_ENDPOINT = "https://huggingface.co"
#: Tries of one Hub API call that meets a 429, a 5xx or a network error, and the waits between.
CALL_RETRY = Backoff(attempts=3, base=0.25)
#: Seconds the refs of a repository are trusted: a command lists them once (to
#: learn the versions, then to resolve one), a long-lived process sees new tags.
REFS_TTL = 60.0
#: Bytes of small files kept from indexing for the fetcher, per source (beyond
#: this they are downloaded again).
KEEP_BODIES = 64 << 20
T = TypeVar("T")


@dataclass(frozen=True)
class _Rev:
    commit: str
    time: datetime


class HuggingFaceSource:
    """Modules from Hugging Face model repositories.

    ``endpoint`` and ``token`` default to ``HF_ENDPOINT`` and ``HF_TOKEN``
    (then the token ``hf auth login`` saved); ``jobs`` small files are hashed
    at once when an index is synthesised.
    """

    name = "direct"

    def __init__(
        self,
        http: HttpClient,
        *,
        endpoint: str | None = None,
        token: str | None = None,
        jobs: int = 16,
    ) -> None:
        self.http = http
        self.endpoint = env_url(endpoint, "HF_ENDPOINT", DEFAULT_ENDPOINT)
        self._token = token
        self._token_known = token is not None
        self.jobs = max(1, jobs)
        self._lock = threading.Lock()
        self._api_obj: HfApi | None = None
        self._revs: dict[tuple[str, str], _Rev] = {}
        self._trees: dict[tuple[str, str], dict[str, RepoFile]] = {}
        self._refs: dict[str, tuple[float, dict[str, str]]] = {}
        # (repo id, commit, file) -> the verified bytes indexing downloaded, until file() takes them
        self._bodies = BodyKeeper(KEEP_BODIES)

    # ---- the Source protocol ---------------------------------------------

    def versions(self, path: str) -> list[str]:
        return sorted(self._version_tags(path))

    def info(self, path: str, query: str) -> RevInfo:
        rid = _repo_id(path)
        if query == "latest":
            tags = list(self._version_tags(path))
            pool = [v for v in tags if not _version.is_prerelease(v)] or tags
            if pool:
                return self.info(path, _version.sort_versions(pool)[-1])
            return self._pseudo(path, self._model_rev(path, rid, None, "latest"))
        if _version.is_valid(query):
            rev = self._resolve(path, query)
            return RevInfo(query, rfc3339(rev.time), rev.commit)
        rev = self._model_rev(path, rid, query, query)
        tagged = [v for v, sha in self._version_tags(path).items() if sha == rev.commit]
        if tagged:
            return self.info(path, _version.sort_versions(tagged)[-1])
        return self._pseudo(path, rev)

    def mod(self, path: str, version: str) -> bytes:
        rev = self._resolve(path, version)
        entry = self._tree(path, version, rev.commit).get("wgt.mod")
        if entry is None:
            return _index.synthetic_mod(_module.normalise(path))
        return self._download(path, version, rev.commit, entry)

    def index(self, path: str, version: str) -> bytes:
        rev = self._resolve(path, version)
        tree = self._tree(path, version, rev.commit)
        entry = tree.get("wgt.index.json")
        if entry is not None:
            return self._download(path, version, rev.commit, entry)
        return self._synthesise(path, version, rev, tree)

    def file(self, path: str, version: str, name: str) -> FileRequest:
        rev = self._resolve(path, version)
        req = self._request(path, rev.commit, name)
        body = self._bodies.take((_repo_id(path), rev.commit, name))
        return req if body is None else FileRequest(req.url, req.headers, body)

    def _request(self, path: str, commit: str, name: str) -> FileRequest:
        url = f"{self.endpoint}/{_repo_id(path)}/resolve/{commit}/{quote(name)}"
        token = self.token()
        if not token:
            return FileRequest(url)
        return FileRequest(
            url, Credential(self.endpoint, "Authorization", f"Bearer {token}").headers_for(url)
        )

    # ---- credentials and the client -----------------------------------------

    def token(self) -> str | None:
        """``HF_TOKEN``, else the token the Hugging Face CLI saved, else ``None``."""
        if not self._token_known:
            tok = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")
            if not tok:
                from huggingface_hub import get_token

                tok = get_token()
            self._token, self._token_known = tok or None, True
        return self._token

    def _api(self) -> HfApi:
        if self._api_obj is None:
            from huggingface_hub import HfApi

            from ._hfclient import install

            install(self.http.opts)

            self._api_obj = HfApi(
                endpoint=self.endpoint, token=self.token() or False, library_name="wgtpm"
            )
        return self._api_obj

    def _call(self, path: str, version: str | None, what: str, fn: Callable[[], T]) -> T:
        """Run one ``huggingface_hub`` call, translating its errors into module errors.

        A 429, a 5xx or a network error is tried again (as :data:`CALL_RETRY`
        says): not every ``HfApi`` method retries by itself.
        """
        from huggingface_hub import errors

        from ..httpclient import ResponseTooLargeError, TransportError

        rid = _repo_id(path)
        for attempt in CALL_RETRY.attempts_range():
            last = CALL_RETRY.last(attempt)
            try:
                return fn()
            except errors.GatedRepoError as exc:
                raise FetchError(
                    path,
                    version,
                    f"{what}: {rid} is gated: accept its conditions on {self.endpoint}/{rid} "
                    "and set HF_TOKEN to a token of that account",
                ) from exc
            except errors.RepositoryNotFoundError as exc:
                hint = "" if self.token() else " (if it is private, set HF_TOKEN)"
                raise NotFoundError(
                    path, version, f"{what}: no repository {rid} at {self.endpoint}{hint}"
                ) from exc
            except errors.RevisionNotFoundError as exc:
                raise NotFoundError(path, version, f"{what}: no such revision in {rid}") from exc
            except errors.HfHubHTTPError as exc:
                status = exc.response.status_code if exc.response is not None else 0
                if status in (404, 410):
                    raise NotFoundError(
                        path, version, f"{what}: not found (HTTP {status})"
                    ) from exc
                if last or not (status == 429 or status >= 500):
                    raise FetchError(path, version, f"{what}: {_first_line(exc)}") from exc
            except (ResponseTooLargeError, TransportError) as exc:  # wgtpm's limits (_hfclient)
                raise FetchError(path, version, f"{what}: {exc}") from exc
            except (WgtpmError, AssertionError):
                raise
            except (ValueError, RecursionError, KeyError, TypeError, AttributeError) as exc:
                # huggingface_hub reading an answer that is not the JSON it should be
                raise FetchError(
                    path,
                    version,
                    f"{what}: the Hub answered with something wgtpm cannot read "
                    f"({type(exc).__name__}: {_first_line(exc)})",
                ) from exc
            except Exception as exc:  # network errors of huggingface_hub's own HTTP stack
                if last:
                    raise FetchError(path, version, f"{what}: {type(exc).__name__}: {exc}") from exc
            CALL_RETRY.sleep(attempt)
        raise AssertionError("unreachable")

    # ---- revisions ----------------------------------------------------------

    def _version_tags(self, path: str) -> dict[str, str]:
        """version -> commit, for the tags of the repository that are versions of this module."""
        now = time.monotonic()
        with self._lock:
            cached = self._refs.get(path)
        if cached is not None and now - cached[0] < REFS_TTL:
            return dict(cached[1])
        rid = _repo_id(path)
        refs = self._call(path, None, "listing refs", lambda: self._api().list_repo_refs(rid))
        out = {}
        for tag in refs.tags:
            v = tag_version(path, tag.name) if isinstance(tag.name, str) else None
            if v is not None and isinstance(tag.target_commit, str):
                out[v] = tag.target_commit
        with self._lock:
            self._refs[path] = (now, out)
        return dict(out)

    def _model_rev(self, path: str, rid: str, rev: str | None, query: str) -> _Rev:
        """The commit and commit time ``rev`` (``None``: the default branch) names."""
        what = f"resolving {rev}" if rev else "reading the default branch"
        info = self._call(
            path,
            query,
            what,
            lambda: self._api().model_info(rid, revision=rev, expand=["sha", "lastModified"]),
        )
        if (
            not isinstance(info.sha, str)
            or not info.sha
            or not isinstance(info.last_modified, datetime)
        ):
            raise FetchError(path, query, f"{what}: the Hub did not say which commit it is")
        return _Rev(info.sha, info.last_modified.replace(microsecond=0))

    def _pseudo(self, path: str, rev: _Rev) -> RevInfo:
        base = self._base(path, rev.commit)
        _, suffix = _module.split_path_major(_module.normalise(path))
        major = suffix[1:] if suffix else "v0"
        pv = _version.pseudo_version(base, rev.time, rev.commit, major_version=major)
        with self._lock:
            self._revs[(path, pv)] = rev
        return RevInfo(pv, rfc3339(rev.time), rev.commit)

    def _base(self, path: str, commit: str) -> str | None:
        """The highest version tag on an ancestor of ``commit`` (the pseudo-version's base)."""
        tags = self._version_tags(path)
        if not tags:
            return None
        rid = _repo_id(path)
        history = self._call(
            path,
            None,
            f"listing the history of {commit[:12]}",
            lambda: self._api().list_repo_commits(rid, revision=commit),
        )
        ancestors = {c.commit_id for c in history}
        below = [v for v, sha in tags.items() if sha in ancestors]
        return _version.sort_versions(below)[-1] if below else None

    def _resolve(self, path: str, version: str) -> _Rev:
        """The commit (and its time) of ``version``: a version tag or a pseudo-version."""
        with self._lock:
            rev = self._revs.get((path, version))
        if rev is not None:
            return rev
        rid = _repo_id(path)
        try:
            _module.check_path_major(_module.normalise(path), version)
        except InvalidVersionError as exc:
            raise NotFoundError(path, version, exc.message) from exc
        if _version.is_pseudo(version):
            short = _version.pseudo_rev(version)
            try:
                rev = self._model_rev(path, rid, short, version)
            except NotFoundError:  # a Hub that takes only full commit ids: look in the history
                rev = self._model_rev(path, rid, self._find_commit(path, version, short), version)
            if not rev.commit.startswith(short):
                raise NotFoundError(path, version, f"no commit {short} in {rid}")
            if _version.pseudo_time(version) != rev.time:
                raise NotFoundError(
                    path,
                    version,
                    f"commit {short} was made at {rfc3339(rev.time)}, not at the time "
                    "this pseudo-version records; it is not a version of this module",
                )
        else:
            sha = self._version_tags(path).get(version)
            if sha is None:
                raise NotFoundError(path, version, f"no tag {version} in {rid}")
            rev = self._model_rev(path, rid, sha, version)
        with self._lock:
            self._revs[(path, version)] = rev
        return rev

    def _find_commit(self, path: str, version: str, short: str) -> str:
        """The full id of commit ``short`` from the history of the branches and tags."""
        rid = _repo_id(path)
        refs = self._call(path, None, "listing refs", lambda: self._api().list_repo_refs(rid))
        api = self._api()
        for ref in [*refs.branches, *refs.tags]:
            target = ref.target_commit

            def history(target: str = target) -> list[Any]:
                return list(api.list_repo_commits(rid, revision=target))

            for c in self._call(path, None, f"listing the history of {ref.name}", history):
                if c.commit_id.startswith(short):
                    return str(c.commit_id)
        raise NotFoundError(path, version, f"no commit {short} in {rid}")

    # ---- files ------------------------------------------------------------------

    def _tree(self, path: str, version: str, commit: str) -> dict[str, RepoFile]:
        rid = _repo_id(path)
        with self._lock:
            tree = self._trees.get((rid, commit))
        if tree is None:
            entries = self._call(
                path,
                version,
                f"listing the files of commit {commit[:12]}",
                lambda: list(self._api().list_repo_tree(rid, recursive=True, revision=commit)),
            )
            from huggingface_hub.hf_api import RepoFile

            tree = {e.path: e for e in entries if isinstance(e, RepoFile)}  # files, not folders
            with self._lock:
                self._trees[(rid, commit)] = tree
        return tree

    def _download(self, path: str, version: str, commit: str, entry: RepoFile) -> bytes:
        """The bytes of a file, checked against the LFS sha256 or the git blob id the API gave."""
        req = self._request(path, commit, entry.path)
        if entry.lfs is not None:
            check = sha256_check(entry.lfs.size, entry.lfs.sha256)
            limit = entry.lfs.size
        else:
            limit = entry.size
            want = entry.blob_id

            def check(body: bytes) -> str | None:
                got = git_blob_id(body)
                return None if got == want else f"git blob id {got}, want {want}"

        return verified_get(
            self.http,
            req.url,
            req.headers,
            check,
            path=path,
            version=version,
            what=entry.path,
            limit=limit if isinstance(limit, int) else None,
        )

    def _synthesise(self, path: str, version: str, rev: _Rev, tree: dict[str, RepoFile]) -> bytes:
        entries: list[_index.IndexEntry] = []
        small: list[RepoFile] = []
        skipped: list[str] = []
        for name in sorted(tree):
            f = tree[name]
            if _index.check_file_path(name) is not None:
                skipped.append(name)
            elif f.lfs is not None:
                entries.append(_index.IndexEntry(name, f.lfs.size, f.lfs.sha256))
            else:
                small.append(f)

        def digest(f: RepoFile) -> _index.IndexEntry:
            data = self._download(path, version, rev.commit, f)
            self._bodies.keep((_repo_id(path), rev.commit, f.path), data)
            return _index.IndexEntry(f.path, len(data), hashlib.sha256(data).hexdigest())

        if small:
            with ThreadPoolExecutor(min(self.jobs, len(small))) as pool:
                entries.extend(pool.map(digest, small))
        build: dict[str, Any] = {"synthesised": "hf.co tree"}
        if skipped:
            build["skipped"] = skipped
        return synthesise_index(
            path, version, entries, time=rfc3339(rev.time), commit=rev.commit, build=build
        )


# ---- helpers -------------------------------------------------------------------


def from_host(http: HttpClient, meta: MetaCache) -> HuggingFaceSource:
    """The source :mod:`wgtpm.sources.hosts` makes for ``hf.co`` (the Hub's own client
    revalidates nothing through ``meta``)."""
    return HuggingFaceSource(http)


def _repo_id(path: str) -> str:
    """``hf.co/acme/tiny/v2`` -> ``acme/tiny``; raises :class:`NotFoundError` for other paths."""
    elems = repo_elems(path, "hf.co")
    if elems is None or len(elems) != 2:
        raise NotFoundError(path, None, "not a Hugging Face module path (want hf.co/OWNER/REPO)")
    return f"{elems[0]}/{elems[1]}"


def _first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message, at most 300 characters, secrets redacted."""
    from ..httpclient import redact

    lines = str(exc).strip().splitlines()
    return redact(lines[0][:300]) if lines else type(exc).__name__
