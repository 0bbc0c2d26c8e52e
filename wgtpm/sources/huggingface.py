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

Metadata comes from the Hub API through wgtpm's own HTTP client (one pool of
connections, its limits, retries and notices; ``huggingface_hub`` is never
imported), in as few round trips as the API allows::

    GET /api/models/OWNER/REPO/refs                       tags (the versions) and branches
    GET /api/models/OWNER/REPO/revision/REV?blobs=true    commit, time, and every file with
                                                          size, git blob id and LFS sha256
    GET /api/models/OWNER/REPO/commits/REV?p=N            history (pseudo-versions only)

For a version tag, the revision is asked by the tag's name at the same time as
the refs, so a get costs one round trip of metadata, not two; when the refs say
the tag names another commit (a branch of the same name answered), that commit
is asked for itself.
A Hub whose revision answer lists no file details is asked for the
recursive tree (``/tree/REV?recursive=true``, following ``Link: rel="next"``).
``HF_ENDPOINT`` and ``HF_TOKEN`` are honoured as the Hugging Face tools honour
them (without ``HF_TOKEN``, the token ``hf auth login`` saved in
``$HF_TOKEN_PATH`` or ``$HF_HOME/token``).
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from .. import index as _index
from .. import module as _module
from .. import version as _version
from .._errors import InvalidVersionError, NotFoundError, WgtpmError
from ._base import FileRequest, RevInfo
from ._hflocate import SmallLfs
from ._hosted import (
    BodyKeeper,
    MetaCache,
    env_url,
    git_blob_id,
    rfc3339,
    sha256_check,
    synthesise_index,
    tag_version,
    verified_get,
)
from ._hubapi import HubApi, HubFile, Rev, repo_id

if TYPE_CHECKING:
    from ..httpclient import HttpClient

__all__ = [
    "CARD",
    "DEFAULT_ENDPOINT",
    "MAX_CARD_HEADER",
    "HuggingFaceSource",
    "card_license",
    "from_host",
]

_T = TypeVar("_T")
_R = TypeVar("_R")

DEFAULT_ENDPOINT = "https://huggingface.co"
#: Seconds the refs of a repository are trusted: a command lists them once (to
#: learn the versions, then to resolve one), a long-lived process sees new tags.
REFS_TTL = 60.0
#: Bytes of small files kept in memory from indexing for the fetcher, per source; the
#: next :data:`SPILL_BODIES` wait in a temporary file (beyond both they are downloaded
#: again). 16 MiB holds ~8,000 files of 2 KB (issue 15: the bodies took 64 MiB before).
KEEP_BODIES = 16 << 20
SPILL_BODIES = 1 << 30
#: Small files being downloaded (or done, waiting to be listed in order) per hashing job
#: while an index is synthesised: ``Executor.map`` would hold a future for every file.
AHEAD_PER_JOB = 4


