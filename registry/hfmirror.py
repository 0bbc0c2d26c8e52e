"""The Hugging Face Hub read API over ``hf.co/OWNER/REPO`` modules: ``HF_ENDPOINT=<registry>``.

``huggingface_hub`` and ``transformers`` read model repositories through these
routes (``REPO`` is ``OWNER/NAME``, ``REV`` a tag, a commit or a branch)::

    GET  /api/models/REPO[/revision/REV][?blobs=true][&expand=...]  info: sha, siblings
                                                                   (blobs: size, blobId, lfs)
    GET  /api/models/REPO/tree/REV[/DIR][?recursive=true]           files and folders
    POST /api/models/REPO/paths-info/REV   (form: paths=..&expand=) the entries of those paths
                                           (form or JSON: MAX_PATHS_INFO_BODY, 256 KiB)
    GET  /api/models/REPO/refs                                      branches and version tags
    HEAD /REPO/resolve/REV/PATH            X-Repo-Commit, ETag, X-Linked-Etag, X-Linked-Size
    GET  /REPO/resolve/REV/PATH            the bytes (Range works), from the blob store

Revisions resolve as ``wgtpm get`` resolves them: a version (``v0.1.0``)
is that version; a full commit already stored is its version (no upstream
call); anything else (a branch, a commit, another tag) is asked of the
upstream's Hugging Face source, which names a tagged version or a
pseudo-version. A proxied version that is not stored is *pending*
(:mod:`registry.ondemand`): its index is fetched and checked, its small
files (those that are not LFS) fetched, checked and stored, its wgt.sum
lines logged in the checksum log, and the metadata answered from the index;
each LFS file is fetched on its first request, checked against the index,
and stored; a large one (:data:`STREAM_MIN`) is streamed while it is
fetched, its last bytes held back until verified. Once every file is
stored, the version is committed. The commit the client sees is the
upstream commit the index records.

Files: every file of the index (a ``wgt.mod`` the index does not list, kept
for a repository that has none, is not one of them). A file is
reported as LFS, as the Hub does, when it is 10 MiB or more or its name
matches the Hub's default ``.gitattributes`` patterns: its ETag is its
sha256 and its ``blobId`` the git id of its LFS pointer; other files get
the git blob id of their bytes. Files are served directly, never
redirected.

Modules published here are served too (their ``main`` is the latest
version; a version without a recorded commit gets a stable made-up one).
With :attr:`~registry.hfpolicy.HfPolicy.offline`, or for hosted modules,
only stored versions resolve and a branch names the newest stored version.
Errors are ``{"error": message}`` with ``X-Error-Code`` (``RepoNotFound``,
``RevisionNotFound``, ``EntryNotFound``) and ``X-Error-Message``, which the
client turns into its exception classes and shows.
"""

from __future__ import annotations

import fnmatch
import hashlib
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from wgtpm import version as _v
from wgtpm._errors import WgtpmError
from wgtpm.index import parse as parse_index
from wgtpm.module import check_path_major

from . import body, limits
from . import tokens as _tokens
from ._errors import BadRequestError, NotFoundError, RegistryError
from .metadata import FileRecord, TokenRecord, VersionRecord
from .ondemand import OnDemand, Pending
from .protocol import IMMUTABLE, serve_bytes_of
from .service import MOD_FILE, Registry, latest_of

__all__ = ["CutShort", "HubEntry", "HubMirror", "HubRevision", "routes"]

