"""One tensor of a remote weights file, by HTTP range, verified before anyone sees a byte.

Where a release's tensor tables are locked by h1 (its index lists
``wgt.tensors.json``, whose bytes the fetcher checked against the index like any
file), the table gives each tensor's byte range ``[start, end)`` and sha256. Then
:func:`fetch_tensor` asks the file's source for exactly that range
(``Range: bytes=start-(end-1)``, through :meth:`Source.file` and wgtpm's
:class:`~wgtpm.httpclient.HttpClient`, so credentials go to their own origin only
and a redirect to a CDN carries ``Range`` but no ``Authorization``), hashes the
bytes as they come and compares them with the table's sha256:

- a ``206`` whose ``Content-Range`` is not the range asked for, or a body longer
  or shorter than the range, is refused (:class:`~wgtpm.FetchError`);
- a ``200`` (the server ignores Range) is read and cut only for a file of at most
  :data:`MAX_IGNORED_RANGE` bytes; a larger file is fetched whole through the
  normal, verified download (:meth:`wgtpm.modfetch.Fetcher.download`) and the
  tensor read from it;
- bytes whose sha256 is not the table's raise
  :class:`~wgtpm.ChecksumMismatchError` naming module@version, file and tensor:
  nothing is returned and nothing is kept.

Verified tensor bytes are kept by content, written atomically (never an
unverified byte under a final name) and re-hashed whenever they are read::

    $WGTPM_CACHE/tensors/blobs/<sha256[:2]>/<tensor sha256>

(``wgtpm cache clean`` removes them with the tables.) The safetensors header is
not fetched: the locked table already says where each tensor lies.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from ._errors import ChecksumMismatchError, FetchError, NotFoundError, WgtpmError

if TYPE_CHECKING:
    from .cache import Cache
    from .modfetch import Fetcher
    from .sources import FileRequest
    from .tensors import FileTable, TensorInfo

__all__ = ["MAX_IGNORED_RANGE", "cached_tensor", "fetch_tensor", "tensor_blob_path"]

#: A server that answers a range request with the whole file (200) is read and cut
#: only when the file is this small: past it, reading the whole body to keep a slice
#: is the download the range was meant to spare, so the file is fetched (and kept)
#: whole by the normal verified download instead.
MAX_IGNORED_RANGE = 16 << 20
#: Tries of one range (a cut connection, a 5xx after the body started).
RANGE_TRIES = 3


class _NoRange(WgtpmError):
    """The server answers the whole file (200) to a range request, and the file is large."""


def tensor_blob_path(cache: Cache, sha256: str) -> Path:
    """Where the verified bytes of the tensor with content ``sha256`` are kept."""
    return cache.root / "tensors" / "blobs" / sha256[:2] / sha256


def _label(module: str, version: str) -> str:
    return f"{module}@{version}" if version else module


def _mismatch(
    module: str, version: str, file: str, info: TensorInfo, got: str, got_from: str
) -> ChecksumMismatchError:
    return ChecksumMismatchError(
        module,
        version,
        f"tensor {info.name} of {file} (bytes {info.start}..{info.end})",
        info.sha256,
        got,
        got_from=got_from,
    )


def cached_tensor(
    cache: Cache, module: str, version: str, file: str, info: TensorInfo
) -> bytes | None:
    """The kept bytes of ``info``, re-hashed (``None`` when none are kept); a changed copy
    raises :class:`~wgtpm.ChecksumMismatchError` (``got_from="cached"``)."""
    try:
        data = tensor_blob_path(cache, info.sha256).read_bytes()
    except FileNotFoundError:
        return None
    got = hashlib.sha256(data).hexdigest()
    if got != info.sha256 or len(data) != info.nbytes:
        raise _mismatch(module, version, file, info, got, "cached")
    return data


def fetch_tensor(
    fetcher: Fetcher, module: str, version: str, table: FileTable, info: TensorInfo
) -> bytes:
    """The verified bytes of tensor ``info`` of ``table``'s file of ``module@version``: from
    the cache, else by range from the source (see the module docstring), then kept.

    ``table`` must come from the release's h1-locked ``wgt.tensors.json``
    (:func:`wgtpm.tensors.tables_for` over the verified index): it is what the bytes
    are checked against.
    """
    cache = fetcher.cache
    kept = cached_tensor(cache, module, version, table.path, info)
    if kept is not None:
        return kept
    req = fetcher.source.file(module, version, table.path)
    try:
        data = _range_of(fetcher, req, module, version, table, info)
    except _NoRange:
        from .tensors import read_tensor_bytes

        tree = fetcher.download(module, version, [table.path])  # verified against the index
        return read_tensor_bytes(
            tree / table.path, info, module=module, version=version, file=table.path
        )
    got = hashlib.sha256(data).hexdigest()
    if got != info.sha256 or len(data) != info.nbytes:
        raise _mismatch(module, version, table.path, info, got, "downloaded")
    _keep(cache, info.sha256, data)
    return data


def _keep(cache: Cache, sha256: str, data: bytes) -> None:
    """Write verified bytes under their content address (atomically; best effort)."""
    from ._errors import CacheError
    from ._fs import write_atomic

    dst = tensor_blob_path(cache, sha256)
    try:
        with cache.using():  # shared: 'wgtpm cache clean' waits for it
            dst.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(dst, data, mode=0o444)
    except (OSError, CacheError):
        pass  # a cache that cannot be written: the bytes are still verified


def _range_of(
    fetcher: Fetcher,
    req: FileRequest,
    module: str,
    version: str,
    table: FileTable,
    info: TensorInfo,
) -> bytes:
    """The bytes ``[info.start, info.end)`` of the file ``req`` points at (unverified)."""
    if info.end <= info.start:
        return b""
    if req.body is not None:  # the source holds the file's bytes already (small HF files)
        return req.body[info.start : info.end]
    if req.url.startswith("file:"):
        src = Path(unquote(urlsplit(req.url).path))
        try:
            with open(src, "rb") as f:
                f.seek(info.start)
                return f.read(info.nbytes)
        except FileNotFoundError as exc:
            raise NotFoundError(
                module, version, f"{table.path}: not in the file tree ({src})"
            ) from exc
    last: Exception | None = None
    for _ in range(RANGE_TRIES):
        try:
            return _http_range(fetcher, req, module, version, table, info)
        except _Cut as exc:
            last = exc
    raise FetchError(
        module,
        version,
        f"{table.path}: tensor {info.name}: {last} (gave up after {RANGE_TRIES} tries)",
    )


class _Cut(WgtpmError):
    """A range that stopped short; asked again."""


def _http_range(
    fetcher: Fetcher,
    req: FileRequest,
    module: str,
    version: str,
    table: FileTable,
    info: TensorInfo,
) -> bytes:
    from .httpclient import HTTPStatusError, network_errors

    want = info.nbytes
    # identity encoding: the range is about the stored bytes, as the sha256 is
    hdrs = {
        **dict(req.headers),
        "Accept-Encoding": "identity",
        "Range": f"bytes={info.start}-{info.end - 1}",
    }
    where = f"{table.path}: tensor {info.name}"
    try:
        with fetcher.http().stream(req.url, headers=hdrs) as resp:
            if resp.status_code == 200:
                if table.size > MAX_IGNORED_RANGE:
                    raise _NoRange(f"{where}: the server ignores Range")
                return _read_upto(resp, info.end)[info.start :]
            expect = f"bytes {info.start}-{info.end - 1}/"
            got = resp.headers.get("content-range", "")
            if not got.startswith(expect) or got[len(expect) :] not in (str(table.size), "*"):
                raise FetchError(
                    module,
                    version,
                    f"{where}: asked for {expect}{table.size}, the server answered "
                    f"Content-Range {got[:80]!r}; refused",
                )
            data = _read_upto(resp, want + 1)
    except HTTPStatusError as exc:
        if exc.status in (404, 410):
            raise NotFoundError(module, version, f"{where}: {exc}") from exc
        raise FetchError(module, version, f"{where}: {exc}") from exc
    except network_errors() as exc:
        if getattr(exc, "final", False):
            raise FetchError(module, version, f"{where}: {exc}") from exc
        raise _Cut(f"{type(exc).__name__}: {exc}") from exc
    if len(data) > want:
        raise FetchError(
            module,
            version,
            f"{where}: the server sent more than the {want} bytes asked for; refused",
        )
    if len(data) < want:
        raise _Cut(f"connection closed after {len(data)} of {want} bytes")
    return data


def _read_upto(resp: object, limit: int) -> bytes:
    """At most ``limit`` bytes of a streamed body (the rest is not read)."""
    out = bytearray()
    for chunk in resp.iter_bytes():  # type: ignore[attr-defined]
        out += chunk[: limit - len(out)]
        if len(out) >= limit:
            break
    return bytes(out)


def fetch_selected(
    fetcher: Fetcher, module: str, version: str, selects: list[tuple[str, str]]
) -> list[tuple[str, TensorInfo, bytes]]:
    """Fetch every tensor that ``select`` items ``(FILE, TENSOR)`` of ``module@version``
    name (a name, or a prefix ending in ``*``) into the cache, each verified; the
    tensors. The release's ``wgt.tensors.json`` must be in the module tree (the select
    patterns add it) and is checked against the verified index (:func:`tables_for`).
    Returns ``(FILE, tensor, verified bytes)`` for each, in select order."""
    from .deps import ResolvedModule
    from .tensors import tables_for

    idx = fetcher.index(module, version)
    tree = fetcher.cache.mod_dir(module, version)
    tables = tables_for(ResolvedModule(module, version, tree), fetcher.cache.root, index=idx)
    got: list[tuple[str, TensorInfo, bytes]] = []
    for file, pattern in selects:
        shown = f"select {module} {file}#{pattern}"
        table = tables.files.get(file)
        if table is None:
            raise NotFoundError(
                module,
                version,
                f"wgt.mod: {shown}: the release has no tensor table for {file}; its weights "
                f"files: {', '.join(sorted(tables.files)) or 'none'}",
            )
        if pattern.endswith("*"):
            infos = [i for i in table.tensors if i.name.startswith(pattern[:-1])]
            if not infos:
                raise NotFoundError(
                    module,
                    version,
                    f"wgt.mod: {shown}: no tensor of {file} starts with {pattern[:-1]}",
                )
        else:
            infos = [table.get(pattern)]  # TensorNotFoundError, with a close-match hint
        got += [(file, i, fetch_tensor(fetcher, module, version, table, i)) for i in infos]
    return got
