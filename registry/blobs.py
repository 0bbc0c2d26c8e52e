"""Blob stores: file contents addressed by their sha256.

Every byte the registry serves lives in a blob store under the hex sha256 of
its content, stored once whatever module or version it belongs to. Three
stores implement :class:`BlobStore` and pass one conformance test
(``tests/registry/test_blobs.py``):

- :class:`FolderBlobStore` (the default): ``ROOT/sha256/ab/abcdef...``; a
  blob is written to a unique temporary file under ``ROOT/tmp/``, hashed while
  it streams, fsynced, and renamed into place only when its sha256 matches.
- :class:`registry.s3.S3BlobStore`: ``s3://bucket/prefix`` on any
  S3-compatible service; the object appears under its final key only after
  the spooled bytes matched (see that module).
- :class:`registry.ocistore.OciBlobStore`: ``oci://REGISTRY/REPOSITORY``, a
  repository of an OCI registry; a blob counts as stored once a tag names a
  manifest of it (see that module).

Nothing unverified is ever visible under a final name: a reader sees a blob
complete and correct, or not at all.

Spool files (``.SHA16.RANDOM.tmp``) are the bytes of uploads in progress. A
process killed mid-upload leaves its file behind: opening a store removes the
spool files not written for :data:`SPOOL_STALE_SECONDS` (:func:`sweep_spool`),
so a replica cleans its spool when it starts, and ``wgtpm registry gc`` does
too. Blobs are listed (:meth:`BlobStore.list_blobs`) and deleted
(:meth:`BlobStore.delete`) only by the garbage collector (:mod:`registry.gc`).

>>> from registry.stores import open_blob_store                # doctest: +SKIP
>>> store = open_blob_store("/srv/registry/blobs")           # doctest: +SKIP
>>> store.put("2c26b4...", [b"foo"])                        # doctest: +SKIP
"""

from __future__ import annotations

import abc
import contextlib
import hashlib
import os
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from wgtpm._fs import is_hex64

from ._errors import (
    BadRequestError,
    BlobNotFoundError,
    HashMismatchError,
    StoreError,
    TooLargeError,
)

__all__ = [
    "CHUNK",
    "SPOOL_STALE_SECONDS",
    "BlobInfo",
    "BlobStore",
    "BlobWriter",
    "FolderBlobStore",
    "sweep_spool",
]

CHUNK = 1 << 20  # bytes per read when streaming a blob out
# A spool file not written for this long belongs to a dead upload. A live one is written at
# least every BODY_IDLE_TIMEOUT (30 s) while its body arrives; then it is renamed (folder) or
# sent to S3, which for a 50 GiB file at 20 MB/s takes about 45 minutes: an hour covers it.
SPOOL_STALE_SECONDS = 3600


@dataclass(frozen=True)
class BlobInfo:
    """A stored blob: its sha256, size in bytes and when it was last written (seconds since
    the epoch: the file's mtime, the object's ``LastModified``)."""

    sha256: str
    size: int
    mtime: float


def _is_spool_name(name: str) -> bool:
    """Whether ``name`` is a spool file's (``.`` + 16 hex digits + ``.`` ... ``.tmp``)."""
    return (
        name.startswith(".")
        and name.endswith(".tmp")
        and name[17:18] == "."
        and all(c in "0123456789abcdef" for c in name[1:17])
    )


def sweep_spool(spool: Path, now: float | None = None, dry_run: bool = False) -> list[BlobInfo]:
    """Remove the spool files in ``spool`` not written for :data:`SPOOL_STALE_SECONDS` (the
    uploads of a killed process); returns them (sha256 holds the file's name). Other files,
    and spool files in use by any process sharing the folder, stay."""
    cutoff = (time.time() if now is None else now) - SPOOL_STALE_SECONDS
    out: list[BlobInfo] = []
    try:
        names = [e for e in os.scandir(spool) if _is_spool_name(e.name)]
    except FileNotFoundError:
        return out
    for e in names:
        try:
            st = e.stat(follow_symlinks=False)
            if st.st_mtime >= cutoff:
                continue
            if not dry_run:
                os.unlink(e.path)
        except FileNotFoundError:
            continue  # its upload finished, or another process swept it first
        out.append(BlobInfo(e.name, st.st_size, st.st_mtime))
    return out


