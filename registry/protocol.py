"""The proxy protocol (docs/design.md section 7) over the modules the registry hosts.

Plain GETs (and HEADs), ``$module`` escaped as Go escapes module paths
(``!`` + lower case for a capital), ``$version`` a full version::

    /$module/@v/list                 release versions, one per line (no pseudo-versions)
    /$module/@v/$version.info        {"Version", "Time", "Commit"}
    /$module/@v/$version.mod         wgt.mod
    /$module/@v/$version.index.json  the index, byte for byte as published
    /$module/@v/$version/$path       a file of the release
    /$module/@v/$version.slsa.json   its SLSA provenance statement (404 when none; not in h1)
    /$module/@v/$version.sig         its signature, a model-signing bundle (404 when none)
    /$module/@v/$version.tensors.json  tensor tables computed and logged here, for a release
                                     that locks none (:mod:`registry.tensortables`; not in h1)
    /$module/@latest                 the .info of the highest release

Statuses: 200 (206 for a satisfiable ``Range``, 304 for a matching
``If-None-Match``, 416 for an unsatisfiable range); 404 for a module or
version that is not here (or private and no read token was sent: both look
alike so private names do not leak); 410 for what can never be here: a
malformed module path or version, or a file a committed version does not
list (versions never change); 502 when the caching proxy's upstream fails
(:mod:`registry.proxy`). Version content (``.info``, ``.mod``,
``.index.json``, files) carries ``ETag`` (its sha256; for ``.info`` the
sha256 of the document) and ``Cache-Control: public, max-age=31536000,
immutable`` (``private`` for a private module); ``list`` and ``@latest``
are ``no-cache`` with an ``ETag`` for revalidation.

A 200 for a public module's version content is remembered in the app's
:class:`~registry.fastpath.ProtocolCache` (and a public hosted module's list and @latest
path), which :class:`~registry.fastpath.FastPath` then answers without this
module; the headers it sends are the ones built here.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from wgtpm._errors import WgtpmError
from wgtpm.module import unescape_path

from ._errors import BlobNotFoundError, GoneError, StoreError
from .fastpath import MAX_BLOB, Answer, ProtocolCache, matches
from .metadata import FileRecord, TokenRecord, VersionRecord
from .service import Registry

__all__ = ["ProtocolRequest", "parse_request_path", "serve_protocol"]

log = logging.getLogger("registry.protocol")

IMMUTABLE = "max-age=31536000, immutable"
#: Bodies up to this size are read whole in one worker-thread call and sent in one piece;
#: larger ones stream (a thread hop per chunk costs more than the copy for small files).
WHOLE_BODY = 4 << 20
_RANGE = re.compile(r"bytes=(\d*)-(\d*)\Z")
#: Significant digits of a ``Range`` position read as a number: more name no byte of any
#: blob (2**63 has 19). Python refuses to read over 4,300 digits as an int (ValueError).
MAX_RANGE_DIGITS = 19
_KINDS = (
    (".info", "info"),
    (".mod", "mod"),
    (".index.json", "index"),
    (".slsa.json", "attestation"),
    (".sig", "signature"),
    (".tensors.json", "tensors"),
)


@dataclass(frozen=True)
class ProtocolRequest:
    """What a protocol URL asks for: ``kind`` is list, latest, info, mod, index, attestation,
    signature, tensors or file."""

    module: str
    kind: str
    version: str = ""
    path: str = ""


def _unescape_version(s: str) -> str:
    out, bang = [], False
    for ch in s:
        if bang:
            if not "a" <= ch <= "z":
                raise GoneError(f"malformed escaped version {s!r}")
            out.append(ch.upper())
            bang = False
        elif ch == "!":
            bang = True
        elif "A" <= ch <= "Z":
            raise GoneError(f"escaped version {s!r} holds an upper-case letter")
        else:
            out.append(ch)
    if bang or not out:
        raise GoneError(f"malformed escaped version {s!r}")
    return "".join(out)


def parse_request_path(path: str) -> ProtocolRequest | None:
    """Read a (percent-decoded) request path; ``None`` when it is no protocol URL.

    >>> parse_request_path("/example.com/!acme/m/@v/v1.0.0/w/x.bin")
    ProtocolRequest(module='example.com/Acme/m', kind='file', version='v1.0.0', path='w/x.bin')

    Raises :class:`GoneError` for a malformed module path or version.
    """
    path = path.lstrip("/")
    if path.endswith("/@latest"):
        return ProtocolRequest(_module(path[: -len("/@latest")]), "latest")
    esc, sep, rest = path.partition("/@v/")
    if not sep or not rest:
        return None
    module = _module(esc)
    if rest == "list":
        return ProtocolRequest(module, "list")
    if "/" in rest:
        v, _, name = rest.partition("/")
        if not name:
            return None
        return ProtocolRequest(module, "file", _unescape_version(v), name)
    for suffix, kind in _KINDS:
        if rest.endswith(suffix) and len(rest) > len(suffix):
            return ProtocolRequest(module, kind, _unescape_version(rest[: -len(suffix)]))
    return None


def _module(escaped: str) -> str:
    try:
        return unescape_path(escaped)
    except WgtpmError as exc:
        raise GoneError(str(exc)) from exc


def _etag(sha256: str) -> str:
    return f'"{sha256}"'


def _not_modified(request: Request, etag: str) -> bool:
    return matches(request.headers.get("if-none-match"), etag)


def _blob_headers(etag: str, private: bool) -> dict[str, str]:
    return {
        "ETag": etag,
        "Cache-Control": ("private, " if private else "public, ") + IMMUTABLE,
        "Accept-Ranges": "bytes",
    }


def _position(digits: str) -> int:
    """A ``Range`` byte position; one past any blob when it has over :data:`MAX_RANGE_DIGITS`
    significant digits (``bytes=`` followed by 5,000 zeros and ``-1`` is ``bytes=0-1``)."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= MAX_RANGE_DIGITS else 1 << 63