class HuggingFaceSource:
    """Modules from Hugging Face model repositories.

    ``endpoint`` and ``token`` default to ``HF_ENDPOINT`` and ``HF_TOKEN``
    (then the token ``hf auth login`` saved); ``jobs`` small files are hashed
    at once when an index is synthesised (32: small files are bound by latency, not bandwidth).
    """

    name = "direct"

    def __init__(
        self,
        http: HttpClient,
        *,
        endpoint: str | None = None,
        token: str | None = None,
        jobs: int = 32,
    ) -> None:
        self.http = http
        self.endpoint = env_url(endpoint, "HF_ENDPOINT", DEFAULT_ENDPOINT)
        self.api = HubApi(http, self.endpoint, token)
        self.jobs = max(1, jobs)
        self._lock = threading.Lock()
        self._revs: dict[tuple[str, str], Rev] = {}
        self._trees: dict[tuple[str, str], dict[str, HubFile]] = {}
        self._refs: dict[str, tuple[float, dict[str, str]]] = {}
        # (repo id, commit, file) -> the verified bytes indexing downloaded, until file() takes them
        self._bodies = BodyKeeper(KEEP_BODIES, SPILL_BODIES)
        self._small_lfs = SmallLfs(http, self._listed_tree, self.api.file_request)

    # ---- the Source protocol ---------------------------------------------

    def versions(self, path: str) -> list[str]:
        return sorted(self._version_tags(path))

    def info(self, path: str, query: str) -> RevInfo:
        rid = repo_id(path)
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

    def attestation(self, path: str, version: str) -> bytes:
        """The version's SLSA provenance statement, the file ``wgt.slsa.json`` at its commit
        (:mod:`wgtpm.publish._slsa`; not in the index, not covered by h1);
        :class:`NotFoundError` when the commit has none."""
        rev = self._resolve(path, version)
        entry = self._tree(path, version, rev.commit).get("wgt.slsa.json")
        if entry is None:
            raise NotFoundError(path, version, f"commit {rev.commit[:12]} has no wgt.slsa.json")
        return self._download(path, version, rev.commit, entry)

    def signature(self, path: str, version: str) -> bytes:
        """The version's signature, the file ``wgt.sig`` at its commit (a model-signing
        bundle, :mod:`wgtpm.trust`); :class:`NotFoundError` when the commit has none."""
        rev = self._resolve(path, version)
        entry = self._tree(path, version, rev.commit).get("wgt.sig")
        if entry is None:
            raise NotFoundError(path, version, f"commit {rev.commit[:12]} has no wgt.sig")
        return self._download(path, version, rev.commit, entry)

    def file(self, path: str, version: str, name: str) -> FileRequest:
        rev = self._resolve(path, version)
        req = self.api.file_request(path, rev.commit, name)
        rid = repo_id(path)
        body = self._bodies.take((rid, rev.commit, name))
        if body is not None:
            return FileRequest(req.url, req.headers, body)
        return self._small_lfs.located(rid, path, rev.commit, name, req)

    def _listed_tree(self, rid: str, commit: str) -> dict[str, HubFile] | None:
        with self._lock:
            return self._trees.get((rid, commit))

    def token(self) -> str | None:
        """``HF_TOKEN``, else the token the Hugging Face CLI saved, else ``None``."""
        return self.api.token()

    # ---- revisions ----------------------------------------------------------

    def _cached_tags(self, path: str) -> dict[str, str] | None:
        """:meth:`_version_tags` as last listed, unless that was :data:`REFS_TTL` ago."""
        with self._lock:
            cached = self._refs.get(path)
        if cached is not None and time.monotonic() - cached[0] < REFS_TTL:
            return dict(cached[1])
        return None

    def _version_tags(self, path: str) -> dict[str, str]:
        """version -> commit, for the tags of the repository that are versions of this module."""
        cached = self._cached_tags(path)
        if cached is not None:
            return cached
        now = time.monotonic()
        out = {}
        for name, commit in self.api.refs(path, "tags"):
            v = tag_version(path, name)
            if v is not None:
                out[v] = commit
        with self._lock:
            self._refs[path] = (now, out)
        return dict(out)

    def _model_rev(self, path: str, rid: str, rev: str | None, query: str) -> Rev:
        """The commit and commit time ``rev`` (``None``: the default branch) names; the
        files the same answer lists are kept as the commit's tree."""
        return self._keep_tree(rid, *self.api.revision(path, rev, query))

    def _keep_tree(self, rid: str, found: Rev, tree: dict[str, HubFile] | None) -> Rev:
        if tree is not None:
            with self._lock:
                self._trees.setdefault((rid, found.commit), tree)
        return found

    def _pseudo(self, path: str, rev: Rev) -> RevInfo:
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
        ancestors = set(self.api.history(path, commit, f"listing the history of {commit[:12]}"))
        below = [v for v, sha in tags.items() if sha in ancestors]
        return _version.sort_versions(below)[-1] if below else None

    def _resolve(self, path: str, version: str) -> Rev:
        """The commit (and its time) of ``version``: a version tag or a pseudo-version."""
        with self._lock:
            rev = self._revs.get((path, version))
        if rev is not None:
            return rev
        rid = repo_id(path)
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
            # The tag's revision is asked by name alongside the refs that say which commit
            # the tag names (one round trip, not two); a branch of the same name would answer
            # for another commit, and then the commit itself is asked.
            ahead = None
            if self._cached_tags(path) is None:
                self.http.expect(self.endpoint, 2)
                ahead = _in_thread(lambda: self.api.revision(path, version, version))
            sha = self._version_tags(path).get(version)
            if sha is None:
                raise NotFoundError(path, version, f"no tag {version} in {rid}")
            answer = None
            if ahead is not None:
                # a failed request is asked again in turn below, which reports its errors
                with contextlib.suppress(WgtpmError):
                    answer = ahead.result()
            if answer is not None and answer[0].commit == sha:
                rev = self._keep_tree(rid, *answer)
            else:
                rev = self._model_rev(path, rid, sha, version)
        with self._lock:
            self._revs[(path, version)] = rev
        return rev

    def _find_commit(self, path: str, version: str, short: str) -> str:
        """The full id of commit ``short`` from the history of the branches and tags."""
        rid = repo_id(path)
        refs = self.api.refs(path, "branches") + self.api.refs(path, "tags")
        for name, target in refs:
            for c in self.api.history(path, target, f"listing the history of {name}"):
                if c.startswith(short):
                    return c
        raise NotFoundError(path, version, f"no commit {short} in {rid}")

    # ---- files ------------------------------------------------------------------

    def _tree(self, path: str, version: str, commit: str) -> dict[str, HubFile]:
        rid = repo_id(path)
        with self._lock:
            tree = self._trees.get((rid, commit))
        if tree is None:  # a Hub whose revision answer had no file details
            tree = self.api.tree(path, version, commit)
            with self._lock:
                self._trees[(rid, commit)] = tree
        return tree

    def _download(
        self, path: str, version: str, commit: str, entry: HubFile, *, file: bool = False
    ) -> bytes:
        """The bytes of a file, checked against the LFS sha256 or the git blob id the API gave;
        ``file``: one of the module's files (not wgt.mod or the index), read at a download's
        pace rather than within the metadata deadline."""
        req = self.api.file_request(path, commit, entry.path)
        if entry.lfs_sha256 is not None:
            check = sha256_check(entry.size, entry.lfs_sha256)
            limit = entry.size
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
            file=file,
        )

    def known_files(self, path: str, version: str) -> list[_index.IndexEntry]:
        """The LFS files of a tree whose index is synthesised: the API states their size and
        sha256, so they may download while the small files are hashed for the index."""
        rev = self._resolve(path, version)
        tree = self._tree(path, version, rev.commit)
        if "wgt.index.json" in tree:
            return []  # the repository's own index, downloaded at once
        return _partition(tree)[0]

    def _synthesise(self, path: str, version: str, rev: Rev, tree: dict[str, HubFile]) -> bytes:
        entries, small, skipped = _partition(tree)
        rid = repo_id(path)

        def digest(f: HubFile) -> _index.IndexEntry:
            data = self._download(path, version, rev.commit, f, file=True)
            self._bodies.keep((rid, rev.commit, f.path), data)
            return _index.IndexEntry(f.path, len(data), hashlib.sha256(data).hexdigest())

        if small:
            jobs = min(self.jobs, len(small))
            with ThreadPoolExecutor(jobs) as pool:
                entries.extend(_map_ahead(pool, digest, small, jobs * AHEAD_PER_JOB))
        build: dict[str, Any] = {"synthesised": "hf.co tree"}
        if skipped:
            build["skipped"] = skipped
        return synthesise_index(
            path, version, entries, time=rfc3339(rev.time), commit=rev.commit, build=build
        )