#: Files this large are LFS files on the Hub whatever their name.
LFS_THRESHOLD = 10 << 20
#: The Hub's default ``.gitattributes`` LFS patterns (the ones model repositories use).
LFS_PATTERNS = (
    "*.7z", "*.arrow", "*.bin", "*.bz2", "*.ckpt", "*.ftz", "*.gguf", "*.gz", "*.h5",
    "*.joblib", "*.mlmodel", "*.model", "*.msgpack", "*.npy", "*.npz", "*.onnx", "*.ot",
    "*.parquet", "*.pb", "*.pickle", "*.pkl", "*.pt", "*.pth", "*.rar", "*.safetensors",
    "*.tar", "*.tflite", "*.tgz", "*.wasm", "*.xz", "*.zip", "*.zst", "*tfevents*", "*.paw",
)  # fmt: skip
_HEX = re.compile(r"[0-9a-f]{7,40}\Z")
_MAX_INDEX = 64 << 20
T = TypeVar("T")
log = logging.getLogger("registry.hfmirror")


class HubError(RegistryError):
    """A registry error with the ``X-Error-Code`` the Hub would send."""

    def __init__(self, exc: RegistryError, code: str | None) -> None:
        super().__init__(str(exc))
        self.status, self.code = exc.status, code


@dataclass(frozen=True)
class HubEntry:
    """One file as the Hub describes it."""

    path: str
    size: int
    sha256: str
    lfs: bool
    blob_id: str  # the git blob id (of the LFS pointer for LFS files)

    @property
    def etag(self) -> str:
        return self.sha256 if self.lfs else self.blob_id

    def tree_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "type": "file", "oid": self.blob_id, "size": self.size, "path": self.path,
        }  # fmt: skip
        if self.lfs:
            doc["lfs"] = {"oid": self.sha256, "size": self.size, "pointerSize": _pointer_size(self)}
        return doc

    def sibling_json(self, blobs: bool) -> dict[str, Any]:
        doc: dict[str, Any] = {"rfilename": self.path}
        if blobs:
            doc.update(size=self.size, blobId=self.blob_id)
            if self.lfs:
                doc["lfs"] = {
                    "size": self.size, "sha256": self.sha256, "pointerSize": _pointer_size(self),
                }  # fmt: skip
        return doc


@dataclass(frozen=True)
class HubRevision:
    """A revision resolved to a version: its commit and its files. ``pending`` is set for
    a proxied version whose files are still being fetched (:mod:`registry.ondemand`)."""

    repo_id: str
    version: VersionRecord
    commit: str
    files: dict[str, FileRecord]
    pending: Pending | None = None

    def stored(self, path: str) -> bool:
        """Whether ``path`` is in the blob store (always, once the version is committed)."""
        return self.pending is None or self.pending.has(path)


def _pointer(sha256: str, size: int) -> bytes:
    return (
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()
    )


def _pointer_size(e: HubEntry) -> int:
    return len(_pointer(e.sha256, e.size))


def git_blob_id(data: bytes) -> str:
    """The id git gives a blob: ``sha1("blob N\\0" + data)``."""
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def is_lfs(path: str, size: int) -> bool:
    name = path.rsplit("/", 1)[-1]
    return size >= LFS_THRESHOLD or any(fnmatch.fnmatchcase(name, p) for p in LFS_PATTERNS)


def _small(path: str, size: int) -> bool:
    """Whether a file is fetched when its version is indexed: the Hub lists no sha256 for
    it (wgtpm downloaded it to make the index), and a client asks for its bytes to know its
    git blob id (:meth:`HubMirror.entries`)."""
    return not is_lfs(path, size)


def commit_of(v: VersionRecord) -> str:
    """The upstream commit of ``v``; for a version without one, a stable 40-hex stand-in."""
    return v.commit or hashlib.sha1(f"{v.module}@{v.version} {v.h1}".encode()).hexdigest()