def _range(header: str | None, size: int) -> tuple[int, int] | bool | None:
    """(start, end exclusive) of a single ``bytes=`` range; ``None`` to send it all; ``False``
    when it cannot be satisfied."""
    if not header:
        return None
    m = _RANGE.match(header.strip())
    if not m or (not m.group(1) and not m.group(2)):
        return None  # several ranges or another unit: ignoring Range is allowed (RFC 9110 14.2)
    a, b = m.group(1), m.group(2)
    if not a:  # the last N bytes
        n = _position(b)
        return (max(0, size - n), size) if n > 0 and size > 0 else False
    start = _position(a)
    end = size if not b else min(_position(b) + 1, size)
    if start >= size or (b and _position(b) < start):
        return False
    return start, end


async def serve_bytes_of(
    request: Request,
    reg: Registry,
    sha256: str,
    size: int,
    content_type: str,
    private: bool,
    *,
    etag: str | None = None,
    whole: bytes | None = None,
) -> Response:
    """Serve blob ``sha256`` (``size`` bytes) with ETag (``etag``, else the sha256), Range
    and immutable caching; ``whole`` is the blob's bytes when the caller read them already."""
    etag = _etag(etag or sha256)
    headers = _blob_headers(etag, private)
    if _not_modified(request, etag):
        return Response(status_code=304, headers=headers)
    rng = _range(request.headers.get("range"), size)
    if_range = request.headers.get("if-range")
    if rng is not None and if_range is not None and if_range.strip() != etag:
        rng = None  # the client's partial copy is of other bytes: send them all
    if rng is False:
        headers["Content-Range"] = f"bytes */{size}"
        return Response(status_code=416, headers=headers)
    status, start, end = 200, 0, size
    if isinstance(rng, tuple):
        status, (start, end) = 206, rng
        headers["Content-Range"] = f"bytes {start}-{end - 1}/{size}"
    headers["Content-Length"] = str(end - start)
    if request.method == "HEAD":
        return Response(status_code=status, headers=headers, media_type=content_type)
    if whole is not None:
        return Response(
            whole[start:end], status_code=status, headers=headers, media_type=content_type
        )
    try:
        if end - start <= WHOLE_BODY:
            body = await run_in_threadpool(_read_whole, reg, sha256, start, end - start)
            return Response(body, status_code=status, headers=headers, media_type=content_type)
        chunks: Iterator[bytes] = await run_in_threadpool(reg.blobs.get, sha256, start, end - start)
    except BlobNotFoundError as exc:  # listed by a committed version: the store lost it
        raise StoreError(f"blob {sha256} is missing from {reg.blobs.url}") from exc
    return StreamingResponse(chunks, status_code=status, headers=headers, media_type=content_type)