# ---- the model card ------------------------------------------------------------------

#: The model card: the repository's README.md, whose YAML front matter the Hub indexes.
CARD = "README.md"
#: Bytes of a card read for its front matter: the metadata block sits at the top and is
#: short; a card is the publisher's file, so a header with no end is not read forever.
MAX_CARD_HEADER = 64 << 10


def card_license(card: bytes) -> str | None:
    """The ``license`` of a model card's YAML front matter, as written; ``None`` without one.

    Only what the Hub writes there is understood, with no YAML library::

        ---
        license: apache-2.0          -> "apache-2.0"
        license: "mit"               -> "mit"
        license:                     -> "mit AND cc-by-4.0" (a list: every license applies)
        - mit
        - cc-by-4.0
        ---

    The caller passes the bytes of a verified file (README.md is a file of
    the module, locked by h1), never an API's answer.
    """
    text = card[:MAX_CARD_HEADER].decode("utf-8", errors="replace").replace("\r\n", "\n")
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return None
    found: list[str] = []
    in_list = False  # reading the items of "license:"
    for line in lines[1:]:
        if line.strip() in ("---", "..."):
            return " AND ".join(v for v in found if v) or None
        item = line.strip()
        if in_list and item and (line[:1].isspace() or item.startswith("- ")):
            if item.startswith("- "):
                found.append(_yaml_scalar(item[2:]))
            continue
        in_list = False
        key, sep, value = line.partition(":")
        if sep and key == "license":  # a top-level key: no indentation
            found = [_yaml_scalar(value)]
            in_list = not found[0]
    return None  # no end of the front matter within the bytes read


