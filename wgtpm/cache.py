"""The module cache: verified blobs, read-only module trees, metadata with a TTL.

Layout under ``$WGTPM_CACHE`` (default: the platform's user cache dir)::

    blobs/sha256/3f/3f9a...           each distinct content once, read-only; name = its sha256
    mod/github.com/acme/xor@v0.1.0/   module trees: read-only hard links to blobs
    download/github.com/acme/xor/@v/  the proxy protocol, so file://$CACHE/download is a WGTPROXY
        list                          versions present here, one per line
        v0.1.0.mod .index.json        verified metadata (no .info is written here yet)
        v0.1.0 -> ../../../../mod/github.com/acme/xor@v0.1.0
    meta/github.com/acme/xor/list.json  what a source said, with the time it said it (TTL)
    tensors/3f9a....json              tensor tables computed from verified files, by the
                                      file's sha256 (:mod:`wgtpm.tensors._module`)
    tmp/                              partial downloads (<sha256>.partial), the journals of
                                      their ranges (<sha256>.partial.<start>) and their locks
    sumdb/sum.example.com/            one folder per checksum database (WGTSUMDB), by name
        latest                        the latest signed tree head seen (kept by clean and gc)
        latest.lock                   taken to replace latest (compare-and-swap)
        lookup/github.com/acme/xor@v0.1.0   verified lookup answers (record + tree head)
        tile/8/0/000 ... tile/8/data/000    verified hash and record tiles
    .lock                             shared by every wgtpm process; exclusive for clean and gc

Module paths and versions are escaped (capitals as ``!`` + lower case).

``clean`` leaves ``sumdb/`` alone: the latest tree head is what a log that
rewrites its history is caught against (Go keeps it outside the module cache
for the same reason), and what is cached there is small and verified.

Guarantees:

- Nothing unverified is ever under a final name: a blob is written as
  ``tmp/<sha256>.partial``, hashed while it streams, and renamed into
  ``blobs/`` only when size and sha256 match. Trees link only blobs.
- Any number of processes share one cache: a blob is downloaded under its
  own lock (the others wait, then find it done); metadata files are written
  to a unique temporary name and renamed into place.
- ``clean`` and ``gc`` take the cache-wide lock exclusively, so they wait for
  running wgtpm processes (each holds it shared) and never pull a file from
  under one.

This module only touches the disk; downloading is :mod:`wgtpm.modfetch`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _json
from ._cachedir import default_root
from ._errors import CacheError
from ._fs import FileLock, write_atomic
from .module import escape_path, escape_version

if TYPE_CHECKING:  # the maintenance code loads only for the commands that use it
    from ._cachemaint import CacheProblem

__all__ = ["Cache", "default_root"]

BLOB_MODE = 0o444


class Cache:
    """The on-disk cache. Cheap to construct; creates directories lazily."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_root()
        self._blobs = f"{self.root}/blobs/sha256"
        # Directories this object made or found (a get of 100,000 files would ask for
        # each file's few again), and the versions whose download/ link is in place.
        self._dirs: set[str] = set()
        self._exposed: set[tuple[str, str]] = set()

    def _made(self, d: Path) -> None:
        """Make directory ``d`` (and its parents) unless this object did before."""
        key = str(d)
        if key not in self._dirs:
            d.mkdir(parents=True, exist_ok=True)
            self._dirs.add(key)

    def forget_dirs(self) -> None:
        """What this object knows of directories is old: clean, gc or repair removed some."""
        self._dirs.clear()
        self._exposed.clear()

    # ---- locks ----------------------------------------------------------

    @contextlib.contextmanager
    def using(self) -> Iterator[None]:
        """Hold the cache-wide lock shared while this process reads and writes the cache."""
        lk = FileLock(self.root / ".lock")
        try:
            lk.acquire(exclusive=False)
        except OSError as exc:
            raise CacheError(f"cannot use the module cache at {self.root}: {exc}") from exc
        try:
            yield
        finally:
            lk.release()

    @contextlib.contextmanager
    def exclusive(self, wait: bool = True) -> Iterator[None]:
        """Hold the cache-wide lock alone (clean, gc): waits for other wgtpm processes."""
        lk = FileLock(self.root / ".lock")
        if not lk.acquire(exclusive=True, blocking=wait):
            raise CacheError(
                "other wgtpm processes are using the cache; try again when they finish"
            )
        try:
            yield
        finally:
            lk.release()

    def file_lock(self, name: str) -> FileLock:
        """A cross-process lock named ``name`` under ``tmp/`` (``with cache.file_lock(n):``)."""
        return FileLock(self.root / "tmp" / f"{name}.lock")

    # ---- checksum databases ---------------------------------------------

    @property
    def sumdb_root(self) -> Path:
        """``sumdb/``: the tree heads, lookups and tiles of checksum databases (:mod:`wgtpm.sumdb.remote`)."""
        return self.root / "sumdb"

    # ---- blobs ----------------------------------------------------------

    def blob_path(self, sha256: str) -> Path:
        return Path(f"{self._blobs}/{sha256[:2]}/{sha256}")

    def has_blob(self, sha256: str) -> bool:
        return os.path.isfile(f"{self._blobs}/{sha256[:2]}/{sha256}")

    def partial_path(self, sha256: str) -> Path:
        p = self.root / "tmp" / f"{sha256}.partial"
        self._made(p.parent)
        return p

    def commit_blob(self, tmp: Path, sha256: str) -> Path:
        """Move a verified temporary file into ``blobs/`` (read-only)."""
        dst = self.blob_path(sha256)
        self._made(dst.parent)
        os.chmod(tmp, BLOB_MODE)
        try:
            os.replace(tmp, dst)
        except FileNotFoundError:  # its folder went (another Cache of this root cleaned)
            if not os.path.exists(tmp):
                raise
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, dst)
        return dst

    def put_bytes(self, data: bytes, sha256: str | None = None) -> str:
        """Store in-memory content as a blob, on disk before it has its name (fsync), as a
        download is; returns its sha256. ``sha256`` is the hash the caller checked ``data``
        against (computed here when not given)."""
        digest = sha256 or hashlib.sha256(data).hexdigest()
        if not self.has_blob(digest):
            d = self.root / "tmp"
            self._made(d)
            import tempfile

            fd, name = tempfile.mkstemp(prefix=f"{digest}.", suffix=".put", dir=d)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                self.commit_blob(Path(name), digest)
            except BaseException:
                Path(name).unlink(missing_ok=True)
                raise
        return digest

    # ---- module trees -----------------------------------------------------

    def mod_dir(self, path: str, version: str) -> Path:
        return self.root / "mod" / f"{escape_path(path)}@{escape_version(version)}"

    def link(self, path: str, version: str, name: str, sha256: str) -> Path:
        """Place blob ``sha256`` at ``name`` in the tree of ``path@version`` (atomically).

        A hard link is made straight under its name (a link is there whole or not at
        all; one that is there already, made by another process, is the same blob, as a
        version's files never change); a copy, where the blob cannot be linked (another
        file system), is made under a temporary name and renamed into place.
        """
        dst = self.mod_dir(path, version) / name
        src = self.blob_path(sha256)
        try:
            self._made(dst.parent)
            try:
                os.link(src, dst)
            except FileExistsError:
                pass
            except OSError as exc:
                if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                    raise
                self._copy_into(src, dst)
        except OSError as exc:
            raise _disk_error(exc, dst) from exc
        self._expose(path, version)
        return dst

    @staticmethod
    def _copy_into(src: Path, dst: Path) -> None:
        if dst.is_file():
            return
        with open(src, "rb") as f:
            write_atomic(dst, iter(lambda: f.read(1 << 20), b""), mode=BLOB_MODE)

    def _expose(self, path: str, version: str) -> None:
        """Make ``download/$mod/@v/$version`` point at the tree (the proxy-protocol view)."""
        if (path, version) in self._exposed:
            return
        self._exposed.add((path, version))
        link = self.meta_dir(path) / escape_version(version)
        if link.is_symlink() or link.exists():
            return
        link.parent.mkdir(parents=True, exist_ok=True)
        target = os.path.relpath(self.mod_dir(path, version), link.parent)
        with contextlib.suppress(FileExistsError, OSError):
            os.symlink(target, link, target_is_directory=True)

    # ---- metadata ---------------------------------------------------------

    def meta_dir(self, path: str) -> Path:
        return self.root / "download" / escape_path(path) / "@v"

    def meta_path(self, path: str, version: str, ext: str) -> Path:
        """``ext`` is ``info``, ``mod`` or ``index.json``."""
        return self.meta_dir(path) / f"{escape_version(version)}.{ext}"

    def read_meta(self, path: str, version: str, ext: str) -> bytes | None:
        try:
            return self.meta_path(path, version, ext).read_bytes()
        except FileNotFoundError:
            return None

    def write_meta(self, path: str, version: str, ext: str, data: bytes) -> None:
        """Store verified metadata; the ``.index.json`` also adds the version to ``list``."""
        p = self.meta_path(path, version, ext)
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(p, data)
            if ext == "index.json":
                self._add_to_list(path, version)
        except OSError as exc:
            raise _disk_error(exc, p) from exc

    def _add_to_list(self, path: str, version: str) -> None:
        lst = self.meta_dir(path) / "list"
        with self.file_lock("list-" + hashlib.sha256(path.encode()).hexdigest()[:16]):
            have = lst.read_text().split() if lst.exists() else []
            if version not in have:
                write_atomic(lst, ("\n".join([*have, version]) + "\n").encode())

    def read_ttl(self, key: str, ttl: float) -> Any | None:
        """A JSON value stored by :meth:`write_ttl` no more than ``ttl`` seconds ago."""
        p = self.root / "meta" / f"{key}.json"
        try:
            doc = _json.loads(p.read_bytes())
        except (FileNotFoundError, ValueError):
            return None
        if not isinstance(doc, dict) or time.time() - float(doc.get("at", 0)) > ttl:
            return None
        return doc.get("value")

    def write_ttl(self, key: str, value: Any) -> None:
        p = self.root / "meta" / f"{key}.json"
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(p, json.dumps({"at": time.time(), "value": value}).encode())
        except OSError as exc:
            raise _disk_error(exc, p) from exc

    def get_etag(self, key: str) -> tuple[str, bytes] | None:
        """The (etag, body) that :meth:`put_etag` stored under ``key`` (a source's listing)."""
        p = self.root / "meta" / "etag" / (hashlib.sha256(key.encode()).hexdigest() + ".json")
        try:
            doc = _json.loads(p.read_bytes())
            return str(doc["etag"]), bytes.fromhex(doc["body"])
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            return None

    def put_etag(self, key: str, etag: str, body: bytes) -> None:
        p = self.root / "meta" / "etag" / (hashlib.sha256(key.encode()).hexdigest() + ".json")
        with contextlib.suppress(OSError):  # losing an entry costs one full listing, no more
            p.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(p, json.dumps({"key": key, "etag": etag, "body": body.hex()}).encode())

    # ---- maintenance (:mod:`wgtpm._cachemaint`) ---------------------------

    def verify(self) -> list[CacheProblem]:
        """Re-hash every blob and check every tree file against its index."""
        from . import _cachemaint

        return _cachemaint.verify(self)

    def repair(self, problems: list[CacheProblem]) -> list[Path]:
        """Remove the corrupted files of ``problems`` and every link to them; returns what went."""
        from . import _cachemaint

        return _cachemaint.repair(self, problems)

    def clean(self) -> None:
        """Remove everything (waits for other wgtpm processes to finish first)."""
        from . import _cachemaint

        _cachemaint.clean(self)

    def gc(self) -> tuple[int, int]:
        """Remove blobs no module tree uses and stale partial files; returns (files, bytes) freed."""
        from . import _cachemaint

        return _cachemaint.gc(self)


def _disk_error(exc: OSError, where: Path) -> CacheError:
    if exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        return CacheError(
            f"disk full while writing {where}: free some space (wgtpm cache gc) and run the command again"
        )
    if exc.errno in (errno.EACCES, errno.EROFS, errno.EPERM):
        return CacheError(
            f"cannot write {where}: {exc.strerror}; set WGTPM_CACHE to a writable directory"
        )
    return CacheError(f"cannot write {where}: {exc}")