def _check_sha(sha256: str) -> str:
    if not is_hex64(sha256):
        raise BadRequestError(f"not a sha256 (64 lower-case hex digits): {sha256[:80]!r}")
    return sha256


class BlobWriter(abc.ABC):
    """One blob being written: :meth:`write` chunks, then :meth:`commit` or :meth:`abort`.

    The bytes are spooled to a unique local temporary file and hashed as they
    arrive; :meth:`commit` publishes them under the sha256 only if it matches.
    Used as a context manager, a writer not committed is aborted.
    """

    def __init__(self, sha256: str, max_size: int | None, spool_dir: Path | None) -> None:
        self.sha256 = _check_sha(sha256)
        self.max_size = max_size
        self.size = 0
        self._hash = hashlib.sha256()
        fd, name = tempfile.mkstemp(prefix=f".{sha256[:16]}.", suffix=".tmp", dir=spool_dir)
        self._path = Path(name)
        self._file: BinaryIO | None = os.fdopen(fd, "wb")

    def write(self, chunk: bytes) -> None:
        """Append ``chunk``; :class:`TooLargeError` once more than ``max_size`` bytes came."""
        if self._file is None:
            raise ValueError("blob writer is closed")
        self.size += len(chunk)
        if self.max_size is not None and self.size > self.max_size:
            self.abort()
            raise TooLargeError(f"blob {self.sha256} is larger than {self.max_size} bytes")
        self._hash.update(chunk)
        self._file.write(chunk)

    def commit(self) -> int:
        """Verify the sha256 and publish the blob; returns its size.

        Raises :class:`HashMismatchError` (and stores nothing) when the bytes
        do not hash to the promised sha256.
        """
        if self._file is None:
            raise ValueError("blob writer is closed")
        got = self._hash.hexdigest()
        try:
            if got != self.sha256:
                raise HashMismatchError(self.sha256, got)
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None
            self._publish(self._path)
        finally:
            self.abort()
        return self.size

    def abort(self) -> None:
        """Throw the spooled bytes away (safe to call twice)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        with contextlib.suppress(FileNotFoundError):
            self._path.unlink()

    @abc.abstractmethod
    def _publish(self, spooled: Path) -> None:
        """Make the verified file ``spooled`` visible under the final name."""

    def __enter__(self) -> BlobWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.abort()


class BlobStore(abc.ABC):
    """Content-addressed blobs; every method takes a hex sha256."""

    url: str

    @abc.abstractmethod
    def size(self, sha256: str) -> int | None:
        """The blob's size in bytes, or ``None`` when there is no such blob."""

    def has(self, sha256: str) -> bool:
        """Whether the blob is stored."""
        return self.size(sha256) is not None

    @abc.abstractmethod
    def get(self, sha256: str, offset: int = 0, length: int | None = None) -> Iterator[bytes]:
        """The blob's bytes from ``offset`` (``length`` of them, or to the end).

        Raises :class:`BlobNotFoundError` before returning when it is missing,
        so a caller can still answer 404 before streaming.
        """

    @abc.abstractmethod
    def writer(self, sha256: str, max_size: int | None = None) -> BlobWriter:
        """A :class:`BlobWriter` that will store a blob promised to hash to ``sha256``."""

    def put(self, sha256: str, chunks: Iterable[bytes], max_size: int | None = None) -> int:
        """Store ``chunks`` as one blob after checking its sha256; returns its size."""
        with self.writer(sha256, max_size) as w:
            for chunk in chunks:
                w.write(chunk)
            return w.commit()

    def read(self, sha256: str, max_size: int) -> bytes:
        """The whole blob, refused with :class:`TooLargeError` above ``max_size`` bytes."""
        n = self.size(sha256)
        if n is None:
            raise BlobNotFoundError(sha256)
        if n > max_size:
            raise TooLargeError(f"blob {sha256} has {n} bytes, more than {max_size}")
        return b"".join(self.get(sha256))

    @abc.abstractmethod
    def check(self) -> None:
        """Raise :class:`StoreError` unless the store can be used (for ``/healthz``)."""

    @abc.abstractmethod
    def list_blobs(self) -> Iterator[BlobInfo]:
        """Every stored blob, in no particular order (for :mod:`registry.gc`)."""

    @abc.abstractmethod
    def stat(self, sha256: str) -> BlobInfo | None:
        """The blob's :class:`BlobInfo`, or ``None`` when there is no such blob."""

    @abc.abstractmethod
    def delete(self, sha256: str) -> None:
        """Remove the blob (a no-op when it is not there). Only :mod:`registry.gc` calls
        this, after checking that nothing references it."""

    def spool_dir(self) -> Path | None:
        """The folder of this store's spool files (``None``: the system's temporary folder,
        which it does not sweep)."""
        return None

    def close(self) -> None:  # noqa: B027 - a store with nothing to release keeps this
        """Release connections and files."""