class HubMirror:
    """The Hub's view of the ``hf.co`` modules of one :class:`Registry`."""

    def __init__(self, reg: Registry) -> None:
        self.reg = reg
        self.ondemand = OnDemand(reg, _small) if reg.proxy is not None else None
        self._lock = threading.Lock()
        self._blob_ids: OrderedDict[str, str] = OrderedDict()  # sha256 -> git blob id
        self._listed: OrderedDict[str, bool] = OrderedDict()  # index sha256 -> lists wgt.mod

    # -- repositories and revisions

    def module(self, repo_id: str, token: TokenRecord | None) -> tuple[str, bool]:
        """The module of ``repo_id`` and whether it comes from the upstream (else stored only)."""
        module = f"hf.co/{repo_id}"
        policy = self.reg.hf_policy
        rec = self.reg.meta.get_module(module)
        mirrored = rec.proxied if rec is not None else self.reg.proxy is not None
        if mirrored and not policy.allows(repo_id):
            raise NotFoundError(
                f"{repo_id} is not mirrored by this registry: its --hf-allow list "
                f"({','.join(policy.allow)}) does not name it"
            )
        if rec is None and policy.offline:
            raise NotFoundError(
                f"{repo_id}: nothing of it is stored here, and this registry is offline "
                "(--offline serves only what is stored)"
            )
        return module, self.reg.readable(module, token)

    def revision(self, repo_id: str, rev: str, token: TokenRecord | None) -> HubRevision:
        """``rev`` of ``repo_id`` resolved to a stored (filled if need be) version."""
        module, upstream = self.module(repo_id, token)
        v = self._stored(module, rev, token, final=not upstream)
        if v is not None:
            return HubRevision(repo_id, v, commit_of(v), self._files(v))
        try:
            version = rev if _v.is_valid(rev) else self.reg.resolve(module, rev, token)[0].version
            if self.ondemand is None or not upstream:
                v = self.reg.version(module, version, token)
                return HubRevision(repo_id, v, commit_of(v), self._files(v))
            try:
                check_path_major(module, version)
            except WgtpmError as exc:
                raise NotFoundError(str(exc)) from exc
            got = self.ondemand.open(module, version)
        except NotFoundError as exc:  # the Hugging Face source says which of the two is missing
            raise HubError(exc, "RepoNotFound" if "no repository" in str(exc) else None) from exc
        if isinstance(got, VersionRecord):
            return HubRevision(repo_id, got, commit_of(got), self._files(got))
        return HubRevision(repo_id, got.record, commit_of(got.record), dict(got.files), got)

    def _stored(
        self, module: str, rev: str, token: TokenRecord | None, *, final: bool
    ) -> VersionRecord | None:
        """The stored version ``rev`` names without asking upstream; ``None`` when the
        upstream must say (unless ``final``: then not stored is not found)."""
        meta = self.reg.meta
        if _v.is_valid(rev):
            v = meta.get_version(module, rev)
        elif _HEX.match(rev) and (len(rev) == 40 or final):
            hits = [meta.get_version(module, x) for x in meta.list_versions(module)]
            found = [h for h in hits if h is not None and commit_of(h).startswith(rev)]
            tagged = [h for h in found if not _v.is_pseudo(h.version)]
            v = (tagged or found)[0] if found else None
        elif final:  # a branch: the newest stored version
            vs = meta.list_versions(module)
            v = meta.get_version(module, latest_of(vs)) if vs else None
        else:
            return None
        if v is None and final:
            why = "this registry is offline" if self.reg.hf_policy.offline else "it is hosted here"
            raise NotFoundError(
                f"{module}: no stored version for revision {rev!r} and {why}, so only "
                "stored versions are served"
            )
        if v is not None:
            self.reg.version(module, v.version, token)  # the read check of private modules
        return v

    # -- files

    def _files(self, v: VersionRecord) -> dict[str, FileRecord]:
        files = self.reg.meta.list_files(v.module, v.version)
        hide_mod = not self._lists_mod(v)
        return {f.path: f for f in files if not (f.path == MOD_FILE and hide_mod)}

    def entries(self, r: HubRevision, paths: list[str] | None = None) -> dict[str, HubEntry]:
        """The Hub's view of ``paths`` (all files when ``None``). The git blob id of a file
        that is not LFS needs its bytes: those not stored yet are fetched first, at once."""
        paths = sorted(r.files) if paths is None else [p for p in paths if p in r.files]
        if r.pending is not None:
            small = [p for p in paths if not r.stored(p) and not is_lfs(p, r.files[p].size)]
            for p in small:
                r.pending.fetch(p)
            for p in small:
                r.pending.wait(p)
        return {p: self._entry(r.files[p]) for p in paths}

    def entry(self, r: HubRevision, path: str) -> HubEntry:
        return self.entries(r, [path])[path]

    def _entry(self, f: FileRecord) -> HubEntry:
        if is_lfs(f.path, f.size):
            return HubEntry(f.path, f.size, f.sha256, True, git_blob_id(_pointer(f.sha256, f.size)))
        with self._lock:
            bid = self._blob_ids.get(f.sha256)
        if bid is None:
            bid = git_blob_id(self.reg.blobs.read(f.sha256, LFS_THRESHOLD))
            with self._lock:
                self._blob_ids[f.sha256] = bid
                while len(self._blob_ids) > 100_000:
                    self._blob_ids.popitem(last=False)
        return HubEntry(f.path, f.size, f.sha256, False, bid)

    def _lists_mod(self, v: VersionRecord) -> bool:
        """Whether the index of ``v`` lists its ``wgt.mod`` (a synthesised one does not)."""
        with self._lock:
            known = self._listed.get(v.index_sha256)
        if known is None:
            try:
                idx = parse_index(
                    self.reg.blobs.read(v.index_sha256, _MAX_INDEX), v.module, v.version
                )
                known = idx.entry(MOD_FILE) is not None
            except WgtpmError:
                known = True
            with self._lock:
                self._listed[v.index_sha256] = known
                while len(self._listed) > 4096:
                    self._listed.popitem(last=False)
        return known

    # -- documents

    def info(self, r: HubRevision, blobs: bool, expand: list[str]) -> dict[str, Any]:
        owner = r.repo_id.split("/")[0]
        time = r.version.time or r.version.created
        doc: dict[str, Any] = {
            "_id": hashlib.md5(r.repo_id.encode()).hexdigest()[:24],
            "id": r.repo_id,
            "modelId": r.repo_id,
            "author": owner,
            "sha": r.commit,
            "lastModified": time,
            "createdAt": time,
            "private": r.version.private,
            "disabled": False,
            "gated": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "siblings": (
                [e.sibling_json(True) for e in self.entries(r).values()]
                if blobs
                else [{"rfilename": p} for p in sorted(r.files)]
            ),
            "usedStorage": sum(f.size for f in r.files.values()),
            "cardData": {"wgtpm": {"version": r.version.version, "h1": r.version.h1}},
        }
        if expand:
            doc = {k: val for k, val in doc.items() if k in ("_id", "id", *expand)}
        return doc

    def tree(self, r: HubRevision, base: str, recursive: bool) -> list[dict[str, Any]]:
        base = base.strip("/")
        prefix = base + "/" if base else ""
        if base and base in r.files:
            return [self.entry(r, base).tree_json()]
        dirs: set[str] = set()
        files = []
        for path in sorted(r.files):
            if not path.startswith(prefix):
                continue
            parts = path[len(prefix) :].split("/")
            for i in range(1, len(parts)):
                if recursive or i == 1:
                    dirs.add(prefix + "/".join(parts[:i]))
            if recursive or len(parts) == 1:
                files.append(path)
        if base and not files and not dirs:
            raise HubError(NotFoundError(f"{base} does not exist at {r.commit}"), "EntryNotFound")
        entries = self.entries(r, files)
        return [_dir(r, d) for d in sorted(dirs)] + [entries[p].tree_json() for p in files]

    def paths_info(self, r: HubRevision, paths: list[str]) -> list[dict[str, Any]]:
        out = []
        entries = self.entries(r, [p.strip("/") for p in paths])
        for p in paths:
            p = p.strip("/")
            if p in entries:
                out.append(entries[p].tree_json())
            elif any(f.startswith(p + "/") for f in r.files):
                out.append(_dir(r, p))
        return out

    def refs(self, repo_id: str, token: TokenRecord | None) -> dict[str, Any]:
        module, upstream = self.module(repo_id, token)
        vs = self.reg.versions(module, token) if upstream else self.reg.meta.list_versions(module)
        tags = []
        for v in _v.sort_versions([v for v in vs if not _v.is_pseudo(v)]):
            rec = self.reg.meta.get_version(module, v)
            commit = commit_of(rec) if rec else self.reg.resolve(module, v, token)[0].commit
            if commit:
                tags.append({"name": v, "ref": f"refs/tags/{v}", "targetCommit": commit})
        if upstream:  # what main is now, without fetching it
            main: str | None = self.reg.resolve(module, "main", token)[0].commit
        else:
            head = self._stored(module, "main", token, final=True)
            main = commit_of(head) if head is not None else None
        branches = (
            [{"name": "main", "ref": "refs/heads/main", "targetCommit": main}] if main else []
        )
        return {
            "branches": branches,
            "converts": [],
            "tags": tags,
        }


