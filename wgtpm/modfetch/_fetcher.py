"""Fetching and orchestration: :class:`Fetcher` gets a module version's wgt.mod and
index, verifies them, and brings each file of it into the cache (the package's
docstring says in what order, and what is checked)."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .. import _interrupt
from .. import index as _index
from .._errors import VerifyError
from .._report import SILENT, Reporter, human_size
from ..cache import Cache, _disk_error
from ..sources import FileRequest, RevInfo, Source
from . import _ranges
from ._early import Early
from ._jobs import run_files
from ._metadata import Metadata
from ._options import FetchOptions, SumChecker, TrustHook, matches
from ._partial import Partial
from ._ranged import fill
from ._transfer import Fresh, transfer
from ._unit import Unit, VersionFile

if TYPE_CHECKING:
    from ..httpclient import HttpClient

__all__ = ["Fetcher"]


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
        self._meta = Metadata(cache, source, sums, trust, self.opts.list_ttl)

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

    # ---- metadata (_metadata.Metadata's) --------------------------------------

    def versions(self, path: str) -> list[str]:
        return self._meta.versions(path)

    def info(self, path: str, query: str) -> RevInfo:
        return self.source.info(path, query)

    def mod(self, path: str, version: str, record: bool = True) -> bytes:
        """The verified wgt.mod of ``path@version``."""
        return self._meta.mod(path, version, record)

    def index(self, path: str, version: str) -> _index.ReleaseIndex:
        """The verified index of ``path@version``."""
        return self._meta.index(path, version)

    # ---- files ------------------------------------------------------------

    def missing(self, path: str, version: str, patterns: list[str] | None = None) -> bool:
        """Whether ``download`` has anything to do.

        Cheap for a cached version: the cached index is checked against wgt.sum
        (a changed or missing wgt.sum line is caught here too) and the tree is stat'ed.
        """
        idx = self._meta.known_index(path, version)
        if idx is None:
            return True
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
            run_files(
                [e for e in missing if e not in early],
                lambda e: self._fetch_file(VersionFile(path, version, e), unit),
                self.opts.jobs,
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
                    raise _disk_error(exc, self.cache.blob_path(e.sha256)) from exc
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
        again = getattr(self.source, "refresh", None)  # optional: see sources/_base.py
        fresh = Fresh(
            req, None if again is None else lambda stale: again(vf.path, vf.version, e.path, stale)
        )
        resumed = fill(self, vf, unit, fresh, part, unit.ranges)
        if resumed and not part.matches(e):
            # The bytes kept from before (a partial file left by another run, or the
            # part before a cut) may be the junk, not the source: once more from byte 0.
            part.discard()
            _ranges.drop_journals(part.path)
            part = Partial(self.cache.partial_path(e.sha256), e.size)
            transfer(self, vf, unit, fresh, part)
        if not part.matches(e):
            have, got = part.have, part.h.hexdigest()
            part.discard()
            _ranges.drop_journals(part.path)
            raise VerifyError(
                vf.path,
                vf.version,
                f"{e.path}: the source served {have} bytes with sha256 {got} ({_where(fresh.req)}), "
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