def _conditional(request: Request) -> bool:
    """Whether the answer may be a 304 (no body to read)."""
    return request.headers.get("if-none-match") is not None


def _read_whole(reg: Registry, sha256: str, start: int, length: int) -> bytes:
    body = b"".join(reg.blobs.get(sha256, start, length))
    if len(body) != length:  # the stored blob is shorter than its record says
        raise StoreError(f"blob {sha256} in {reg.blobs.url} is not {length} bytes from {start}")
    return body


def _text(request: Request, body: bytes, content_type: str, cache: str) -> Response:
    etag = _etag(hashlib.sha256(body).hexdigest())
    headers = {"ETag": etag, "Cache-Control": cache}
    if _not_modified(request, etag):
        return Response(status_code=304, headers=headers)
    if request.method == "HEAD":
        headers["Content-Length"] = str(len(body))
        return Response(status_code=200, headers=headers, media_type=content_type)
    return Response(body, headers=headers, media_type=content_type)


def _cache_of(request: Request) -> ProtocolCache | None:
    """The app's fast-path cache, when there is one and the request path is its key."""
    cache = getattr(request.app.state, "protocol_cache", None)
    return None if request.scope.get("root_path") else cache


def _remember_blob(
    request: Request, sha256: str, size: int, content_type: str, whole: bytes | None = None
) -> None:
    """Let the fast path answer this URL: a public module's committed content."""
    cache = _cache_of(request)
    if cache is None or size > WHOLE_BODY:
        return
    headers = {**_blob_headers(_etag(sha256), False), "Content-Length": str(size)}
    cache.remember(
        request.scope["path"], Answer.of(headers, content_type, sha256=sha256, size=size)
    )
    # Memory keeps only bytes checked against their address, as FastPath's own reads are:
    # a blob changed on disk must not be served from memory after the disk is repaired.
    if whole is not None and len(whole) <= MAX_BLOB:
        if hashlib.sha256(whole).hexdigest() == sha256:
            cache.keep_blob(sha256, whole)
        else:
            log.error("blob %s does not hold its bytes (changed on disk?); not kept", sha256)


async def _remember_moving(request: Request, reg: Registry, req: ProtocolRequest) -> None:
    """Let the fast path answer this ``@v/list`` or ``@latest`` from memory while nothing is
    committed (:class:`~registry.fastpath.FastPath`): only for a module hosted here and
    public (never a private one, never the caching proxy's, whose upstream moves)."""
    pc = _cache_of(request)
    if pc is None or request.scope["path"] in pc.lists:
        return
    rec = await run_in_threadpool(reg.meta.get_module, req.module)
    if rec is not None and not rec.private and not reg.proxied(req.module, rec):
        pc.remember_list(request.scope["path"], req.module, req.kind)