def _dir(r: HubRevision, d: str) -> dict[str, Any]:
    oid = hashlib.sha1(f"tree {r.commit} {d}".encode()).hexdigest()
    return {"type": "directory", "oid": oid, "size": 0, "path": d}


# -- HTTP

#: What may not stand in a header value as it is: control characters (CR, LF and NUL
#: would end or break the header; uvicorn refuses them and aborts the response), DEL,
#: ``%`` (so that the escape is undone unambiguously) and anything not ASCII.
_UNSAFE_IN_HEADER = re.compile(r"[^\x20-\x24\x26-\x7e]")
MAX_HEADER_TEXT = 1000  # characters of an error message put in X-Error-Message


def header_text(message: str, limit: int = MAX_HEADER_TEXT) -> str:
    """``message`` as a header value: percent-escaped (UTF-8) where a character is not
    printable ASCII, and cut to ``limit`` characters: ``a<CR><LF>é`` -> ``a%0D%0A%C3%A9``.
    An error message may hold a path or a repository name as the client sent it."""
    escaped = _UNSAFE_IN_HEADER.sub(
        lambda m: "".join(f"%{b:02X}" for b in m.group().encode("utf-8", "replace")),
        message[: limit * 4],
    )
    out = escaped[:limit]
    partial = out.rfind("%", len(out) - 2)
    if len(escaped) > limit and partial >= 0:  # not half an escape
        out = out[:partial]
    return out.rstrip()