class _FolderWriter(BlobWriter):
    def __init__(self, store: FolderBlobStore, sha256: str, max_size: int | None) -> None:
        super().__init__(sha256, max_size, store.root / "tmp")
        self._store = store

    def _publish(self, spooled: Path) -> None:
        final = self._store.path(self.sha256)
        final.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(spooled, 0o444)
        os.replace(spooled, final)  # same bytes by definition when it already exists
        with contextlib.suppress(OSError):  # make the rename durable where directories sync
            fd = os.open(final.parent, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


class FolderBlobStore(BlobStore):
    """Blobs in a local folder: ``ROOT/sha256/ab/abcdef...``, temporaries in ``ROOT/tmp``."""

    def __init__(self, root: Path, *, sweep: bool = True) -> None:
        self.root = Path(root)
        (self.root / "tmp").mkdir(parents=True, exist_ok=True)
        (self.root / "sha256").mkdir(parents=True, exist_ok=True)
        self.url = str(self.root)
        if sweep:  # a replica starting: the spool files of its killed predecessors go
            sweep_spool(self.root / "tmp")

    def path(self, sha256: str) -> Path:
        """Where the blob lives (whether or not it exists)."""
        _check_sha(sha256)
        return self.root / "sha256" / sha256[:2] / sha256

    def size(self, sha256: str) -> int | None:
        try:
            return self.path(sha256).stat().st_size
        except FileNotFoundError:
            return None

    def get(self, sha256: str, offset: int = 0, length: int | None = None) -> Iterator[bytes]:
        try:
            f = open(self.path(sha256), "rb")
        except FileNotFoundError:
            raise BlobNotFoundError(sha256) from None
        f.seek(offset)
        return _read_file(f, length)

    def writer(self, sha256: str, max_size: int | None = None) -> BlobWriter:
        return _FolderWriter(self, sha256, max_size)

    def list_blobs(self) -> Iterator[BlobInfo]:
        for sub in sorted(os.scandir(self.root / "sha256"), key=lambda e: e.name):
            if not sub.is_dir(follow_symlinks=False):
                continue
            for e in os.scandir(sub.path):
                if is_hex64(e.name) and e.name[:2] == sub.name:
                    try:
                        st = e.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    yield BlobInfo(e.name, st.st_size, st.st_mtime)

    def stat(self, sha256: str) -> BlobInfo | None:
        try:
            st = self.path(sha256).stat()
        except FileNotFoundError:
            return None
        return BlobInfo(sha256, st.st_size, st.st_mtime)

    def delete(self, sha256: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path(sha256).unlink()

    def spool_dir(self) -> Path | None:
        return self.root / "tmp"

    def check(self) -> None:
        for d in (self.root / "sha256", self.root / "tmp"):
            if not os.access(d, os.W_OK | os.X_OK):
                raise StoreError(f"blob folder {d} is missing or not writable")


def _read_file(f: BinaryIO, length: int | None) -> Iterator[bytes]:
    with f:
        left = length
        while left is None or left > 0:
            chunk = f.read(CHUNK if left is None else min(CHUNK, left))
            if not chunk:
                return
            if left is not None:
                left -= len(chunk)
            yield chunk
