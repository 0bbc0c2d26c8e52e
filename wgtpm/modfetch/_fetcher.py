"""Fetching and orchestration: :class:`Fetcher` gets a module version's wgt.mod and
index, verifies them, and brings each file of it into the cache (the package's
docstring says in what order, and what is checked)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .. import _interrupt, dirhash
from .. import index as _index
from .._errors import CacheError, ChecksumMismatchError, NotFoundError, VerifyError
from .._report import SILENT, Reporter, human_size
from ..cache import Cache
from ..sources import FileRequest, RevInfo, Source
from . import _ranges
from ._early import Early
from ._jobs import run_all
from ._options import FetchOptions, SumChecker, TrustHook, matches
from ._partial import Partial
from ._ranged import fill
from ._transfer import disk_error, transfer
from ._unit import Unit, VersionFile

if TYPE_CHECKING:
    from ..httpclient import HttpClient

__all__ = ["Fetcher"]

MOD_SUFFIX = "/wgt.mod"


class Fetcher:
    """Verified access to module versions from one source (usually a chain of them)."""

    def __init__(
        self,
        cache: Cache,
        source: Source,
        sums: SumChecker,
        *,
        http: Callable[[], HttpClient] | None = None,
        opts: FetchOptions | None = None,
        progress: Reporter | None = None,
        trust: TrustHook | None = None,
    ) -> None:
        self.cache = cache
        self.source = source
        self.sums = sums
        self.trust = trust
        self.opts = opts or FetchOptions()
        self.progress: Reporter = progress or SILENT
        self._http_factory = http
        self._http: HttpClient | None = None
        self._http_lock = threading.Lock()
        self._indexes: dict[tuple[str, str], _index.ReleaseIndex] = {}  # verified ones
        self._indexes_lock = threading.Lock()

    def http(self) -> HttpClient:
        """The one HTTP client of this fetcher, made on first use by whichever download
        thread comes first (the others wait for it rather than each making their own)."""
        with self._http_lock:
            if self._http is None:
                if self._http_factory is not None:
                    self._http = self._http_factory()
                else:
                    from ..httpclient import HttpClient

                    self._http = HttpClient()
            return self._http

    # ---- metadata ---------------------------------------------------------

    def versions(self, path: str) -> list[str]:
        key = "list/" + hashlib.sha256(path.encode()).hexdigest()
        cached = self.cache.read_ttl(key, self.opts.list_ttl)
        if isinstance(cached, list):
            return [str(v) for v in cached]
        vs = self.source.versions(path)
        with contextlib.suppress(CacheError):
            self.cache.write_ttl(key, vs)
        return vs

    def info(self, path: str, query: str) -> RevInfo:
        return self.source.info(path, query)

    def _check(
        self, path: str, version: str, h1: str, *, record: bool = True, cached: bool
    ) -> None:
        """``sums.check``; a mismatch of bytes read from the cache says they were cached."""
        try:
            self.sums.check(path, version, h1, record)
        except ChecksumMismatchError as exc:
            if not cached:
                raise
            raise ChecksumMismatchError(
                exc.path, exc.version or version, exc.what, exc.want, exc.got, got_from="cached"
            ) from exc

    def mod(self, path: str, version: str, record: bool = True) -> bytes:
        """The verified wgt.mod of ``path@version``."""
        data = self.cache.read_meta(path, version, "mod")
        fresh = data is None
        if data is None:
            data = self.source.mod(path, version)
        h1 = dirhash.hash1_bytes({"wgt.mod": data})
        self._check(path, version + MOD_SUFFIX, h1, record=record, cached=not fresh)
        if fresh:
            with self.cache.using():
                self.cache.write_meta(path, version, "mod", data)
        return data

    def index(self, path: str, version: str) -> _index.ReleaseIndex:
        """The verified index of ``path@version`` (kept once verified: a command asks for
        it again, and a large one costs much to parse)."""
        with self._indexes_lock:
            known = self._indexes.get((path, version))
        if known is not None:
            return known
        data = self.cache.read_meta(path, version, "index.json")
        fresh = data is None
        if data is None:
            data = self.source.index(path, version)
        idx = _index.parse(data, path, version)
        sig = self._signature(path, version, idx) if self.trust is not None else None
        self._check(path, version, idx.h1(), cached=not fresh)
        mod_entry = idx.entry("wgt.mod")
        mod = self.mod(path, version)
        if mod_entry is not None and hashlib.sha256(mod).hexdigest() != mod_entry.sha256:
            raise VerifyError(
                path,
                version,
                "the wgt.mod served for this version is not the one its index lists; the source is inconsistent",
            )
        if sig is not None:  # fetched now: kept for 'wgtpm verify' (and the next get)
            with self.cache.using():
                self.cache.write_meta(path, version, "sig", sig)
        if fresh:
            with self.cache.using():
                self.cache.write_meta(path, version, "index.json", data)
        with self._indexes_lock:
            self._indexes[(path, version)] = idx
        return idx

    def _signature(self, path: str, version: str, idx: _index.ReleaseIndex) -> bytes | None:
        """Run the trust hook on ``idx`` with the version's signature (the cached one, else
        the source's; ``None`` when there is none) before wgt.sum hears of it; returns the
        signature to keep beside the cached index when it was fetched now (``None`` when
        it was cached already, or none is needed). The hook raises to refuse."""
        assert self.trust is not None
        if not self.trust.covers(path):
            return None
        cached = self.cache.read_meta(path, version, "sig")
        sig = cached
        if sig is None:
            read = getattr(self.source, "signature", None)
            try:
                sig = read(path, version) if read is not None else None
            except NotFoundError:
                sig = None
        self.trust.check(path, version, {e.path: e.sha256 for e in idx.files}, sig)
        return sig if cached is None else None

    # ---- files ------------------------------------------------------------

    def missing(self, path: str, version: str, patterns: list[str] | None = None) -> bool:
        """Whether ``download`` has anything to do.

        Cheap for a cached version: the cached index is checked against wgt.sum
        (a changed or missing wgt.sum line is caught here too) and the tree is stat'ed.
        """
        with self._indexes_lock:
            idx = self._indexes.get((path, version))
        if idx is None:
            raw = self.cache.read_meta(path, version, "index.json")
            if raw is None:
                return True
            idx = _index.parse(raw, path, version)
            self._check(path, version, idx.h1(), cached=True)
        tree = self.cache.mod_dir(path, version)
        return any(not _placed(tree, e) for e in idx.files if matches(patterns, e.path))

    def download(self, path: str, version: str, patterns: list[str] | None = None) -> Path:
        """Make the module tree of ``path@version`` hold every selected file; returns its dir.

        Holds the cache lock shared meanwhile, so ``cache clean``/``gc`` wait.
        """
        with self.cache.using():
            return self._download(path, version, patterns)

    def _download(self, path: str, version: str, patterns: list[str] | None) -> Path:
        unit = Unit(f"{path}@{version}", self.progress)
        tree = self.cache.mod_dir(path, version)
        early = self._early(path, version, patterns, tree, unit)
        total, ok = 0, False
        try:
            idx = self.index(path, version)
            self._check_provenance(path, version, idx, tree)
            missing = [e for e in idx.files if matches(patterns, e.path) and not _placed(tree, e)]
            if not missing:
                ok = True
                tree.mkdir(parents=True, exist_ok=True)
                return tree
            total = sum(e.size for e in missing)
            unit.plan(missing, self.opts)
            unit.start(total)
            run_all(
                (
                    functools.partial(self._fetch_file, VersionFile(path, version, e), unit)
                    for e in missing
                    if e not in early
                ),
                max(1, min(self.opts.jobs, len(missing))),
            )
            early.wait()
            for e in missing:
                if e in early:
                    early.raise_for(e)
                    self._fetch_file(VersionFile(path, version, e), unit, counted=True)
            ok = True
        except KeyboardInterrupt:
            if total:
                done = min(total, unit.done)
                self.progress.notice(
                    f"interrupted: {unit.label}: {human_size(done)} of {human_size(total)} "
                    "kept for resuming"
                )
            raise
        finally:
            if not ok:
                early.stop()
            unit.end(ok)
        tree.mkdir(parents=True, exist_ok=True)
        return tree

    def _early(
        self, path: str, version: str, patterns: list[str] | None, tree: Path, unit: Unit
    ) -> Early:
        """Start downloading the files the source knows of before the index is made
        (:meth:`Source.known_files`), when the index is still to be made.

        Each is stored as a blob only once its bytes match the size and sha256 given,
        so nothing unverified is kept; it enters the module tree only once the index,
        checked against wgt.sum, lists it exactly so.
        """
        if self.cache.read_meta(path, version, "index.json") is not None:
            return Early.NONE
        todo = [
            e
            for e in self.source.known_files(path, version)
            if matches(patterns, e.path)
            and not self.cache.has_blob(e.sha256)
            and not _placed(tree, e)
        ]
        if not todo:
            return Early.NONE
        unit.plan(todo, self.opts)

        def fetch_blob(e: _index.IndexEntry) -> None:
            self._fetch_blob(VersionFile(path, version, e), unit)

        return Early(fetch_blob, todo, unit, self.opts.jobs)

    def _check_provenance(
        self, path: str, version: str, idx: _index.ReleaseIndex, tree: Path
    ) -> None:
        """Refuse a release whose provenance file (covered by h1) contradicts its index.

        It is fetched before any other file, whatever ``select`` says, and checked on
        every download, so a refused version never becomes a complete module tree.
        """
        e = idx.entry(_index.PROVENANCE_FILE)
        if e is not None:
            from ..publish._provenance import check_provenance

            if not (tree / e.path).is_file():
                # a unit of its own, never started: its bytes are not the version's progress
                self._fetch_file(VersionFile(path, version, e), Unit(e.path, self.progress))
            check_provenance(idx, (tree / e.path).read_bytes())

    def _fetch_file(self, vf: VersionFile, unit: Unit, counted: bool = False) -> None:
        self._fetch_blob(vf, unit, counted)
        self.cache.link(vf.path, vf.version, vf.entry.path, vf.entry.sha256)

    def _fetch_blob(self, vf: VersionFile, unit: Unit, counted: bool = False) -> None:
        """Make sure the blob of ``vf`` is in the cache, downloading it if not; ``counted``:
        its bytes were reported already (by an early download)."""
        _interrupt.check()
        e = vf.entry
        if not self.cache.has_blob(e.sha256):
            req = self.source.file(vf.path, vf.version, e.path)
            if req.body is not None and _is(req.body, e):
                # bytes in hand and right: stored under a name of their own, no lock (a
                # process storing the same bytes at once renames the same file into place)
                try:
                    self.cache.put_bytes(req.body, e.sha256)
                except OSError as exc:
                    raise disk_error(exc, self.cache.blob_path(e.sha256)) from exc
                unit.advance(e.size)
                return
            with self.cache.file_lock(e.sha256):
                if not self.cache.has_blob(e.sha256):
                    self._download_blob(vf, unit, req)
                    return
        if not counted:
            unit.advance(e.size)

    def _download_blob(self, vf: VersionFile, unit: Unit, req: FileRequest) -> None:
        e = vf.entry
        part = Partial(self.cache.partial_path(e.sha256), e.size)
        resumed = fill(self, vf, unit, req, part, unit.ranges)
        if resumed and not part.matches(e):
            # The bytes kept from before (a partial file left by another run, or the
            # part before a cut) may be the junk, not the source: once more from byte 0.
            part.discard()
            _ranges.drop_journals(part.path)
            part = Partial(self.cache.partial_path(e.sha256), e.size)
            transfer(self, vf, unit, req, part)
        if not part.matches(e):
            have, got = part.have, part.h.hexdigest()
            part.discard()
            _ranges.drop_journals(part.path)
            raise VerifyError(
                vf.path,
                vf.version,
                f"{e.path}: the source served {have} bytes with sha256 {got} ({_where(req)}), "
                f"but the index lists {e.size} bytes with sha256 {e.sha256}; it is serving "
                "corrupt or tampered bytes (nothing was kept)",
            )
        self.cache.commit_blob(part.path, e.sha256)


def _placed(tree: Path, e: _index.IndexEntry) -> bool:
    """Whether the file of ``e`` is in module tree ``tree`` (a string, not a Path, is made
    for each: a release may list 100,000 files)."""
    return os.path.isfile(f"{tree}/{e.path}")


def _is(data: bytes, e: _index.IndexEntry) -> bool:
    """Whether ``data`` is the file ``e`` lists (its size and sha256)."""
    return len(data) == e.size and hashlib.sha256(data).hexdigest() == e.sha256


def _where(req: FileRequest) -> str:
    """Where a file's bytes came from, as an error may show it (no query, no user)."""
    from ..httpclient import shown_url

    return f"from {shown_url(req.url)}"