def _error(exc: RegistryError, code: str | None) -> Response:
    msg = str(exc)
    headers = {"X-Error-Message": header_text(msg)}
    code = getattr(exc, "code", None) or code
    if code and exc.status == 404:
        headers["X-Error-Code"] = code
    return JSONResponse({"error": msg}, status_code=exc.status, headers=headers)


async def _call(code: str | None, fn: Callable[[], T]) -> T | Response:
    try:
        return await run_in_threadpool(fn)
    except RegistryError as exc:
        return _error(exc, code)


async def _token(request: Request) -> TokenRecord | Response | None:
    """The registry's own token in ``Authorization``; a Hugging Face token (which the
    client sends from ``HF_TOKEN``) is not one and counts as none."""
    reg: Registry = request.app.state.registry
    cred = _tokens.parse_authorization(request.headers.get("authorization"))
    if cred is None or not cred.id:
        return None
    return await _call(None, lambda: reg.authenticate(cred))


def _mirror(request: Request) -> HubMirror:
    m = getattr(request.app.state, "hub_mirror", None)
    if m is None:
        m = request.app.state.hub_mirror = HubMirror(request.app.state.registry)
    assert isinstance(m, HubMirror)
    return m


def _repo_id(request: Request) -> str:
    return f"{request.path_params['owner']}/{request.path_params['repo']}"