def _yaml_scalar(text: str) -> str:
    """A one-line YAML scalar: quotes and a trailing ``# comment`` removed."""
    text = text.split(" #", 1)[0].strip()  # a license holds no " #"
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1].strip()
    return text


# ---- helpers -------------------------------------------------------------------


def from_host(http: HttpClient, meta: MetaCache) -> HuggingFaceSource:
    """The source :mod:`wgtpm.sources.hosts` makes for ``hf.co`` (the Hub's own client
    revalidates nothing through ``meta``)."""
    return HuggingFaceSource(http)


def _partition(
    tree: dict[str, HubFile],
) -> tuple[list[_index.IndexEntry], list[HubFile], list[str]]:
    """A tree's files as the synthesised index takes them: the entries of its LFS files
    (the size and sha256 the API states), the small files to download and hash, and the
    paths a module may not hold (left out, named under ``build.skipped``); each sorted."""
    entries: list[_index.IndexEntry] = []
    small: list[HubFile] = []
    skipped: list[str] = []
    for name in sorted(tree):
        f = tree[name]
        if _index.check_file_path(name) is not None:
            skipped.append(name)
        elif f.lfs_sha256 is not None and f.size is not None:
            entries.append(_index.IndexEntry(name, f.size, f.lfs_sha256))
        else:
            small.append(f)
    return entries, small, skipped


def _in_thread(fn: Callable[[], _R]) -> Future[_R]:
    """``fn()`` started on a daemon thread of its own (the process does not wait for it at
    exit, as it would for an executor's), its answer or error in the future returned."""
    fut: Future[_R] = Future()

    def run() -> None:
        try:
            fut.set_result(fn())
        except BaseException as exc:  # raised where the result is read
            fut.set_exception(exc)

    threading.Thread(target=run, name="wgtpm-hf-ahead", daemon=True).start()
    return fut


def _map_ahead(
    pool: ThreadPoolExecutor, fn: Callable[[_T], _R], items: Iterable[_T], ahead: int
) -> Iterator[_R]:
    """``pool.map(fn, items)`` with at most ``ahead`` calls submitted and not yet yielded.

    The first error is raised when its result's turn comes; the calls not started
    by then are cancelled.
    """
    pending: deque[Future[_R]] = deque()
    try:
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for fut in pending:
            fut.cancel()