async def serve_protocol(
    request: Request, reg: Registry, req: ProtocolRequest, token: TokenRecord | None
) -> Response:
    """Answer one protocol request; errors are raised as :mod:`registry._errors`."""
    if req.kind == "list":
        vs = await run_in_threadpool(reg.versions, req.module, token)
        await _remember_moving(request, reg, req)
        return _text(request, "".join(v + "\n" for v in vs).encode(), "text/plain", "no-cache")
    if req.kind == "latest":
        rev, _ = await run_in_threadpool(reg.resolve, req.module, "latest", token)
        await _remember_moving(request, reg, req)
        return _text(request, reg.info(rev), "application/json", "no-cache")
    if req.kind == "info":
        rev, private = await run_in_threadpool(reg.resolve, req.module, req.version, token)
        cache = ("private, " if private else "public, ") + IMMUTABLE
        body = reg.info(rev)
        if rev.version != req.version:  # a branch or a commit: it moves
            cache = "no-cache"
        elif not private and (pc := _cache_of(request)) is not None:
            # only a version committed here: a proxied module's .info may be the upstream's
            here = await run_in_threadpool(reg.meta.get_version, req.module, req.version)
            if here is not None and not here.private and reg.info(here) == body:
                headers = {
                    "ETag": _etag(hashlib.sha256(body).hexdigest()),
                    "Cache-Control": cache,
                    "Content-Length": str(len(body)),
                }
                answer = Answer.of(headers, "application/json", body=body)
                pc.remember(request.scope["path"], answer)
        return _text(request, body, "application/json", cache)
    if req.kind == "file":

        def lookup() -> tuple[VersionRecord, FileRecord, bytes | None]:
            # one worker-thread call for the records and a small body: each hop costs more
            # than the copy, and many threads taking turns at the GIL cost more still
            v, f = reg.file(req.module, req.version, req.path, token)
            whole = None
            if request.method == "GET" and f.size <= WHOLE_BODY and not _conditional(request):
                try:
                    whole = _read_whole(reg, f.sha256, 0, f.size)
                except BlobNotFoundError as exc:
                    raise StoreError(f"blob {f.sha256} is missing from {reg.blobs.url}") from exc
            return v, f, whole

        v, f, whole = await run_in_threadpool(lookup)
        if not v.private:
            _remember_blob(request, f.sha256, f.size, "application/octet-stream", whole)
        return await serve_bytes_of(
            request, reg, f.sha256, f.size, "application/octet-stream", v.private, whole=whole
        )
    if req.kind == "signature":
        v, sha = await run_in_threadpool(reg.signature, req.module, req.version, token)
        size = await run_in_threadpool(reg.blobs.size, sha)
        if size is None:
            raise StoreError(f"{v.module}@{v.version}: the signature blob {sha} is missing")
        return await serve_bytes_of(request, reg, sha, size, "application/json", v.private)
    if req.kind == "tensors":
        from .tensortables import tables_of

        v, sha, n = await run_in_threadpool(tables_of, reg, req.module, req.version, token)
        return await serve_bytes_of(request, reg, sha, n, "application/json", v.private)
    if req.kind == "attestation":
        v, sha = await run_in_threadpool(reg.attestation, req.module, req.version, token)
        size = await run_in_threadpool(reg.blobs.size, sha)
        if size is None:
            raise StoreError(f"{v.module}@{v.version}: the SLSA statement blob {sha} is missing")
        return await serve_bytes_of(request, reg, sha, size, "application/json", v.private)
    v = await run_in_threadpool(reg.version, req.module, req.version, token)
    if req.kind == "mod":
        m = await run_in_threadpool(reg.mod_entry, v)
        if not v.private:
            _remember_blob(request, m.sha256, m.size, "text/plain; charset=utf-8")
        return await serve_bytes_of(
            request, reg, m.sha256, m.size, "text/plain; charset=utf-8", v.private
        )
    size = await run_in_threadpool(reg.blobs.size, v.index_sha256)
    if size is None:
        raise StoreError(f"{v.module}@{v.version}: the index blob {v.index_sha256} is missing")
    if not v.private:
        _remember_blob(request, v.index_sha256, size, "application/json")
    return await serve_bytes_of(request, reg, v.index_sha256, size, "application/json", v.private)