async def _revision(request: Request, rev: str) -> HubRevision | Response:
    token = await _token(request)
    if isinstance(token, Response):
        return token
    m, repo_id = _mirror(request), _repo_id(request)
    try:
        await run_in_threadpool(m.module, repo_id, token)
    except RegistryError as exc:
        return _error(exc, "RepoNotFound")
    return await _call("RevisionNotFound", lambda: m.revision(repo_id, rev, token))


async def _info(request: Request) -> Response:
    r = await _revision(request, request.path_params.get("rev", "main"))
    if isinstance(r, Response):
        return r
    q = request.query_params
    blobs = q.get("blobs", "").lower() in ("1", "true") or "siblings" in q.getlist("expand")
    return JSONResponse(_mirror(request).info(r, blobs, q.getlist("expand")))


async def _tree(request: Request) -> Response:
    r = await _revision(request, request.path_params["rev"])
    if isinstance(r, Response):
        return r
    recursive = request.query_params.get("recursive", "").lower() in ("1", "true")
    try:
        entries = _mirror(request).tree(r, request.path_params.get("path", ""), recursive)
    except RegistryError as exc:
        return _error(exc, "EntryNotFound")
    return JSONResponse(entries)


async def _paths_info(request: Request) -> Response:
    r = await _revision(request, request.path_params["rev"])
    if isinstance(r, Response):
        return r
    try:
        paths = await _paths_asked(request)
    except RegistryError as exc:
        return _error(exc, None)
    return JSONResponse(_mirror(request).paths_info(r, paths))


async def _paths_asked(request: Request) -> list[str]:
    """The ``paths`` of a paths-info body: a form (as huggingface_hub sends it), or a JSON
    object whose ``paths`` is a string or a list of strings; at most
    :data:`~registry.limits.MAX_PATHS_INFO_BODY` bytes (413), else a 400 saying what is wrong."""
    cap = limits.MAX_PATHS_INFO_BODY
    if not request.headers.get("content-type", "").startswith("application/json"):
        form = await body.form_fields(request, cap, "the paths-info form")
        return form.get("paths", [])
    doc = await body.json_object(request, cap, "the paths-info body")
    paths = doc.get("paths", [])
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise BadRequestError("'paths' in the paths-info body must be a list of strings")
    return paths


async def _refs(request: Request) -> Response:
    token = await _token(request)
    if isinstance(token, Response):
        return token
    m, repo_id = _mirror(request), _repo_id(request)
    out = await _call("RepoNotFound", lambda: m.refs(repo_id, token))
    return out if isinstance(out, Response) else JSONResponse(out)


async def _resolve(request: Request) -> Response:
    path = request.path_params["path"]
    if "/@v/" in f"/{path}" or path.endswith("@latest"):  # a proxy-protocol URL after all
        from .app import _protocol

        request.scope["path_params"] = {"path": request.url.path.lstrip("/")}
        return await _protocol(request)
    r = await _revision(request, request.path_params["rev"])
    if isinstance(r, Response):
        return r
    if path not in r.files:
        msg = f"{path} does not exist at {r.commit} ({r.version.module}@{r.version.version})"
        resp = _error(NotFoundError(msg), "EntryNotFound")
        resp.headers["X-Repo-Commit"] = r.commit
        return resp
    f = r.files[path]
    if r.pending is not None and not r.stored(path):
        if _streams(request, f) and r.pending.streamable(path):
            resp = _stream(r, f)
        elif request.method == "HEAD" and is_lfs(f.path, f.size):  # the index says it all
            e = HubEntry(f.path, f.size, f.sha256, True, "")
            resp = Response(status_code=200, headers=_file_headers(e, f.size, r.version.private))
        else:  # wait for it, then serve it as a stored file
            pending = r.pending
            out = await _call(None, lambda: pending.wait(path))
            if isinstance(out, Response):
                return out
            resp = await _serve_stored(request, r, path)
    else:
        resp = await _serve_stored(request, r, path)
    resp.headers["X-Repo-Commit"] = r.commit
    return resp


#: An LFS file this large that is not stored yet is streamed while it is fetched. Smaller
#: ones, ranges, and files that are not LFS (their ETag is the git blob id, known only
#: once all their bytes are) are fetched first: a failure is then a plain 502 with its reason.
STREAM_MIN = 4 << 20


def _streams(request: Request, f: FileRecord) -> bool:
    return (
        request.method == "GET"
        and "range" not in request.headers
        and f.size >= STREAM_MIN
        and is_lfs(f.path, f.size)
    )


class CutShort(Exception):
    """Raised out of a streamed body whose bytes turned out wrong: the only way an ASGI
    app has to make the server drop the connection before the ``Content-Length`` is met.
    The reason is logged once, before; the server's log of the exception is dropped
    (:func:`_not_cut_short`), so that an upstream's bad bytes are one line, not a traceback.
    """


def _not_cut_short(record: logging.LogRecord) -> bool:
    """A filter of uvicorn's error log: ``False`` for its report of a :class:`CutShort`."""
    return not (record.exc_info and isinstance(record.exc_info[1], CutShort))


def _file_headers(e: HubEntry, size: int, private: bool) -> dict[str, str]:
    headers = {
        "ETag": f'"{e.etag}"',
        "Cache-Control": ("private, " if private else "public, ") + IMMUTABLE,
        "Accept-Ranges": "bytes",
        "Content-Length": str(size),
        "Content-Type": "application/octet-stream",
    }
    if e.lfs:
        headers["X-Linked-Etag"] = f'"{e.sha256}"'
        headers["X-Linked-Size"] = str(e.size)
    return headers


def _stream(r: HubRevision, f: FileRecord) -> Response:
    """The file while it is fetched (:meth:`registry.ondemand.Pending.stream`): the last
    bytes only once verified, else the response is cut short."""
    pending = r.pending
    assert pending is not None

    def body() -> Iterator[bytes]:
        try:
            yield from pending.stream(f.path)
        except RegistryError as exc:  # the status is sent: all that is left is to cut it short
            log.warning("cut short %s of %s: %s", f.path, pending.what, exc)
            raise CutShort(str(exc)) from None

    e = HubEntry(f.path, f.size, f.sha256, True, "")
    return StreamingResponse(body(), headers=_file_headers(e, f.size, r.version.private))


async def _serve_stored(request: Request, r: HubRevision, path: str) -> Response:
    m = _mirror(request)
    e = await _call(None, lambda: m.entry(r, path))
    if isinstance(e, Response):
        return e
    resp = await serve_bytes_of(
        request,
        request.app.state.registry,
        e.sha256,
        e.size,
        "application/octet-stream",
        r.version.private,
        etag=e.etag,
    )
    if e.lfs:
        resp.headers["X-Linked-Etag"] = f'"{e.sha256}"'
        resp.headers["X-Linked-Size"] = str(e.size)
    return resp


def routes() -> list[BaseRoute]:
    """The Hub routes; mounted before the proxy protocol's catch-all. Also keeps uvicorn
    from logging a traceback for a body cut short (:class:`CutShort`)."""
    logging.getLogger("uvicorn.error").addFilter(_not_cut_short)  # once: the same function
    m = "/api/models/{owner}/{repo}"
    return [
        Route(m, _info, methods=["GET"]),
        Route(m + "/revision/{rev}", _info, methods=["GET"]),
        Route(m + "/refs", _refs, methods=["GET"]),
        Route(m + "/tree/{rev}", _tree, methods=["GET"]),
        Route(m + "/tree/{rev}/{path:path}", _tree, methods=["GET"]),
        Route(m + "/paths-info/{rev}", _paths_info, methods=["POST"]),
        Route("/{owner}/{repo}/resolve/{rev}/{path:path}", _resolve, methods=["GET", "HEAD"]),
    ]
